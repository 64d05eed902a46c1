"""PostgreSQL writes on the wire: message columns travel as binary arrays the store builds
itself, ``create_session`` builds its row without ``asdict``, and each write is one
pipelined ``BEGIN`` ... ``COMMIT``; what is stored, and what a failure leaves behind,
must not change."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.errors import StoreError
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.postgres.bulk import session_row
from memoryport.storage.sessions.postgres.dialect import session_values
from memoryport.storage.sessions.records import MessageInput, SessionRecord

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_server: pgserver.PgServer) -> Iterator[PostgresSessionStore]:
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema(), pool_size=1)
    yield store
    store.close()
    pgserver.drop_schema(pg_server.uri, store.schema)


CALLS = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]

ODD = [
    MessageInput("user", "an int timestamp", timestamp=100),
    MessageInput("assistant", "nul \x00 and the escape \ue000 and \\ backslash", timestamp=100.25),
    MessageInput(
        "tool",
        "",
        tool_name="search",
        tool_calls=CALLS,
        tool_call_id="c1",
        reasoning="why \x00 not",
        metadata={"a": [1, "ü"], "b": None},
    ),
    MessageInput("user", "a lone \ud800 surrogate", timestamp=101.5),
    MessageInput("user", "東京タワー 😀 naïve crème", timestamp=102.0),
    MessageInput("user", "x" * 70_000, timestamp=103.0),  # TOASTed
]


def test_every_value_lands_as_it_was_given_across_chunks(pg_store: PostgresSessionStore) -> None:
    sid = pg_store.create_session("s", source="cli", title="t\x00itle", metadata={"k": "v"}).id
    filler = [MessageInput("user", f"filler number {i}", timestamp=200.0 + i) for i in range(40)]
    ids = pg_store.append_messages(sid, [*filler[:30], *ODD, *filler[30:]])  # spans 2 chunks
    got = {m.id: m for m in pg_store.get_messages(sid)}
    assert list(got) == ids
    stored = [got[i] for i in ids[30:36]]
    assert [m.role for m in stored] == [m.role for m in ODD]
    assert [m.timestamp for m in stored if m.role != "tool"] == [100.0, 100.25, 101.5, 102.0, 103.0]
    assert stored[0].content == "an int timestamp"
    assert stored[1].content == "nul \x00 and the escape \ue000 and \\ backslash"
    assert (stored[2].tool_name, stored[2].tool_calls, stored[2].tool_call_id) == (
        "search",
        CALLS,
        "c1",
    )
    assert stored[2].reasoning == "why \x00 not" and stored[2].content == ""
    assert stored[2].metadata == {"a": [1, "ü"], "b": None}
    assert stored[3].content == "a lone \ufffd surrogate"
    assert stored[4].content == "東京タワー 😀 naïve crème" and len(stored[5].content) == 70_000
    assert all(m.tool_name is None and m.metadata == {} for m in got.values() if m.role == "user")
    session = pg_store.get_session(sid)
    assert (session.title, session.metadata, session.message_count) == ("t\x00itle", {"k": "v"}, 46)
    for query, index in (("crème", 4), ("東京", 4), ("search", 2), ("backslash", 1)):
        assert ids[30 + index] in {h.message.id for h in pg_store.search_messages(query).hits}
    pg_store.check_index()  # every stored vector is the one the store computes


def test_a_new_session_row_is_what_session_values_gives() -> None:
    records = [
        SessionRecord(id="a", source="cli"),
        SessionRecord(
            id="b",
            source="api",
            user_id="u",
            model="m",
            title="nul \x00 \ue000",
            started_at=1.5,
            last_active_at=2.5,
            estimated_cost_usd=0.1,
        ),
        SessionRecord(id="c", source="cli", title="lone \udc00", metadata={"k": [1, {"x": 2}]}),
    ]
    for record in records:
        assert session_row(record) == session_values(record)


def _message_count(store: PostgresSessionStore) -> int:
    with psycopg.connect(store._pool.conninfo) as conn:
        query = sql.SQL("SELECT count(*) FROM {}.messages").format(sql.Identifier(store.schema))
        row = conn.execute(query).fetchone()
    return int(row[0]) if row else -1


def test_an_append_failing_after_its_first_chunk_was_sent_writes_nothing(
    pg_server: pgserver.PgServer,
) -> None:
    """A connection whose client encoding cannot hold a character fails while the store
    encodes the second chunk, after the first was sent: no COMMIT follows, the
    transaction is rolled back, and the same pooled connection serves the next write."""
    schema = pgserver.fresh_schema()
    PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1).close()  # migrated
    dsn = make_conninfo(pg_server.uri, options="-c client_encoding=LATIN1")
    store = PostgresSessionStore(dsn, schema=schema, pool_size=1)
    try:
        sid = store.create_session("s", source="cli").id
        batch = [MessageInput("user", f"latin words {i}") for i in range(40)]
        batch[36] = MessageInput("user", "東京 cannot be LATIN1")
        with pytest.raises(StoreError, match="write failed"):
            store.append_messages(sid, batch)
        assert _message_count(store) == 0 and store.get_session(sid).message_count == 0
        assert store.append_messages(sid, [MessageInput("user", "café works")]) != []
        assert [m.content for m in store.get_messages(sid)] == ["café works"]
        assert store.get_session(sid).message_count == 1
    finally:
        store.close()
        pgserver.drop_schema(pg_server.uri, store.schema)


def test_a_statement_failing_inside_the_pipeline_undoes_the_write_and_frees_the_connection(
    pg_store: PostgresSessionStore,
) -> None:
    """A server-side error (an unknown parent in a sync) skips the rest of the pipeline,
    its COMMIT included; the connection is rolled back and reused."""
    kept = SessionRecord(id="kept", source="cli", started_at=1.0)
    pg_store.sync_sessions([(kept, [MessageInput("user", "first words")])])
    with psycopg.connect(pg_store._pool.conninfo, autocommit=True) as conn:
        table = sql.SQL("{}.messages").format(sql.Identifier(pg_store.schema))
        conn.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT no_boom CHECK (content <> 'boom')")
                     .format(table))  # fmt: skip
    grown = [MessageInput("user", "first words"), MessageInput("user", "more"),
             MessageInput("user", "boom")]  # fmt: skip
    with pytest.raises(StoreError, match="no_boom"):
        pg_store.sync_sessions([(kept, grown)])
    with pytest.raises(StoreError, match="no_boom"):
        pg_store.append_messages("kept", [MessageInput("user", "ok"), MessageInput("user", "boom")])
    assert [m.content for m in pg_store.get_messages("kept")] == ["first words"]
    assert pg_store.get_session("kept").message_count == 1
    assert pg_store.append_messages("kept", [MessageInput("user", "after")]) != []
    assert pg_store.get_session("kept").message_count == 2
