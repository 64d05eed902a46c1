"""The PostgreSQL fact store's per-user ``fact_generation`` counter follows the rows a
statement changed, not the connection's scope (migration ``m006_fact_generation_by_rows``,
issue 19): a role that bypasses row-level security (the test server's superuser, an
admin tool, ``memoryport import``/``storage copy``) scoped to another user, or to none,
that changes user B's facts moves B's counter, so B's cached search on another
connection (another host) sees the change; other users' counters stay put; ``TRUNCATE``
moves every user's. Roles under row-level security keep the scoped bump (the owner with
forced policies, an application role); a counter moves once per transaction (a savepoint
rolled back takes its bump along); a store upgraded from m005 keeps its counters.
Real server (tests/pgserver.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.storage.facts import postgres_schema, postgres_sql
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.postgres_transfer import FactGroup, FactLoader
from memoryport.storage.facts.records import Fact, FactInput
from memoryport.storage.turns.postgres_schema import SCOPE_SETTING
from memoryport.storage.turns.postgres_schema import migrate as run_pg_migrations

pytestmark = pytest.mark.postgres

QUERY = "Where does Caroline live?"


@pytest.fixture
def schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh schema, dropped after the test."""
    name = pgserver.fresh_schema("fgr")
    yield name
    pgserver.drop_schema(pg_server.uri, name)


def _counters(uri: str, schema: str) -> dict[str, int]:
    """Every user's ``fact_generation.n`` (read as the superuser)."""
    with psycopg.connect(uri) as conn:
        return {str(u): int(n) for u, n in conn.execute(sql.SQL(
            "SELECT user_id, n FROM {}.fact_generation").format(sql.Identifier(schema)))}


def _uncached(store: PostgresFactStore, query: str) -> list[Fact]:
    """The search without the cache, on the store's own connection."""
    return store._read(lambda _: postgres_sql.search(store._shared, query, limit=6,
                                                     min_trust=store.min_trust))


def _cached_twice(store: PostgresFactStore) -> list[Fact]:
    """Search twice (the second from the cache) and return the answer."""
    first = store.search(QUERY, limit=6)
    assert store.search(QUERY, limit=6) == first
    return first


def _index(store: PostgresFactStore) -> None:
    """Index the store's changed facts (their postings), as its next write would."""
    with store._pg.transaction():
        postgres_sql.index_dirty(store._shared)


def _admin(uri: str, scope: str | None) -> psycopg.Connection[Any]:
    """An autocommit superuser connection (bypasses row-level security) with the
    stores' scope setting set to ``scope`` (None: never set)."""
    conn = psycopg.connect(uri, autocommit=True)
    if scope is not None:
        conn.execute("SELECT set_config(%s, %s, false)", (SCOPE_SETTING, scope))
    return conn


