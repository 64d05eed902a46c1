"""The PostgreSQL side of ``bench_sessions.py``: one schema per store on one server.

Without ``--dsn`` the distribution's PostgreSQL (with ``pg_trgm``) is started for the run
(:func:`start_durable_server`) with durability at its defaults (``fsync``,
``full_page_writes``, ``synchronous_commit`` on, unlike the test suite's servers): ingest
figures then include a real WAL flush per commit, as on a production server. The stores
connect as an application role (``memoryport_app``, or ``--pg-app-role`` on a ``--dsn``
server) that the schemas' owner (``memoryport``, the ``--dsn`` role) grants the store to
with ``grant_app_role``: the policies bind it (the server's own user is a superuser, which
row-level security never applies to), so the figures include them. Without an
application role the owner runs the store and its ``FORCE``d policies bind it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pgserver  # the test suite's server helper

__all__ = ["PostgresBackend", "start_durable_server"]


_TIMEOUT_S = 120
"""Seconds ``initdb`` / ``pg_ctl`` may take before the run gives up (with the log)."""
_DURABLE = ("fsync", "full_page_writes", "synchronous_commit")


def _tail(log: Path, lines: int = 15) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def _server_tool(args: list[str], log: Path) -> None:
    """Run a server program (as the ``pgserver`` user when we are root).

    Its output goes to ``log``, never to a pipe: a server started by ``pg_ctl`` that
    inherited a pipe would keep us waiting for the pipe to close. A failure or a timeout
    raises ``RuntimeError`` with the end of the log.
    """
    user = "pgserver" if os.geteuid() == 0 else None
    try:
        with log.open("ab") as out:
            proc = subprocess.run(
                args, user=user, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, timeout=_TIMEOUT_S, check=False,
            )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{args[0]} timed out after {_TIMEOUT_S}s:\n{_tail(log)}") from exc
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({proc.returncode}):\n{_tail(log)}")


def start_durable_server() -> pgserver.PgServer:
    """Start the distribution's PostgreSQL in a fresh directory with durability at the
    defaults (``fsync``, ``full_page_writes``, ``synchronous_commit`` on), stopped at exit.

    One ``initdb`` and one ``pg_ctl start`` (``tests/pgserver.py`` starts its server with
    durability off on the command line, and restarting it to undo that is what hung).
    """
    bindir = pgserver.find_system_bindir()
    root = Path(tempfile.mkdtemp(prefix="mp-bench-", dir="/tmp"))  # short socket path
    pgserver._prepare_root(root)
    data, log, tools = root / "data", root / "server.log", root / "tools.log"
    pg_ctl = [str(bindir / "pg_ctl"), "-w", "-t", str(_TIMEOUT_S), "-D", str(data)]
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if stopped:
            return
        stopped = True
        for mode in ("fast", "immediate"):
            if not (data / "postmaster.pid").exists():
                break
            with contextlib.suppress(RuntimeError):
                _server_tool([*pg_ctl, "-m", mode, "stop"], tools)
        shutil.rmtree(root, ignore_errors=True)

    atexit.register(stop)
    try:
        _server_tool([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                      "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"], tools)  # fmt: skip
        _server_tool([*pg_ctl, "-l", str(log), "-o", f"-h '' -k {root}", "start"], tools)
        server = pgserver.PgServer(
            uri=f"postgresql://postgres@/postgres?host={root}", kind="system", _stop=stop
        )
        server.probe()
        with psycopg.connect(server.uri, autocommit=True) as conn:
            for name in _DURABLE:
                row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
                if row is None or row[0] != "on":
                    raise RuntimeError(f"{name} is {row!r} on the started server, expected on")
    except BaseException:
        stop()
        raise
    return server


LEAKPROOF = (
    "pg_catalog.ts_match_vq(tsvector, tsquery)",
    "pg_catalog.texticlike(text, text)",
    "pg_catalog.textregexeq(text, text)",
)
"""The functions behind ``@@``, ``ILIKE`` and ``~`` that ``leakproof=True`` marks."""


APP_ROLE = "memoryport_app"
"""The application role a started server gets (the stores' owner is ``memoryport``)."""


class PostgresBackend:
    """Stores are schemas ``<label>`` in one database; sizes are relation sizes."""

    name = "postgres"

    def __init__(
        self,
        workdir: Path,
        dsn: str = "",
        *,
        keep: bool = False,
        leakproof: bool = False,
        app_role: str = "",
    ) -> None:
        self.workdir = workdir
        self.keep = keep
        self.leakproof = leakproof
        self.app_role = app_role
        self.server: pgserver.PgServer | None = None
        if not dsn:
            self.server = start_durable_server()
            dsn = self.server.uri
            with psycopg.connect(dsn, autocommit=True) as conn:
                for function in LEAKPROOF if leakproof else ():
                    conn.execute(f"ALTER FUNCTION {function} LEAKPROOF")
                conn.execute("CREATE ROLE memoryport LOGIN")
                conn.execute("GRANT CREATE ON DATABASE postgres TO memoryport")
                self.app_role = app_role or APP_ROLE
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(self.app_role)))
            dsn = make_conninfo(dsn, user="memoryport")
        self.dsn = dsn

    def _sql(self, query: sql.Composable, params: tuple[Any, ...] = ()) -> Any:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(query, params).fetchone()
        return None if row is None else row[0]

    def open(self, label: str) -> SessionStore:
        """Open (creating) the store in schema ``label``: as the application role when
        there is one (the owner migrates and grants it, see ``grant_app_role``)."""
        if not self.app_role:
            return PostgresSessionStore(self.dsn, schema=label)
        PostgresSessionStore(self.dsn, schema=label, pool_size=1).close()
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            migrations.grant_app_role(conn, label, self.app_role)
        return PostgresSessionStore(make_conninfo(self.dsn, user=self.app_role), schema=label)

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
            "app_role": self.app_role or None,
            "fsync": fsync,
        }

    def server_cpu(self) -> float | None:
        """CPU seconds (user + system) used so far by the server's processes: the
        postmaster of this connection's backend and all its children, read from
        ``/proc`` (``None`` when the server is not on this machine or not readable)."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                row = conn.execute("SELECT pg_backend_pid()").fetchone()
            backend = int(row[0]) if row else 0
            status = Path(f"/proc/{backend}/status").read_text()
            postmaster = int(
                next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:"))
            )
        except (psycopg.Error, OSError, StopIteration, ValueError):
            return None
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(entry.name) == postmaster or int(fields[1]) == postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / tick

    def writer_cpu(self) -> dict[int, float] | None:
        """CPU seconds used so far by each backend serving a store's pooled connections
        (``application_name`` ``memoryport``), by pid: on-CPU nanoseconds from
        ``/proc/<pid>/schedstat``, so unlike :meth:`server_cpu` it leaves out the WAL
        writer, checkpointer and autovacuum, and short runs resolve (``None`` when the
        server is not on this machine or not readable)."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                pids = [
                    int(r[0])
                    for r in conn.execute(
                        "SELECT pid FROM pg_stat_activity WHERE application_name = 'memoryport'"
                        " AND datname = current_database()"
                    )
                ]
            return {
                pid: int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
                for pid in pids
            }
        except (psycopg.Error, OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        """Stop the server this run started (a ``--dsn`` server is left alone)."""
        if self.server is not None:
            self.server.stop()
