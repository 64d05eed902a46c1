"""PostgreSQL appends and syncs run in the implicit transaction their pipeline's Sync
commits: no ``BEGIN`` or ``COMMIT`` on the wire (two statements fewer a write), still
all or nothing: a failure inside, or an exception in Python after a chunk was sent (the
store queues ``ROLLBACK`` before the Sync), leaves nothing; tests/test_pg_ingest_wire.py
shows both."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import pq

import pgserver
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.records import MessageInput, SessionRecord

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_server: pgserver.PgServer) -> Iterator[PostgresSessionStore]:
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema(), pool_size=1)
    yield store
    store.close()
    pgserver.drop_schema(pg_server.uri, store.schema)


def _traced(store: PostgresSessionStore, write: object) -> str:
    """libpq's trace of the store's one pooled connection while ``write()`` runs."""
    with tempfile.TemporaryFile("w+") as out:
        with store._pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            assert callable(write)
            write()
        finally:
            with store._pool.connection() as conn:
                conn.pgconn.untrace()
        out.flush()
        os.fsync(out.fileno())
        out.seek(0)
        return out.read()


def _queries(trace: str) -> list[str]:
    return [line for line in trace.splitlines() if "\tParse\t" in line or "\tQuery\t" in line]


def test_an_append_and_a_sync_send_no_begin_or_commit(pg_store: PostgresSessionStore) -> None:
    sid = pg_store.create_session("s", source="cli").id
    batch = [MessageInput("user", f"words number {i} at noon tomorrow") for i in range(100)]
    ids: list[int] = []
    trace = _traced(pg_store, lambda: ids.extend(pg_store.append_messages(sid, batch)))
    assert len(ids) == 100 and ids == sorted(ids)
    sent = _queries(trace)
    assert sent and not [q for q in sent if '"BEGIN"' in q or '"COMMIT"' in q], sent
    assert trace.count("\tSync") == 1  # one round trip
    record = SessionRecord(id="t", source="cli", started_at=1.0)
    trace = _traced(pg_store, lambda: pg_store.sync_sessions([(record, batch[:3])]))
    assert not [q for q in _queries(trace) if '"BEGIN"' in q or '"COMMIT"' in q]
    assert [m.content for m in pg_store.get_messages("s")] == [m.content for m in batch]
    assert pg_store.get_session("s").message_count == 100
    assert len(pg_store.get_messages("t")) == 3


def test_an_unknown_session_still_writes_nothing(pg_store: PostgresSessionStore) -> None:
    with pytest.raises(SessionNotFound):
        pg_store.append_messages("nope", [MessageInput("user", "x")] * 60)
    with psycopg.connect(pg_store._pool.conninfo) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{pg_store.schema}".messages').fetchone()
    assert row == (0,)