@pytest.mark.parametrize("scope", ["=alice", None, "="])
def test_a_bypassing_write_under_another_scope_moves_the_rows_users_counter(
        pg_server: pgserver.PgServer, schema: str, scope: str | None) -> None:
    """Bob's search is cached; a superuser connection scoped to alice (or unscoped, or
    the no-user scope) retires, rewrites and adds bob's facts and unlinks his entities:
    each time bob's next search is the uncached search's, bob's counter moved and
    alice's did not."""
    alice = PostgresFactStore(pg_server.uri, schema=schema, user_id="alice")
    bob = PostgresFactStore(pg_server.uri, schema=schema, user_id="bob")
    alice.add(FactInput("Alice lives in Rome"))
    lisbon = bob.add(FactInput("Caroline lives in Lisbon")).fact
    porto = bob.add(FactInput("Caroline visited Porto in May")).fact
    assert {f.id for f in _cached_twice(bob)} == {lisbon.id, porto.id}
    s = sql.Identifier(schema)
    with _admin(pg_server.uri, scope) as admin:
        steps: list[tuple[str, tuple[Any, ...]]] = [
            ("UPDATE {s}.facts SET retired_at = 1.0 WHERE id = %s", (lisbon.id,)),
            ("UPDATE {s}.facts SET content = 'Caroline lives in Faro', indexed = false"
             " WHERE id = %s", (porto.id,)),
            ("INSERT INTO {s}.facts (user_id, content, content_hash, recorded_at, updated_at)"
             " VALUES ('bob', 'Caroline lives in Braga', 'h-braga', 2.0, 2.0)", ()),
            ("DELETE FROM {s}.fact_entities WHERE user_id = 'bob'", ()),
            ("DELETE FROM {s}.entities WHERE user_id = 'bob'", ()),
        ]
        for statement, params in steps:
            before = _counters(pg_server.uri, schema)
            admin.execute(sql.SQL(statement).format(s=s), params)
            after = _counters(pg_server.uri, schema)
            assert after["bob"] > before["bob"], statement
            assert after["alice"] == before["alice"], statement
            assert bob.search(QUERY, limit=6) == _uncached(bob, QUERY), statement
            _index(bob)  # the postings of a new or rewritten fact, as bob's next write
            assert bob.search(QUERY, limit=6) == _uncached(bob, QUERY), statement
    assert {f.content for f in bob.search(QUERY, limit=6)} == {"Caroline lives in Braga",
                                                                "Caroline lives in Faro"}
    alice.close()
    bob.close()


def test_one_statement_over_two_users_moves_both_counters_only(
        pg_server: pgserver.PgServer, schema: str) -> None:
    """A bypassing statement changing alice's and bob's rows moves their counters, not
    carol's; one that changes no row moves none."""
    for who in ("alice", "bob", "carol"):
        store = PostgresFactStore(pg_server.uri, schema=schema, user_id=who)
        store.add(FactInput(f"{who.title()} lives in Oslo"))
        store.close()
    before = _counters(pg_server.uri, schema)
    with _admin(pg_server.uri, "=carol") as admin:
        admin.execute(sql.SQL("UPDATE {}.facts SET trust_score = 0.9 WHERE user_id IN"
                              " ('alice', 'bob')").format(sql.Identifier(schema)))
        after = _counters(pg_server.uri, schema)
        assert (after["alice"], after["bob"], after["carol"]) == (
            before["alice"] + 1, before["bob"] + 1, before["carol"])
        admin.execute(sql.SQL("UPDATE {}.facts SET trust_score = 0.1 WHERE user_id = 'nobody'"
                              ).format(sql.Identifier(schema)))
        assert _counters(pg_server.uri, schema) == after


def test_truncate_moves_every_users_counter(pg_server: pgserver.PgServer,
                                            schema: str) -> None:
    """``TRUNCATE`` names no rows: every user's counter moves, and a cached search
    finds nothing after it."""
    bob = PostgresFactStore(pg_server.uri, schema=schema, user_id="bob")
    alice = PostgresFactStore(pg_server.uri, schema=schema, user_id="alice")
    alice.add(FactInput("Alice lives in Rome"))
    alice.close()
    bob.add(FactInput("Caroline lives in Lisbon"))
    assert len(_cached_twice(bob)) == 1
    before = _counters(pg_server.uri, schema)
    with _admin(pg_server.uri, None) as admin:
        admin.execute(sql.SQL("TRUNCATE {s}.facts, {s}.entities, {s}.fact_entities,"
                              " {s}.fact_terms, {s}.fact_stats").format(
            s=sql.Identifier(schema)))
    after = _counters(pg_server.uri, schema)
    assert all(after[u] > before[u] for u in before), (before, after)
    assert bob.search(QUERY, limit=6) == []
    bob.close()


