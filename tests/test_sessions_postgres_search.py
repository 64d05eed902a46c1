"""PostgreSQL search ranks like SQLite: context re-rank, bounded candidates, literal text.

Each test fills a SQLite store and a PostgreSQL store with the same messages and runs the
same queries on both (BM25 there, ``ts_rank_cd`` here: the test corpora are built so both
scores order the same messages the same way).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.postgres.rank import RELEVANCE_WINDOW
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

pytestmark = pytest.mark.postgres


@pytest.fixture
def both(pg_server: pgserver.PgServer, tmp_path: Path) -> Iterator[list[SessionStore]]:
    pg = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema("rank"), pool_size=2)
    lite = SQLiteSessionStore(tmp_path / "rank.db")
    yield [lite, pg]
    lite.close()
    pg.close()
    pgserver.drop_schema(pg_server.uri, pg.schema)


def _fill(stores: list[SessionStore], sessions: dict[str, list[dict[str, Any]]]) -> None:
    for store in stores:
        for sid, messages in sessions.items():
            store.create_session(sid, source="cli")
            store.append_messages(sid, messages)


def _analyze(pg_server: pgserver.PgServer, store: SessionStore) -> None:
    """Fresh statistics, as autovacuum would soon give (the plans read them)."""
    assert isinstance(store, PostgresSessionStore)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("ANALYZE {}.messages").format(sql.Identifier(store.schema)))


def _said(speaker: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "metadata": {"speaker": speaker}}


def test_the_context_rerank_puts_the_named_speaker_first_on_both_backends(
    both: list[SessionStore],
) -> None:
    _fill(
        both,
        {
            "a": [_said("Melanie", "painting painting all weekend"), _said("Melanie", "hiking")],
            "b": [_said("Caroline", "the lake was cold"), _said("Caroline", "painting calms me")],
        },
    )
    for store in both:
        asked = store.search_messages("What did Caroline say about painting?").hits
        assert [h.message.content for h in asked] == [
            "painting calms me",
            "painting painting all weekend",
        ], type(store).__name__
        plain = store.search_messages("painting").hits  # one word: text rank alone
        assert [h.message.content for h in plain] == [
            "painting painting all weekend",
            "painting calms me",
        ], type(store).__name__


def test_a_neighbour_that_matches_lifts_a_short_answer_on_both_backends(
    both: list[SessionStore],
) -> None:
    _fill(
        both,
        {
            "q": [
                _said("Jon", "did you go to the concert in the park"),
                _said("Gina", "yes the concert was loud"),
            ],
            "r": [_said("Jon", "a concert poster"), _said("Jon", "nothing else")],
        },
    )
    orders = [
        [h.message.content for h in s.search_messages("Did Gina enjoy the concert?").hits]
        for s in both
    ]
    assert orders[0] == orders[1]
    assert orders[1][0] == "yes the concert was loud"


def test_common_words_rank_the_newest_window_and_walk_by_time_like_sqlite(
    pg_server: pgserver.PgServer, both: list[SessionStore]
) -> None:
    rng = random.Random(5)
    total = RELEVANCE_WINDOW * 4 + 1000  # past the estimate that switches to range walks
    doubles = {300 + 40 * i for i in range(10)} | {total - 40 * (i + 1) for i in range(10)}
    stamps = [1.6e9 + rng.uniform(0, 1e7) for _ in range(total)]
    messages = [
        {
            "role": "user",
            "content": ("common common" if i in doubles else "common")
            + (" what" if i % 2 else "")
            + (" so what? fine" if i == 120 else f" word{i}"),
            "timestamp": stamps[i],
        }
        for i in range(total)
    ]
    _fill(both, {f"s{n}": messages[n * 500 : (n + 1) * 500] for n in range(total // 500 + 1)})
    _analyze(pg_server, both[1])
    newest = sorted(range(total), key=lambda i: (stamps[i], i), reverse=True)[:20]
    for store in both:
        name = type(store).__name__
        ranked = store.search_messages("common", limit=10).hits
        # the newest window holds ten "common common" messages; older ones wait outside
        assert {h.message.content.split()[-1] for h in ranked} == {
            f"word{i}" for i in sorted(doubles)[10:]
        }, name
        by_time = store.search_messages("common", sort="newest", limit=20).hits
        assert [h.message.content.split()[-1] for h in by_time] == [f"word{i}" for i in newest], (
            name
        )
        literal = store.search_messages("what?", limit=3).hits
        assert literal[0].message.content.endswith("so what? fine"), name


def test_searches_are_planned_afresh_without_jit(pg_server: pgserver.PgServer) -> None:
    """psycopg would prepare a query run five times, and PostgreSQL's generic plan cannot
    see how common a word is; JIT compiles for hundreds of ms. Neither on these
    connections."""
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema("plan"), pool_size=1)
    try:
        store.create_session("s", source="cli")
        store.append_messages("s", [{"role": "user", "content": "plans are fresh"}] * 3)
        for _ in range(8):
            assert store.search_messages("plans").hits
        prepared, jit = store._read(
            lambda c: (
                c.execute(
                    "SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql"
                ).fetchone(),
                c.execute("SHOW jit").fetchone(),
            )
        )
        assert jit == ("off",)
        assert prepared == (1,)  # the append statement only, prepared on purpose
    finally:
        store.close()
        pgserver.drop_schema(pg_server.uri, store.schema)


@pytest.fixture
def role_dsn(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh ordinary login role (so the row-level security policies apply to it)."""
    name = f"mp_rank_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(conn.info.dbname), sql.Identifier(name)
            )
        )
    yield make_conninfo(pg_server.uri, user=name)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_store_bound_by_the_policies_finds_what_the_scoped_search_finds(
    pg_server: pgserver.PgServer, role_dsn: str
) -> None:
    """A user-bound store (rows filtered by row-level security, the walk sized to the
    user's share) returns the same hits as an unbound store's search scoped to that user."""
    schema = pgserver.fresh_schema("bound")
    admin = PostgresSessionStore(role_dsn, schema=schema, pool_size=1)
    total = RELEVANCE_WINDOW * 4 + 1000
    for n in range(total // 500):
        user = "a" if n % 3 else "b"
        admin.create_session(f"s{n}", source="cli", user_id=user)
        admin.append_messages(
            f"s{n}",
            [
                {"role": "user", "content": f"{'common ' * (1 + (i % 97 == 0))}n{n}m{i}"}
                for i in range(500)
            ]
            if n < total // 500 - 1
            else [
                {"role": "user", "content": f"common common n{n}m{i}" if i % 50 == 0 else "x"}
                for i in range(500)
            ],
        )
    _analyze(pg_server, admin)
    bound = PostgresSessionStore(role_dsn, schema=schema, user_id="a", pool_size=1)
    try:
        for sort in ("relevance", "newest"):
            scoped = admin.search_messages("common", user_id="a", sort=sort, limit=8).hits
            own = bound.search_messages("common", sort=sort, limit=8).hits
            assert [h.message.id for h in own] == [h.message.id for h in scoped], sort
            assert len(own) == 8 and {h.message.session_id for h in own} <= {
                f"s{n}" for n in range(total // 500) if n % 3
            }
    finally:
        bound.close()
        admin.close()
        pgserver.drop_schema(pg_server.uri, schema)
