"""Batched PostgreSQL appends of every length give back the ids stored, in input order,
and attach each event window to its message (found by position among the session's
last messages, read backwards through its index whatever the planner estimates).

Appends of every length around the chunk boundaries (1, 32, 33, 80, 81, 200), with and
without time expressions, into sessions whose messages interleave in id order: the ids
returned are the ids stored, in input order, each row is the message given, and each
event row belongs to the message whose words it came from. An unknown session, or one
row-level security hides from an application role, writes nothing. The usual message's
row (built without ``message_values``) equals ``message_values``'s on every shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations
from memoryport.storage.sessions.postgres.bulk import _message_rows
from memoryport.storage.sessions.postgres.dialect import message_values
from memoryport.storage.sessions.records import MessageInput
from memoryport.storage.sessions.temporal import event_rows
from test_postgres_rls import roles  # noqa: F401  (the owner and application roles)

pytestmark = pytest.mark.postgres

LENGTHS = (1, 32, 33, 80, 81, 200)


@pytest.fixture
def schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    name = pgserver.fresh_schema()
    yield name
    pgserver.drop_schema(pg_server.uri, name)


def _batch(tag: str, count: int, timed: bool) -> list[dict[str, Any]]:
    words = "we met yesterday and again last week" if timed else "nothing to date here"
    return [
        {"role": "user" if i % 2 else "assistant",
         "content": f"{tag} {i} {words if i % 5 == 0 else 'plain'}", "timestamp": 1.6e9 + 60.0 * i}
        for i in range(count)
    ]  # fmt: skip


def _read(uri: str, schema: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri, autocommit=True) as conn:
        return conn.execute(sql.SQL(query).format(s=sql.Identifier(schema))).fetchall()


@pytest.mark.parametrize("timed", [True, False])
def test_ids_rows_and_events_of_every_length(
    pg_server: pgserver.PgServer, schema: str, timed: bool
) -> None:
    store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=2)
    try:
        sessions = [store.create_session(f"s{k}", source="cli", started_at=1.5e9).id for k in "ab"]
        given: dict[int, tuple[str, dict[str, Any]]] = {}
        for length in LENGTHS:
            for sid in sessions:  # the sessions' ids interleave
                batch = _batch(f"{sid}-{length}", length, timed)
                ids = store.append_messages(sid, batch)
                assert len(ids) == length and ids == sorted(ids)
                given.update({i: (sid, m) for i, m in zip(ids, batch, strict=True)})
        query = "SELECT id, session_id, role, content, timestamp FROM {s}.messages"
        stored = _read(pg_server.uri, schema, query)
        assert {r[0]: (r[1], r[2], r[3], r[4]) for r in stored} == {
            i: (sid, m["role"], m["content"], m["timestamp"]) for i, (sid, m) in given.items()
        }
        events = _read(pg_server.uri, schema, "SELECT * FROM {s}.message_events")
        want = [
            e for i, (_, m) in given.items() for e in event_rows(i, m["content"], m["timestamp"])
        ]
        assert sorted(events) == sorted(want)
        assert bool(events) is timed
        counts = {sid: store.get_session(sid).message_count for sid in sessions}
        assert counts == {sid: sum(LENGTHS) for sid in sessions}
    finally:
        store.close()


def test_unknown_or_hidden_session_writes_nothing(roles: dict[str, str]) -> None:  # noqa: F811
    schema = roles["schema"]
    PostgresSessionStore(roles["owner"], schema=schema, pool_size=1).close()  # migrate
    with psycopg.connect(roles["owner"], autocommit=True) as conn:
        migrations.grant_app_role(conn, schema, roles["app_role"])
    bob = PostgresSessionStore(roles["app"], schema=schema, user_id="bob", pool_size=1)
    alice = PostgresSessionStore(roles["app"], schema=schema, user_id="alice", pool_size=1)
    try:
        bob.create_session("theirs", source="cli", user_id="bob", started_at=1.5e9)
        for length in (5, 81):  # one statement, and the long path
            with pytest.raises(SessionNotFound):
                bob.append_messages("missing", _batch("m", length, True))
            with pytest.raises(SessionNotFound):  # the policies hide bob's session
                alice.append_messages("theirs", _batch("t", length, True))
        for table in ("messages", "message_events"):
            assert _read(roles["owner"], schema, f"SELECT count(*) FROM {{s}}.{table}") == [(0,)]
        assert bob.get_session("theirs").message_count == 0
        assert bob.append_messages("theirs", _batch("b", 81, True))  # bob's own still works
    finally:
        alice.close()
        bob.close()


def test_usual_row_equals_message_values() -> None:
    shapes = [
        MessageInput(role="user", content="plain words", timestamp=1.6e9),
        MessageInput(role="user", content="", timestamp=None),
        MessageInput(role="user", content="nul\x00inside"),
        MessageInput(role="user", content="caf\u00e9 \ud800"),
        MessageInput(role="user", content="\ue000 escape"),
        MessageInput(role="r\u00f4le", content="x"),
        MessageInput(role="tool", content="x", tool_name="t", tool_call_id="c"),
        MessageInput(role="assistant", content="x", tool_calls=[{"name": "n"}]),
        MessageInput(role="assistant", content="x", tool_calls=[], metadata={}),
        MessageInput(role="assistant", content="x", reasoning="why"),
        MessageInput(role="user", content="x", metadata={"k": "v"}),
    ]
    for session_id in ("s1", "s\u00e9\ud800"):
        fast = _message_rows(session_id, shapes, 1.7e9)
        slow = [message_values(session_id, m, 1.7e9) for m in shapes]
        assert fast == slow
        assert [list(map(type, r)) for r in fast] == [list(map(type, r)) for r in slow]