def test_an_import_of_two_users_moves_each_users_counter(
        pg_server: pgserver.PgServer, schema: str) -> None:
    """``FactLoader`` (``memoryport import``/``storage copy`` into PostgreSQL) writes
    alice's and bob's rows in one transaction on one connection, as the superuser:
    bob's cached search on another connection finds his imported fact, and carol's
    counter (no rows imported) stays put."""
    bob = PostgresFactStore(pg_server.uri, schema=schema, user_id="bob")
    carol = PostgresFactStore(pg_server.uri, schema=schema, user_id="carol")
    carol.add(FactInput("Carol lives in Bergen"))
    carol.close()
    kept = bob.add(FactInput("Caroline lives in Lisbon")).fact
    assert [f.id for f in _cached_twice(bob)] == [kept.id]
    before = _counters(pg_server.uri, schema)

    def fact(fid: int, user: str, text: str) -> dict[str, Any]:
        return {"id": fid, "user_id": user, "content": text, "content_hash": f"h{fid}",
                "category": "general", "recorded_at": 5.0, "updated_at": 5.0,
                "trust_score": 0.5}

    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        loader = FactLoader(conn, schema, source="test")
        assert not loader.keep_ids  # the schema holds facts: merged, new ids
        loader.load([FactGroup("alice", facts=[fact(1, "alice", "Alice lives in Rome")]),
                     FactGroup("bob", facts=[fact(2, "bob", "Caroline lives in Porto now")])])
    after = _counters(pg_server.uri, schema)
    assert after["bob"] > before["bob"] and after["carol"] == before["carol"]
    assert after.get("alice", 0) > 0
    found = bob.search(QUERY, limit=6)
    assert found == _uncached(bob, QUERY)
    assert "Caroline lives in Porto now" in [f.content for f in found]
    bob.close()


@pytest.fixture
def owner(pg_server: pgserver.PgServer) -> Iterator[str]:
    """The DSN of a fresh login role that may create schemas (the policies are forced,
    so they bind it)."""
    name = f"mp_gen_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(conn.info.dbname), sql.Identifier(name)))
    yield make_conninfo(pg_server.uri, user=name)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_the_owner_under_forced_policies_bumps_its_scope_and_truncates(
        pg_server: pgserver.PgServer, owner: str, schema: str) -> None:
    """The schema's owner (not a superuser: the forced policies bind it) writes through
    the stores and by plain SQL in its scope: only that user's counter moves, and
    another user's cached search is untouched; its ``TRUNCATE`` moves every counter."""
    alice = PostgresFactStore(owner, schema=schema, user_id="alice")
    bob = PostgresFactStore(owner, schema=schema, user_id="bob")
    bob.add(FactInput("Caroline lives in Lisbon"))
    alice.add(FactInput("Alice lives in Rome"))
    assert len(_cached_twice(bob)) == 1
    before = _counters(pg_server.uri, schema)
    visit = alice.add(FactInput("Alice visited Caroline in Lisbon")).fact
    alice.forget(visit.id)  # its links go by the foreign key's cascade
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("SELECT set_config(%s, '=alice', false)", (SCOPE_SETTING,))
        conn.execute(sql.SQL("UPDATE {}.facts SET trust_score = 0.7").format(
            sql.Identifier(schema)))  # the policy limits it to alice's rows
    after = _counters(pg_server.uri, schema)
    assert after["alice"] > before["alice"] and after["bob"] == before["bob"]
    assert len(_cached_twice(bob)) == 1
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(sql.SQL("TRUNCATE {s}.facts, {s}.entities, {s}.fact_entities,"
                             " {s}.fact_terms, {s}.fact_stats").format(
            s=sql.Identifier(schema)))
    final = _counters(pg_server.uri, schema)
    assert final["alice"] > after["alice"] and final["bob"] > after["bob"]
    assert bob.search(QUERY, limit=6) == []
    alice.close()
    bob.close()


