"""PostgreSQL ingest with lexemes built in Python (m030): what is stored is what a query
looks for, chunked appends keep every guarantee, and old stores are re-stamped."""

from __future__ import annotations

import random
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage import search_lexemes
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations
from memoryport.storage.sessions.query import And, Not, Or, Term, parse_query
from memoryport.storage.sessions.records import SessionRecord

pytestmark = pytest.mark.postgres

WORDS = {
    "https://example.com/docs/page.html?q=1": "example",
    "state-of-the-art tooling": "state-of-the-art",
    "version 3.14.159 shipped": "3.14.159",
    "the naïve café crème": "cafe",
    "Привет мир, hello": "привет",
    "e-mail ops@example.io now": "ops@example.io",
    "C:\\Users\\me\\file_name.txt": "file_name",
    "the user's favourite": "user's",
    "running jumped happily": "runs",
    "zq00042x and 2024-05-01": "2024-05-01",
}
"""Stored text -> a query that must find it (URLs, hyphens, numbers, scripts, stems)."""


@pytest.fixture
def pg_store(pg_server: pgserver.PgServer) -> Iterator[PostgresSessionStore]:
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema(), pool_size=2)
    yield store
    store.close()
    pgserver.drop_schema(pg_server.uri, store.schema)


def _ids(store: PostgresSessionStore, query: str) -> set[int]:
    return {h.message.id for h in store.search_messages(query, limit=50).hits}


def test_every_kind_of_word_is_found_at_once_by_the_same_lexemes(
    pg_store: PostgresSessionStore,
) -> None:
    sid = pg_store.create_session("s", source="cli").id
    ids = pg_store.append_messages(sid, [{"role": "user", "content": t} for t in WORDS])
    for (text, query), mid in zip(WORDS.items(), ids, strict=True):
        assert mid in _ids(pg_store, query), (text, query)
    assert ids[0] in _ids(pg_store, '"example com docs"')  # positions: a phrase
    assert ids[8] in _ids(pg_store, "jump*")
    assert _ids(pg_store, "tooling NOT state") == set()
    pg_store.check_index()  # every stored vector equals what the store would write


def test_a_tool_call_and_its_name_are_searchable(pg_store: PostgresSessionStore) -> None:
    sid = pg_store.create_session("s", source="cli").id
    [mid] = pg_store.append_messages(
        sid,
        [{"role": "assistant", "content": "", "tool_name": "web_search",
          "tool_calls": [{"function": {"name": "lookup", "arguments": "{\"q\": \"otters\"}"}}]}],
    )  # fmt: skip
    assert mid in _ids(pg_store, "otters") and mid in _ids(pg_store, "web_search")


def test_a_long_batch_keeps_order_counts_and_events_across_statements(
    pg_store: PostgresSessionStore,
) -> None:
    sid = pg_store.create_session("s", source="cli").id
    batch = [{"role": "user", "content": f"entry {i} walrus"} for i in range(300)]
    batch[250] = {"role": "user", "content": "we met yesterday", "timestamp": 1.7e9}
    ids = pg_store.append_messages(sid, batch)
    assert ids == sorted(ids) and len(set(ids)) == 300
    assert [m.content for m in pg_store.get_messages(sid)] == [m["content"] for m in batch]
    assert pg_store.get_session(sid).message_count == 300
    with psycopg.connect(pg_store._pool.conninfo) as conn:
        events = conn.execute(
            sql.SQL("SELECT message_id FROM {}.message_events").format(
                sql.Identifier(pg_store.schema)
            )
        ).fetchall()
    assert events == [(ids[250],)]
    assert len(pg_store.search_messages("walrus", limit=1000).hits) >= 299


def test_a_long_batch_for_an_unknown_session_writes_nothing(
    pg_store: PostgresSessionStore,
) -> None:
    with pytest.raises(SessionNotFound):
        pg_store.append_messages("nope", [{"role": "user", "content": "narwhal"}] * 200)
    assert pg_store.search_messages("narwhal").hits == []
    with psycopg.connect(pg_store._pool.conninfo) as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.messages").format(sql.Identifier(pg_store.schema))
        ).fetchone()
    assert row == (0,)


def test_huge_messages_fit_the_tsvector_limits(pg_store: PostgresSessionStore) -> None:
    sid = pg_store.create_session("s", source="cli").id
    many_words = "okapi " + " ".join(f"w{i}" for i in range(20_000)) + " okapi"
    distinct = "aardwolf " + " ".join(f"x{i:07d}" * 4 for i in range(40_000))  # > 1 MB
    giant_word = "quokka " + "z" * 5000
    ids = pg_store.append_messages(
        sid, [{"role": "user", "content": t} for t in (many_words, distinct, giant_word)]
    )
    assert ids[0] in _ids(pg_store, "okapi")
    assert ids[1] in _ids(pg_store, "aardwolf")
    assert ids[2] in _ids(pg_store, "quokka")


