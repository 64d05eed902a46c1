"""Schema migrations when several processes (standing in for hosts) start on a fresh database."""

from __future__ import annotations

import multiprocessing
from typing import Any

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres

_PROCESSES = 4


def _migrate(uri: str, schema: str, barrier: Any, out: Any) -> None:
    barrier.wait(60)
    with psycopg.connect(uri, autocommit=True) as conn:
        out.put(migrations.migrate(conn, schema))
    store = PostgresSessionStore(uri, schema=schema, pool_size=1)  # opens on the result
    store.close()


def test_concurrent_first_start_migrates_once(pg_server: pgserver.PgServer) -> None:
    schema = pgserver.fresh_schema("race")
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(_PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=_migrate, args=(pg_server.uri, schema, barrier, out))
        for _ in range(_PROCESSES)
    ]
    try:
        for p in procs:
            p.start()
        ran = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * _PROCESSES
        names = [name for name, _ in migrations.MIGRATIONS]
        assert sorted(n for r in ran for n in r) == sorted(names)  # each ran exactly once
        with psycopg.connect(pg_server.uri) as conn:
            recorded = conn.execute(
                sql.SQL("SELECT name FROM {}._migrations ORDER BY applied_at").format(
                    sql.Identifier(schema)
                )
            ).fetchall()
            policies = conn.execute(
                "SELECT tablename FROM pg_policies WHERE schemaname = %s ORDER BY 1", (schema,)
            ).fetchall()
        assert [r[0] for r in recorded] == names
        assert [r[0] for r in policies] == sorted(migrations.POLICIES)
    finally:
        pgserver.drop_schema(pg_server.uri, schema)
