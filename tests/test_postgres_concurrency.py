"""Several processes on one PostgreSQL store (standing in for several hosts).

Eight processes append turns while two search, and every search sees whole turns only;
a process killed while its batch is on the server leaves nothing of that batch behind.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import Counter
from typing import Any

import psycopg
import pytest

import pgserver
from memoryport.storage.sessions.postgres import PostgresSessionStore

pytestmark = pytest.mark.postgres

_WRITERS, _SEARCHERS, _TURNS = 8, 2, 10


def _writer(uri: str, schema: str, worker: int, start: Any) -> None:
    store = PostgresSessionStore(uri, schema=schema, pool_size=1)
    start.wait(120)
    sid = store.create_session(f"w{worker}", source="cli").id
    for turn in range(_TURNS):
        tag = f"w{worker}t{turn}"
        for target in (sid, "shared"):
            store.append_messages(
                target,
                [
                    {"role": "user", "content": f"zebra {tag} question"},
                    {"role": "assistant", "content": f"zebra {tag} answer"},
                ],
            )
    store.close()


def _searcher(uri: str, schema: str, start: Any, stop: Any, out: Any) -> None:
    store = PostgresSessionStore(uri, schema=schema, pool_size=1)
    start.wait(120)
    searches, broken = 0, []
    while not stop.is_set() or searches == 0:
        hits = store.search_messages("zebra", limit=5000, sort="newest").hits
        tags = Counter((h.message.session_id, h.message.content.split()[1]) for h in hits)
        broken += [tag for tag, seen in tags.items() if seen != 2]  # half a turn visible
        searches += 1
    store.close()
    out.put((searches, broken))


def test_eight_writers_and_two_searchers(pg_server: pgserver.PgServer) -> None:
    schema = pgserver.fresh_schema("conc")
    store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
    store.create_session("shared", source="cli")
    ctx = multiprocessing.get_context("spawn")
    start, stop, out = ctx.Barrier(_WRITERS + _SEARCHERS), ctx.Event(), ctx.Queue()
    writers = [
        ctx.Process(target=_writer, args=(pg_server.uri, schema, w, start)) for w in range(_WRITERS)
    ]
    searchers = [
        ctx.Process(target=_searcher, args=(pg_server.uri, schema, start, stop, out))
        for _ in range(_SEARCHERS)
    ]
    try:
        for p in writers + searchers:
            p.start()
        for p in writers:
            p.join(180)
        stop.set()
        results = [out.get(timeout=120) for _ in searchers]
        for p in searchers:
            p.join(60)
        assert [p.exitcode for p in writers + searchers] == [0] * (_WRITERS + _SEARCHERS)
        assert all(searches > 0 and broken == [] for searches, broken in results)
        expected = _WRITERS * _TURNS * 2
        assert store.get_session("shared").message_count == expected
        shared = store.get_messages("shared")
        assert len(shared) == expected == len({m.id for m in shared})
        for w in range(_WRITERS):
            assert store.get_session(f"w{w}").message_count == _TURNS * 2
        hits = store.search_messages("zebra", limit=5000).hits
        assert len(hits) == 2 * expected
    finally:
        store.close()
        pgserver.drop_schema(pg_server.uri, schema)


def _big_batch(uri: str, schema: str) -> None:
    store = PostgresSessionStore(uri, schema=schema, pool_size=1)
    store.append_messages("s", [{"role": "user", "content": "whole batch"}] * 3)
    store.append_messages("s", [{"role": "user", "content": f"half {i}"} for i in range(100_000)])


def _active_insert(conn: psycopg.Connection[Any], schema: str) -> int | None:
    row = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE state = 'active'"
        " AND query LIKE %s AND pid <> pg_backend_pid()",
        (f'%INSERT INTO "{schema}".messages%',),
    ).fetchone()
    return None if row is None else int(row[0])


def test_a_process_killed_mid_batch_leaves_nothing_half_written(
    pg_server: pgserver.PgServer,
) -> None:
    schema = pgserver.fresh_schema("kill")
    store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
    store.create_session("s", source="cli")
    proc = multiprocessing.get_context("spawn").Process(
        target=_big_batch, args=(pg_server.uri, schema)
    )
    try:
        proc.start()
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            deadline = time.monotonic() + 120
            # the first (small) batch commits before the big one starts: wait for it, so
            # the insert caught below is the big batch's (an append and its COMMIT go in
            # one pipeline, so the small batch's INSERT can show as active too)
            while store.get_session("s").message_count < 3:
                assert proc.is_alive() and time.monotonic() < deadline, "first batch never landed"
                time.sleep(0.02)
            while (backend := _active_insert(conn, schema)) is None:
                assert proc.is_alive() and time.monotonic() < deadline, "batch never started"
                time.sleep(0.02)
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)  # the batch is running on the server now
            proc.join(30)
            conn.execute("SELECT pg_terminate_backend(%s)", (backend,))  # as TCP keepalive would
            while conn.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)
            ).fetchone():
                time.sleep(0.02)
        assert proc.exitcode == -signal.SIGKILL
        messages = store.get_messages("s")
        assert [m.content for m in messages] == ["whole batch"] * 3
        assert store.get_session("s").message_count == 3
        assert store.search_messages("half").hits == []
    finally:
        store.close()
        pgserver.drop_schema(pg_server.uri, schema)
