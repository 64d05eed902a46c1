"""m051: ``messages_content_trgm`` rebuilt with the cheap CJK predicate (``cjk_rows``):
a store made before it is upgraded in place, CJK searches answer as before and the
planner still serves them from the index; a store without ``pg_trgm`` is left alone."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres

TEXTS = [
    "東京都の天気は晴れです", "大阪の会議は明日", "東京タワーに行った", "no cjk here 東",
    "plain ascii text", "café au lait", "서울에서 만나요", "京都の寺が好きです 2023",
]
QUERIES = ("東京都", "東京", "東京 OR 大阪の会", "東", "tower 東京タワ", "京都の寺", "서울에서")


@pytest.fixture(scope="module")
def trgm_server() -> Iterator[pgserver.PgServer]:
    """The distribution's PostgreSQL with contrib (so ``pg_trgm`` exists); never skipped."""
    server = pgserver.start_system_server()
    yield server
    server.stop()


def _answers(store: PostgresSessionStore) -> list[list[str]]:
    return [
        [h.message.content for h in store.search_messages(q, sort=sort).hits]
        for q in QUERIES
        for sort in ("relevance", "newest")
    ]


def _predicate(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> str | None:
    row = conn.execute(
        "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i JOIN pg_class c"
        " ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = 'messages_content_trgm'"
        " AND i.indisvalid AND i.indisready",
        (schema,),
    ).fetchone()
    return None if row is None else str(row[0])


def test_m051_rebuilds_the_trigram_index_of_an_older_store(
    trgm_server: pgserver.PgServer,
) -> None:
    schema = pgserver.fresh_schema()
    store = PostgresSessionStore(trgm_server.uri, schema=schema, pool_size=1)
    ident = sql.Identifier(schema)
    try:
        sid = store.create_session("cjk").id
        store.append_messages(sid, [{"role": "user", "content": t} for t in TEXTS])
        before = _answers(store)
        store.close()
        with psycopg.connect(trgm_server.uri, autocommit=True) as conn:
            assert "octet_length(content)" in (_predicate(conn, schema) or "")
            # the store as m002 left it before m051: the CJK regex alone as the predicate
            conn.execute(sql.SQL("DROP INDEX {s}.messages_content_trgm").format(s=ident))
            conn.execute(
                sql.SQL(
                    "CREATE INDEX messages_content_trgm ON {s}.messages"
                    " USING gin (content gin_trgm_ops) WHERE content ~ {cjk}"
                ).format(s=ident, cjk=sql.Literal(migrations.CJK_REGEX))
            )
            conn.execute(
                sql.SQL("DELETE FROM {s}._migrations WHERE name = %s").format(s=ident),
                ("m051_trigram_cheap_predicate",),
            )
            assert "octet_length" not in (_predicate(conn, schema) or "missing")
        store = PostgresSessionStore(trgm_server.uri, schema=schema, pool_size=1)
        assert store.trigram_indexed
        assert _answers(store) == before
        assert before[0][0] == TEXTS[0] and before[-2] == [TEXTS[6]]
        with psycopg.connect(trgm_server.uri, autocommit=True) as conn:
            assert migrations.pending(conn, schema) == []
            assert "octet_length(content)" in (_predicate(conn, schema) or "")
            conn.execute("SET enable_seqscan = off")
            plan = conn.execute(
                sql.SQL(
                    f"EXPLAIN SELECT m.id FROM {{s}}.messages m WHERE {migrations.cjk_rows('m.')}"
                    " AND m.content ILIKE '%%東京都%%'"
                ).format(s=ident)
            ).fetchall()
        assert "messages_content_trgm" in " ".join(str(r[0]) for r in plan)
    finally:
        store.close()
        pgserver.drop_schema(trgm_server.uri, schema)


def test_m051_leaves_a_store_without_pg_trgm_alone(pg_server: pgserver.PgServer) -> None:
    schema = pgserver.fresh_schema()
    store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
    try:
        assert store.trigram_indexed is pg_server.has_pg_trgm
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            assert "m051_trigram_cheap_predicate" in migrations.applied(conn, schema)
            if not pg_server.has_pg_trgm:
                assert _predicate(conn, schema) is None
        sid = store.create_session("cjk").id
        store.append_messages(sid, [{"role": "user", "content": t} for t in TEXTS])
        assert [h.message.content for h in store.search_messages("東京都").hits] == [TEXTS[0]]
    finally:
        store.close()
        pgserver.drop_schema(pg_server.uri, schema)