def test_a_store_upgraded_from_m005_keeps_its_counters_and_counts_by_rows(
        pg_server: pgserver.PgServer, schema: str) -> None:
    """A schema at m005 (m004's scope triggers) with a user's counter: the upgrade
    replaces the triggers, keeps the counter, and a bypassing write under another scope
    moves the rows' user's."""
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        run_pg_migrations(conn, schema, postgres_schema.MIGRATIONS[:5],
                          postgres_schema.LEDGER_TABLE)
        conn.execute("SELECT set_config(%s, '=bob', false)", (SCOPE_SETTING,))
        conn.execute(sql.SQL("INSERT INTO {}.facts (user_id, content, content_hash,"
                             " recorded_at, updated_at) VALUES ('bob', 'Caroline lives in"
                             " Lisbon', 'h1', 1.0, 1.0)").format(sql.Identifier(schema)))
    old = _counters(pg_server.uri, schema)["bob"]
    bob = PostgresFactStore(pg_server.uri, schema=schema, user_id="bob")  # upgrades
    assert _counters(pg_server.uri, schema)["bob"] == old
    _index(bob)
    old = _counters(pg_server.uri, schema)["bob"]
    with psycopg.connect(pg_server.uri) as conn:
        triggers = sorted(str(r[0]) for r in conn.execute(
            "SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN"
            " pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND"
            " tgname LIKE '%%generation%%'", (schema,)))
    assert triggers == sorted(f"{t}_generation_{e}" for t in ("facts", "entities",
                                                                "fact_entities")
                              for e in ("insert", "update", "delete", "truncate"))
    assert len(_cached_twice(bob)) == 1
    with _admin(pg_server.uri, "=alice") as admin:
        admin.execute(sql.SQL("UPDATE {}.facts SET retired_at = 2.0").format(
            sql.Identifier(schema)))
    assert _counters(pg_server.uri, schema)["bob"] == old + 1
    assert bob.search(QUERY, limit=6) == []
    bob.close()


@pytest.mark.parametrize("who", ["owner", "superuser"])
def test_one_bump_per_user_and_transaction_and_savepoints_undo_theirs(
        pg_server: pgserver.PgServer, owner: str, schema: str, who: str) -> None:
    """Many statements writing bob's facts in one transaction move his counter once (its
    readers see the writes and the bump together at commit); a savepoint rolled back
    takes its bump and its mark with it, so the next statement bumps again; each
    transaction bumps anew. For a role under row-level security (the owner, scoped: the
    scoped bump) and a bypassing one (the superuser scoped to alice: the rows' users)."""
    dsn = owner if who == "owner" else pg_server.uri
    bob = PostgresFactStore(dsn, schema=schema, user_id="bob")
    ids = [bob.add(FactInput(f"Caroline visited town number {n} to live there")).fact.id
           for n in range(3)]
    assert len(_cached_twice(bob)) == 3
    s = sql.Identifier(schema)
    update = sql.SQL("UPDATE {}.facts SET retrieval_count = retrieval_count + 1"
                     " WHERE id = %s").format(s)
    retire = sql.SQL("UPDATE {}.facts SET retired_at = 1.0 WHERE id = %s").format(s)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config(%s, %s, false)",
                     (SCOPE_SETTING, "=bob" if who == "owner" else "=alice"))
        start = _counters(pg_server.uri, schema)["bob"]
        with conn.transaction():
            for _ in range(5):
                for fact_id in ids:
                    conn.execute(update, (fact_id,))
            conn.execute(retire, (ids[0],))
        assert _counters(pg_server.uri, schema)["bob"] == start + 1
        assert bob.search(QUERY, limit=6) == _uncached(bob, QUERY)
        assert ids[0] not in [f.id for f in bob.search(QUERY, limit=6)]
        with conn.transaction():
            with pytest.raises(psycopg.errors.RaiseException), conn.transaction():
                conn.execute(update, (ids[1],))  # in a savepoint: write and bump undone
                conn.execute("DO $$ BEGIN RAISE 'undo'; END $$")
            conn.execute(retire, (ids[1],))  # bumps again
        assert _counters(pg_server.uri, schema)["bob"] == start + 2
        assert [f.id for f in bob.search(QUERY, limit=6)] == [ids[2]]
        conn.execute(update, (ids[2],))  # a transaction of its own
        assert _counters(pg_server.uri, schema)["bob"] == start + 3
    bob.close()
