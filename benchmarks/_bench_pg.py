"""The PostgreSQL side of ``bench_sessions.py``: one schema per store on one server.

Without ``--dsn`` the distribution's PostgreSQL (with ``pg_trgm``) is started for the run
from ``tests/pgserver.py``; the test helper turns durability off, so it is turned back on
here (``fsync``, ``full_page_writes``, ``synchronous_commit`` at their defaults): ingest
figures then include a real WAL flush per commit, as on a production server. The stores
connect as an ordinary role that owns its schemas (the server's own user is a superuser,
which row-level security never applies to), so the figures include the policies.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pgserver  # the test suite's server helper

__all__ = ["PostgresBackend"]


def _restart_durable(dsn: str) -> None:
    """Restart the test server with its durability settings at their defaults."""
    root = Path(str(conninfo_to_dict(dsn)["host"]))
    pg_ctl = pgserver.find_system_bindir() / "pg_ctl"
    options = f"-h '' -k {root}"
    args = [str(pg_ctl), "-w", "-D", str(root / "data"), "-l", str(root / "server.log")]
    args += ["-m", "fast", "-o", options, "restart"]  # -l: else the server holds our pipes
    pgserver._run_as_service_user(args)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in ("fsync", "full_page_writes", "synchronous_commit"):
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
            if row is None or row[0] != "on":
                raise RuntimeError(f"{name} is {row!r} after the restart, expected on")


LEAKPROOF = (
    "pg_catalog.ts_match_vq(tsvector, tsquery)",
    "pg_catalog.texticlike(text, text)",
    "pg_catalog.textregexeq(text, text)",
)
"""The functions behind ``@@``, ``ILIKE`` and ``~`` that ``leakproof=True`` marks."""


class PostgresBackend:
    """Stores are schemas ``<label>`` in one database; sizes are relation sizes."""

    name = "postgres"

    def __init__(
        self, workdir: Path, dsn: str = "", *, keep: bool = False, leakproof: bool = False
    ) -> None:
        self.workdir = workdir
        self.keep = keep
        self.leakproof = leakproof
        self.server: pgserver.PgServer | None = None
        if not dsn:
            self.server = pgserver.start_system_server()
            dsn = self.server.uri
            _restart_durable(dsn)
            with psycopg.connect(dsn, autocommit=True) as conn:
                for function in LEAKPROOF if leakproof else ():
                    conn.execute(f"ALTER FUNCTION {function} LEAKPROOF")
                conn.execute("CREATE ROLE memoryport LOGIN")
                conn.execute("GRANT CREATE ON DATABASE postgres TO memoryport")
            dsn = make_conninfo(dsn, user="memoryport")
        self.dsn = dsn

    def _sql(self, query: sql.Composable, params: tuple[Any, ...] = ()) -> Any:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(query, params).fetchone()
        return None if row is None else row[0]

    def open(self, label: str) -> SessionStore:
        """Open (creating) the store in schema ``label``."""
        return PostgresSessionStore(self.dsn, schema=label)

    def exists(self, label: str) -> bool:
        """True when schema ``label`` holds a store."""
        found = self._sql(sql.SQL("SELECT to_regclass(%s)"), (f"{label}.messages",))
        return found is not None

    def finish(self, store: SessionStore) -> None:
        """Analyze the new tables (as autovacuum soon would) and close."""
        assert isinstance(store, PostgresSessionStore)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("VACUUM ANALYZE {}.messages").format(sql.Identifier(store.schema)))
            conn.execute(sql.SQL("ANALYZE {}.sessions").format(sql.Identifier(store.schema)))
        store.close()

    def size(self, label: str) -> int:
        """Bytes of every table, index and TOAST relation in the schema."""
        query = sql.SQL(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s"
            " AND c.relkind = 'r'"
        )
        return int(self._sql(query, (label,)))

    def drop(self, label: str) -> None:
        """Drop schema ``label``."""
        pgserver.drop_schema(self.dsn, label)

    def describe(self) -> dict[str, Any]:
        """Engine name and version for the report."""
        version = self._sql(sql.SQL("SHOW server_version"))
        marked = self._sql(
            sql.SQL(
                "SELECT bool_and(proleakproof) FROM pg_proc WHERE oid = ANY(%s::regprocedure[])"
            ),
            (list(LEAKPROOF),),
        )
        fsync = self._sql(sql.SQL("SHOW fsync"))
        return {
            "backend": "postgres",
            "version": str(version).split()[0],
            "leakproof_search_operators": bool(marked),
            "fsync": fsync,
        }

    def close(self) -> None:
        """Stop the server this run started (a ``--dsn`` server is left alone)."""
        if self.server is not None:
            self.server.stop()
