"""Fast ingest on PostgreSQL: the cheaper ``tsv`` expression and one-statement appends."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.errors import SessionNotFound
from memoryport.storage import search_lexemes
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_server: pgserver.PgServer) -> Iterator[PostgresSessionStore]:
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema(), pool_size=2)
    yield store
    store.close()
    pgserver.drop_schema(pg_server.uri, store.schema)


def test_the_fast_search_doc_folds_every_character_like_fold_text(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    chars = [chr(c) for c in range(1, 0x250)] + ["\ue000", "\ue001", "\u00e9\u0301"]
    texts = [f"x{c}y a{c}{c}b" for c in chars] + ["caf\u00e9 /usr/lib/foo.py ops@x.io"]
    folded = [search_lexemes.fold_text(t + "  ") for t in texts]
    schema = sql.Identifier(pg_store.schema)
    query = sql.SQL(
        "SELECT content FROM unnest(%s::text[], %s::text[]) AS x(content, folded),"
        " LATERAL (SELECT NULL::text AS tool_name, NULL::text AS tool_calls) AS y"
        " WHERE {doc} IS DISTINCT FROM to_tsvector({cfg}, folded)"
    ).format(doc=migrations.search_doc(schema), cfg=migrations.ts_config(schema))
    with psycopg.connect(pg_server.uri) as conn:
        differing = conn.execute(query, (texts, folded)).fetchall()
    assert differing == []


def test_a_batch_lands_in_order_with_its_events_in_one_statement(
    pg_store: PostgresSessionStore,
) -> None:
    sid = pg_store.create_session("s", source="cli").id
    batch = [{"role": "user", "content": f"note {i}"} for i in range(500)]
    batch[7] = {"role": "user", "content": "we met yesterday", "timestamp": 1.7e9}
    batch[9] = {"role": "assistant", "content": "ok", "tool_calls": [{"id": "a"}, {"id": "b"}]}
    ids = pg_store.append_messages(sid, batch)
    assert ids == sorted(ids) and len(set(ids)) == 500
    stored = pg_store.get_messages(sid)
    assert [m.id for m in stored] == ids
    assert [m.content for m in stored] == [m["content"] for m in batch]
    session = pg_store.get_session(sid)
    assert (session.message_count, session.tool_call_count) == (500, 2)
    hits = pg_store.search_messages("what did we do yesterday").hits
    assert ids[7] in [h.message.id for h in hits]
    with psycopg.connect(pg_store._pool.conninfo) as conn:
        events = conn.execute(
            sql.SQL("SELECT message_id, precision FROM {}.message_events").format(
                sql.Identifier(pg_store.schema)
            )
        ).fetchall()
    assert events == [(ids[7], "day")]


def test_a_batch_for_an_unknown_session_writes_nothing(pg_store: PostgresSessionStore) -> None:
    with pytest.raises(SessionNotFound):
        pg_store.append_messages("nope", [{"role": "user", "content": "yesterday " * 3}] * 3)
    assert pg_store.search_messages("yesterday").hits == []
    assert pg_store.list_sessions() == []
