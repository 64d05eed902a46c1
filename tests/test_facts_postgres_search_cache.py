"""The PostgreSQL fact search's per-generation cache (``storage.facts.postgres_search``)
changes nothing it returns: a store's cached search equals the uncached search
(``postgres_sql.search``) on the same schema after writes through the store, through
another store on the same database (another host), by plain SQL (as a role that
bypasses row-level security and as the user) for every trust floor and ``as_of``; it
equals the SQLite store's search over the same facts; another host's write is found on
the next search; the user's counter moves with fact writes only, and one search is one
round trip when nothing changed. Real server (tests/pgserver.py), real SQLite files."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import pq, sql

import pgserver
from memoryport.storage.facts import postgres_sql
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.records import Fact, FactInput
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex

pytestmark = pytest.mark.postgres

PEOPLE = ("Alice", "Bob", "Caroline", "Dmitri", "Elena")
THINGS = ("vim", "emacs", "pottery", "Paris", "Berlin", "tea", "coffee", "guitar", "rust",
          "python", "sqlite", "the museum", "the beach", "PostgreSQL 16")
VERBS = ("likes", "prefers", "lives in", "works on", "visited", "plays", "hates")
START = 1_700_000_000.0
DAY = 86_400.0
ASKS = ((6, 0.3, None), (3, 0.0, None), (10, 0.6, None), (6, 0.3, START + 50 * DAY))


@pytest.fixture
def schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh schema, dropped after the test."""
    name = pgserver.fresh_schema("fsc")
    yield name
    pgserver.drop_schema(pg_server.uri, name)


def _fact(rng: random.Random, at: float) -> FactInput:
    text = f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)}"
    if rng.random() < 0.3:
        text += f" and {rng.choice(THINGS)}"
    if rng.random() < 0.2:
        text += " last week"
    return FactInput(text, trust=rng.choice([None, 0.2, 0.5, 0.5, 0.8]),
                     valid_from=at if rng.random() < 0.5 else None, stated_at=at)