def test_queries_with_no_lexeme_or_only_negations_match_nothing() -> None:
    walrus = Term(tokens=("walrus",), text="walrus")
    assert search_lexemes.tsquery(Not(walrus)) == ""
    assert search_lexemes.tsquery(Or((walrus, Not(walrus)))) == ""
    assert search_lexemes.tsquery(And((Term(tokens=("_",), text="_"), walrus))) == "'walrus'"
    assert search_lexemes.tsquery(parse_query('"a/b"').root) == "('a' <-> 'b')"
    assert search_lexemes.tsquery(parse_query("photos*").root) == "'photo':*"
    assert search_lexemes.document(["Cafés, CAFÉ!", None, "tool"]) == "'cafe':1 'cafe':2 'tool':3"


def test_a_stored_document_lists_the_query_lexemes_of_its_text_in_order() -> None:
    """Short ASCII text takes a faster path to its literal (``bytes.translate`` and
    ``split``, no regex): every ASCII character, in random texts, must give exactly the
    lexemes a query gets from the same words (``text_lexemes``), numbered from 1."""
    rnd = random.Random(19)
    alphabet = [chr(c) for c in range(128)]
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 80))) for _ in range(3000)]
    texts += ["snake_case_name", "x" * 511, "y " * 255, "Running_JUMPED\tabs\x00", ""]
    for text in texts:
        literal = search_lexemes.document((text,))
        entries = [e.rsplit(":", 1) for e in literal.split(" ")] if literal else []
        assert [e[0].strip("'") for e in entries] == search_lexemes.text_lexemes(text), text
        assert [int(e[1]) for e in entries] == list(range(1, len(entries) + 1)), text


def test_m030_restamps_rows_written_before_it(pg_server: pgserver.PgServer) -> None:
    schema = pgserver.fresh_schema()
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        migrations.migrate(conn, schema, stop_before="m030_stored_lexemes")
        ident = sql.Identifier(schema)
        with conn.transaction():
            conn.execute("SELECT set_config(%s, '*', true)", (migrations.SCOPE_SETTING,))
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.sessions (id, source, started_at, last_active_at)"
                    " VALUES ('old', 'cli', 1, 1)"
                ).format(ident)
            )
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.messages (session_id, role, content, timestamp)"
                    " VALUES ('old', 'user', 'the naïve café at example.com', 1)"
                ).format(ident)
            )  # tsv computed by the server's generated column
    store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
    try:
        assert "m030_stored_lexemes" in store.applied_migrations()
        store.check_index()
        assert store.get_meta("search_lexemes") == search_lexemes.VERSION
        assert len(store.search_messages("naive cafe").hits) == 1
        assert len(store.search_messages('"example com"').hits) == 1
    finally:
        store.close()
        pgserver.drop_schema(pg_server.uri, schema)


def test_rebuild_index_restamps_a_vector_changed_behind_the_store(
    pg_store: PostgresSessionStore,
) -> None:
    sid = pg_store.create_session("s", source="cli").id
    [mid] = pg_store.append_messages(sid, [{"role": "user", "content": "pangolin"}])
    with psycopg.connect(pg_store._pool.conninfo, autocommit=True) as conn:
        conn.execute("SELECT set_config(%s, '*', false)", (migrations.SCOPE_SETTING,))
        conn.execute(
            sql.SQL("UPDATE {}.messages SET tsv = 'other' WHERE id = %s").format(
                sql.Identifier(pg_store.schema)
            ),
            (mid,),
        )
    with pytest.raises(StoreError, match="1 stale rows"):
        pg_store.check_index()
    pg_store.rebuild_index()
    pg_store.check_index()
    assert mid in _ids(pg_store, "pangolin")


def test_a_long_sync_lands_in_order_or_not_at_all(pg_store: PostgresSessionStore) -> None:
    def record(sid: str, parent: str | None = None) -> SessionRecord:
        return SessionRecord(id=sid, source="cli", started_at=1.0, last_active_at=1.0,
                             parent_session_id=parent)  # fmt: skip

    batch = [{"role": "user", "content": f"gecko {i}", "timestamp": 2.0 + i} for i in range(150)]
    with pytest.raises(SessionNotFound):
        pg_store.sync_sessions([(record("a"), batch), (record("b", parent="missing"), batch)])
    assert pg_store.search_messages("gecko").hits == [] and pg_store.list_sessions() == []
    report = pg_store.sync_sessions([(record("a"), batch), (record("b"), batch[:90])])
    assert (report.sessions_created, report.messages_created) == (2, 240)
    stored = pg_store.get_messages("a") + pg_store.get_messages("b")
    assert [m.content for m in stored] == [m["content"] for m in batch + batch[:90]]
    assert [m.id for m in stored] == sorted(m.id for m in stored)
    assert len(pg_store.search_messages("gecko", limit=500).hits) == 240
