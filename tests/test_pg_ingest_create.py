"""PostgreSQL ``create_session`` as one plain ``INSERT`` (no speculative ``ON CONFLICT``,
no row sent back): the record it returns is the stored one, and a taken id -- even one
row-level security hides from the caller -- is refused and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import pgserver
from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage.sessions.postgres import PostgresSessionStore

pytestmark = pytest.mark.postgres


@pytest.fixture
def schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    name = pgserver.fresh_schema()
    PostgresSessionStore(pg_server.uri, schema=name, pool_size=1).close()
    yield name
    pgserver.drop_schema(pg_server.uri, name)


def test_the_returned_record_is_the_stored_one(pg_server: pgserver.PgServer, schema: str) -> None:
    store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
    try:
        made = [
            store.create_session("plain", source="cli", started_at=1.5),
            store.create_session(
                "odd",
                source="api",
                user_id="u",
                model="m",
                title="nul \x00 escape \ue000 lone \udc00",
                started_at=2.25,
                metadata={"k": [1, {"x": "ü"}], "n": None},
            ),
            store.create_session("child", source="cli", parent_session_id="odd"),
        ]
        for record in made:
            assert store.get_session(record.id) == record
        assert made[1].title == "nul \x00 escape \ue000 lone \ufffd"
        assert made[2].user_id == "u" and made[2].parent_session_id == "odd"
    finally:
        store.close()


def test_a_taken_id_is_refused_even_when_hidden(pg_server: pgserver.PgServer, schema: str) -> None:
    alice = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1, user_id="alice")
    bob = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1, user_id="bob")
    try:
        first = alice.create_session("s1", source="cli", title="alice's")
        for store in (alice, bob):  # bob cannot see s1, and still cannot take its id
            with pytest.raises(StoreError, match="'s1' already exists"):
                store.create_session("s1", source="cli", title="again")
        with pytest.raises(StoreError, match="'s1' already exists"):
            alice.create_session("s1", source="cli", parent_session_id="s1")
        assert alice.get_session("s1") == first
        with pytest.raises(SessionNotFound):
            bob.get_session("s1")
        assert bob.create_session("s2", source="cli").user_id == "bob"  # the pool still works
        assert [s.session.id for s in alice.list_sessions()] == ["s1"]
    finally:
        alice.close()
        bob.close()