def _queries(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.sample([*PEOPLE, *THINGS, *VERBS, "what", "the", "does", "zebra",
                            "last week", "in November 2023", "yesterday"], rng.randint(1, 5))
        out.append(" ".join(words) + "?")
    return out


def _uncached(store: PostgresFactStore, query: str, limit: int, floor: float,
              as_of: float | None) -> list[Fact]:
    """The search before the cache, on the store's own connection."""
    return store._read(lambda _: postgres_sql.search(
        store._shared, query, limit=limit, min_trust=floor, as_of=as_of))


def _same_everywhere(store: PostgresFactStore, rng: random.Random, n: int = 30) -> int:
    compared = 0
    for query in _queries(rng, n):
        for limit, floor, as_of in ASKS:
            assert store.search(query, limit=limit, min_trust=floor, as_of=as_of) == \
                _uncached(store, query, limit, floor, as_of), query
            compared += 1
    return compared


def test_cached_search_equals_the_uncached_search_through_every_kind_of_write(
        pg_server: pgserver.PgServer, schema: str) -> None:
    rng = random.Random(19)
    store = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")
    other = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")  # another host
    for i in range(40):
        store.add(_fact(rng, START + i * DAY))
    assert _same_everywhere(store, rng) > 0
    for i in range(10):
        other.add(_fact(rng, START + (40 + i) * DAY))
    _same_everywhere(store, rng)
    live = [f.id for f in store.list_facts(limit=100)]
    for fact_id in live[:5]:
        other.feedback(fact_id, helpful=False)
    other.remove(live[5])
    other.update(live[6], content="Elena prefers the zebra museum")
    other.forget(live[7])
    other.mark_retrieved(live[8:12])
    _same_everywhere(store, rng)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:  # bypasses row security
        conn.execute(sql.SQL("UPDATE {}.facts SET retired_at = %s WHERE id = %s").format(
            sql.Identifier(schema)), (START, live[9]))
    _same_everywhere(store, rng, 10)
    store.close()
    other.close()


def test_postgres_search_equals_sqlite_search_over_the_same_facts(
        pg_server: pgserver.PgServer, schema: str, tmp_path: Path) -> None:
    """The same facts added to both backends: every query returns the same facts, in
    the same order, with the same scores and entities (searched twice: cold and cached)."""
    rng = random.Random(7)
    facts = [_fact(rng, START + i * DAY) for i in range(60)]
    lite = FactStore(tmp_path / "holographic.db", user_id="u1")
    pg = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")
    for item in facts:
        lite.add(item)
        pg.add(item)

    def key(found: list[Fact]) -> list[tuple[str, float, tuple[str, ...]]]:
        return [(f.content, round(f.score, 12), f.entities) for f in found]

    queries = _queries(rng, 40)
    for _ in range(2):
        for query in queries:
            for limit, floor, as_of in ASKS:
                assert key(pg.search(query, limit=limit, min_trust=floor, as_of=as_of)) == \
                    key(lite.search(query, limit=limit, min_trust=floor, as_of=as_of)), query
    lite.close()
    pg.close()


def test_another_hosts_write_is_found_on_the_next_search(
        pg_server: pgserver.PgServer, schema: str) -> None:
    """Two stores on one database: one searches (and caches), the other writes; the
    next search through the first sees each write."""
    reader = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")
    writer = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")
    stranger = PostgresFactStore(pg_server.uri, schema=schema, user_id="u2")
    assert reader.search("Where does Caroline live?", limit=6) == []
    assert reader.search("Where does Caroline live?", limit=6) == []
    added = writer.add(FactInput("Caroline lives in Lisbon")).fact
    assert [f.id for f in reader.search("Where does Caroline live?", limit=6)] == [added.id]
    assert [f.id for f in reader.search("Caroline", limit=6)] == [added.id]  # by entity
    stranger.add(FactInput("Caroline lives in Oslo"))  # another user: not seen
    assert [f.id for f in reader.search("Caroline", limit=6)] == [added.id]
    moved = writer.add(FactInput("Caroline lives in Porto")).fact  # supersedes Lisbon
    assert [f.content for f in reader.search("Caroline", limit=6)] == [moved.content]
    writer.forget(moved.id)
    assert reader.search("Caroline", limit=6) == []
    for store in (reader, writer, stranger):
        store.close()


def test_the_counter_moves_with_fact_writes_only_and_a_search_is_one_round_trip(
        pg_server: pgserver.PgServer, schema: str) -> None:
    store = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")
    turns = PostgresTurnIndex(pg_server.uri, schema=schema, dense=False)

    def counter() -> int:
        with psycopg.connect(pg_server.uri) as conn:
            row = conn.execute(sql.SQL("SELECT n FROM {}.fact_generation WHERE user_id = 'u1'")
                               .format(sql.Identifier(schema))).fetchone()
            return int(row[0]) if row else 0

    start = counter()
    turns.add_turns([TurnInput("s1", "user", "Alice likes vim", START, user_id="u1")])
    assert counter() == start  # the turn index shares the schema, not the counter
    added = store.add(FactInput("Alice likes vim")).fact
    after_add = counter()
    assert after_add > start
    store.mark_retrieved([added.id])
    assert counter() > after_add
    for _ in range(3):
        assert [f.id for f in store.search("what does Alice like?", limit=5)] == [added.id]
    syncs = _round_trips(store, lambda: store.search("what does Alice like?", limit=5))
    assert syncs == 1  # one pipeline: the ranking, then the counter (unchanged)
    store.add(FactInput("Bob owns a red kayak"))  # the counter moves: one snapshot, once
    assert _round_trips(store, lambda: store.search("what does Alice like?", limit=5)) > 1
    trips = [_round_trips(store, lambda: store.search("what does Alice like?", limit=5))
             for _ in range(3)]  # the second reads the user's links whole, once
    assert trips[-1] == 1, trips
    assert [f.id for f in store.search("what does Alice like?", limit=5)] == [added.id]
    store.close()
    turns.close()


def _round_trips(store: PostgresFactStore, call: Callable[[], object]) -> int:
    """How many times the client waited for the server during ``call``: the Sync and
    simple Query messages the store's connection sent (libpq's protocol trace)."""
    with tempfile.TemporaryFile("w+") as out:
        pgconn = store._pg.pgconn
        pgconn.trace(out.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            call()
        finally:
            pgconn.untrace()
        out.seek(0)
        sent = [line.split("\t")[2].strip() for line in out if line.startswith("F\t")]
        return sum(1 for kind in sent if kind in ("Sync", "Query"))


def test_an_app_role_granted_before_the_upgrade_writes_and_searches(
        pg_server: pgserver.PgServer, schema: str) -> None:
    """The owner set the store up at m003 and granted an application role the tables
    then; after the upgrade (m004 adds the counter, no new grant) the role still adds
    facts and searches, and another host's write is seen on its next search."""
    from psycopg.conninfo import make_conninfo

    from memoryport.storage.facts import postgres_schema
    from memoryport.storage.turns.postgres_schema import migrate as run_pg_migrations

    role = f"mp_fapp_{schema[-8:]}"
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        run_pg_migrations(conn, schema, postgres_schema.MIGRATIONS[:3],
                          postgres_schema.LEDGER_TABLE)
        fmt = {"s": sql.Identifier(schema), "r": sql.Identifier(role)}
        for statement in ("GRANT USAGE ON SCHEMA {s} TO {r}",
                          "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s}"
                          " TO {r}",
                          "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}"):
            conn.execute(sql.SQL(statement).format(**fmt))
    try:
        PostgresFactStore(pg_server.uri, schema=schema).close()  # the owner upgrades
        app = PostgresFactStore(make_conninfo(pg_server.uri, user=role), schema=schema,
                                user_id="u1")
        other = PostgresFactStore(pg_server.uri, schema=schema, user_id="u1")
        first = app.add(FactInput("Dmitri plays the cello")).fact
        assert [f.id for f in app.search("what does Dmitri play?", limit=5)] == [first.id]
        assert [f.id for f in app.search("what does Dmitri play?", limit=5)] == [first.id]
        second = other.add(FactInput("Dmitri plays chess on Sundays")).fact
        assert {f.id for f in app.search("what does Dmitri play?", limit=5)} == {
            first.id, second.id}
        app.close()
        other.close()
    finally:
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
