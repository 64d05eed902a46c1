"""The holographic stores on PostgreSQL: row-level security, a writer killed mid-write, and
several processes opening a new store at once.

The server's test user is a superuser, which row-level security never applies to, so
the isolation tests connect as ordinary roles: the tables' owner (the policies are
``FORCE``d, so they bind the owner too) and an application role with table privileges.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.errors import ToolArgumentError
from memoryport.storage.facts import postgres_schema as fact_schema
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.records import FactInput
from memoryport.storage.turns import TurnInput
from memoryport.storage.turns import postgres_schema as turn_schema
from memoryport.storage.turns.postgres import PostgresTurnIndex

pytestmark = pytest.mark.postgres

TABLES = turn_schema.TABLES + fact_schema.TABLES


@pytest.fixture
def roles(pg_server: pgserver.PgServer) -> Iterator[dict[str, str]]:
    """DSNs of two fresh login roles (``owner`` may create schemas; ``app`` gets table
    privileges) and a fresh schema name."""
    names = {kind: f"mp_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app")}
    schema = pgserver.fresh_schema("hrls")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(conn.info.dbname), sql.Identifier(names["owner"])))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    dsns = {kind: make_conninfo(pg_server.uri, user=name) for kind, name in names.items()}
    yield {**dsns, "schema": schema, "app_role": names["app"]}
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _fill(dsn: str, schema: str, who: str) -> dict[str, int]:
    """Turns (with a time expression) and facts (one superseded) of user ``who``."""
    with PostgresTurnIndex(dsn, schema=schema, dense=False) as turns:
        turns.add_turns([TurnInput("s1", who.title(), f"{who} saw a zebra yesterday", 1.7e9,
                                   f"{who}-1", user_id=who),
                         TurnInput("s1", "Friend", f"the zebra of {who} is secret", 1.7e9,
                                   f"{who}-2", user_id=who)])
    store = PostgresFactStore(dsn, schema=schema, user_id=who)
    first = store.add(FactInput(f"{who.title()} lives in Zebraville", speaker=who.title()))
    store.add(FactInput(f"{who.title()} lives in Secretown", speaker=who.title()))
    store.close()
    return {"fact": first.fact.id}


def _grant_app(owner_dsn: str, schema: str, app_role: str) -> None:
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        fmt = {"s": sql.Identifier(schema), "r": sql.Identifier(app_role)}
        for statement in (
            "GRANT USAGE ON SCHEMA {s} TO {r}",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        ):
            conn.execute(sql.SQL(statement).format(**fmt))


def _select_all(dsn: str, schema: str, scope: str | None) -> dict[str, list[tuple[object, ...]]]:
    """``SELECT *`` of every table on a fresh connection with ``scope`` set as the stores
    set it (None: not set at all)."""
    with psycopg.connect(dsn) as conn:
        if scope is not None:
            conn.execute("SELECT set_config(%s, %s, false)", (turn_schema.SCOPE_SETTING, scope))
        out = {}
        for table in TABLES:
            cur = conn.execute(sql.SQL("SELECT * FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(table)))
            names = [c.name for c in cur.description or ()]
            out[table] = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        return out  # type: ignore[return-value]


def test_select_star_sees_only_the_scoped_user(roles: dict[str, str]) -> None:
    """For the owner and an application role alike: no scope, a bare user id or another
    scope's value show zero rows of every table; ``=alice`` shows alice's rows only."""
    schema = roles["schema"]
    _fill(roles["owner"], schema, "alice")
    _fill(roles["owner"], schema, "bob")
    _grant_app(roles["owner"], schema, roles["app_role"])
    for dsn in (roles["owner"], roles["app"]):
        for scope in (None, "", "alice", "=", "=carol", "*"):
            assert all(not rows for rows in _select_all(dsn, schema, scope).values()), scope
        seen = _select_all(dsn, schema, "=alice")
        for table in ("turns", "turn_terms", "turn_blocks", "block_terms", "term_stats",
                      "turn_events", "facts", "entities", "fact_entities", "fact_terms",
                      "fact_stats", "fact_revisions"):
            assert seen[table], table
        for table, rows in seen.items():
            assert {row["user_id"] for row in rows} <= {"alice"}, table  # type: ignore[index]
        text = repr(seen)
        assert "bob" not in text and "Secretown" in text


def test_every_store_query_stays_in_its_scope(roles: dict[str, str]) -> None:
    """Through the stores' own queries (an application role): alice's store finds none of
    bob's facts or turns, by search, entity, listing, history or id."""
    schema = roles["schema"]
    _fill(roles["owner"], schema, "alice")
    bob = _fill(roles["owner"], schema, "bob")
    _grant_app(roles["owner"], schema, roles["app_role"])
    store = PostgresFactStore(roles["app"], schema=schema, user_id="alice")
    try:
        found = [
            *store.search("bob lives Zebraville Secretown"), *store.probe("bob"),
            *store.related("bob")[1], *(f for f, _ in store.reason(["bob", "zebraville"])),
            *store.list_facts(include_retired=True, limit=100),
            *(p.newer for p in store.contradictions()), *(p.older for p in store.contradictions()),
        ]
        assert found and all(f.user_id == "alice" for f in found)
        assert store.get(bob["fact"]) is None and store.revisions(bob["fact"]) == []
        with pytest.raises(ToolArgumentError):
            store.chain(bob["fact"])
        with pytest.raises(ToolArgumentError):
            store.feedback(bob["fact"], helpful=False)
        assert not store.forget(bob["fact"])
        assert store.count(include_retired=True) == 2
    finally:
        store.close()
    with PostgresTurnIndex(roles["app"], schema=schema, dense=False) as turns:
        hits = turns.search("zebra secret yesterday", user_id="alice", limit=50)
        assert {h.source_id for h in hits} == {"alice-1", "alice-2"}
        assert turns.count("alice") == 2 and turns.count() == 0


def test_a_scoped_connection_cannot_write_another_users_rows(roles: dict[str, str]) -> None:
    """``WITH CHECK``: scoped to alice, inserting a row for bob fails."""
    schema = roles["schema"]
    _fill(roles["owner"], schema, "alice")
    _grant_app(roles["owner"], schema, roles["app_role"])
    with psycopg.connect(roles["app"]) as conn:
        conn.execute("SELECT set_config(%s, '=alice', false)", (turn_schema.SCOPE_SETTING,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(sql.SQL(
                "INSERT INTO {}.term_stats(user_id, kind, docs, tokens)"
                " VALUES ('bob', 'turn', 1, 1)").format(sql.Identifier(schema)))


_WRITER = """
import sys
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.records import FactInput
from memoryport.storage.turns import TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex
dsn, schema, base = sys.argv[1], sys.argv[2], int(sys.argv[3])
turns = PostgresTurnIndex(dsn, schema=schema, dense=False)
facts = PostgresFactStore(dsn, schema=schema, user_id="w")
print("ready", flush=True)
n = base
while True:
    turns.add_turns([TurnInput(f"s{n % 3}", "Ann", f"turn {n} about topic{n % 7} last Friday",
                               1.7e9 + n, f"t{n}", user_id="w") for _ in range(5)])
    facts.add_many([FactInput(f"Person{n} works at Company{n} Corp in City{n}"),
                    FactInput(f"Person{n} lives in City{n + 1}")])
    n += 1
"""


def _consistent(dsn: str, schema: str) -> tuple[int, int]:
    """Check every derived row against the rows it comes from; return (turns, facts)."""
    with psycopg.connect(dsn) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        one = lambda q: conn.execute(q).fetchone()  # noqa: E731
        turns, tokens = one("SELECT count(*), coalesce(sum(length), 0) FROM turns")
        assert one("SELECT docs, tokens FROM term_stats WHERE kind = 'turn'") in (
            None, (turns, tokens)) and (turns == 0 or one("SELECT 1 FROM term_stats"))
        assert one("SELECT count(*) FROM turns t WHERE length <> (SELECT coalesce(sum(tf), 0)"
                   " FROM turn_terms p WHERE p.turn_id = t.id)") == (0,)
        assert one("SELECT count(*) FROM turn_blocks b WHERE length <> (SELECT"
                   " coalesce(sum(t.length), 0) FROM turns t WHERE t.user_id = b.user_id AND"
                   " t.session_id = b.session_id AND t.position / 64 = b.block)") == (0,)
        assert one("SELECT coalesce(sum(tf), 0) FROM block_terms") == one(
            "SELECT coalesce(sum(tf), 0) FROM turn_terms")
        assert one("SELECT count(*) FROM turns WHERE temporal = 1 AND id NOT IN"
                   " (SELECT turn_id FROM turn_events)") == (0,)
        facts, fact_tokens = one("SELECT count(*), coalesce(sum(length), 0) FROM facts")
        assert one("SELECT count(*) FROM facts WHERE NOT indexed") == (0,)
        assert one("SELECT docs, tokens FROM fact_stats") in (None, (facts, fact_tokens))
        assert one("SELECT count(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM"
                   " fact_revisions r WHERE r.fact_id = f.id AND r.action = 'add')") == (0,)
        assert one("SELECT count(*) FROM facts f WHERE content LIKE 'Person%%Corp%%' AND"
                   " (SELECT count(*) FROM fact_entities e WHERE e.fact_id = f.id) < 3") == (0,)
        return int(turns), int(facts)


def test_a_writer_killed_mid_write_leaves_nothing_half_written(
        pg_server: pgserver.PgServer) -> None:
    """SIGKILL a process appending turns and facts, three times: every turn has its
    postings, blocks, counts and events; every fact its postings, counts, entities and
    first revision; each round stored more."""
    schema = pgserver.fresh_schema("hkill")
    try:
        PostgresTurnIndex(pg_server.uri, schema=schema, dense=False).close()
        PostgresFactStore(pg_server.uri, schema=schema).close()
        counts = (0, 0)
        for round_ in range(3):
            proc = subprocess.Popen(
                [sys.executable, "-c", _WRITER, pg_server.uri, schema, str(round_ * 100_000)],
                stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(0.3 * (round_ + 1))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            after = _consistent(pg_server.uri, schema)
            assert after[0] > counts[0] and after[1] > counts[1]
            counts = after
    finally:
        pgserver.drop_schema(pg_server.uri, schema)


_OPENER = """
import sys
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.turns.postgres import PostgresTurnIndex
PostgresTurnIndex(sys.argv[1], schema=sys.argv[2], dense=False).close()
PostgresFactStore(sys.argv[1], schema=sys.argv[2]).close()
print("ok")
"""


def test_several_hosts_opening_a_new_store_migrate_it_once(
        pg_server: pgserver.PgServer) -> None:
    """Four processes open the same new schema at once: all succeed, each migration is
    recorded once (the advisory lock serialises them)."""
    schema = pgserver.fresh_schema("hopen")
    try:
        procs = [subprocess.Popen([sys.executable, "-c", _OPENER, pg_server.uri, schema],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(4)]
        results = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, results
        with psycopg.connect(pg_server.uri) as conn:
            for table, migrations in ((turn_schema.LEDGER_TABLE, turn_schema.MIGRATIONS),
                                      (fact_schema.LEDGER_TABLE, fact_schema.MIGRATIONS)):
                names = [r[0] for r in conn.execute(sql.SQL("SELECT name FROM {}.{}").format(
                    sql.Identifier(schema), sql.Identifier(table)))]
                assert sorted(names) == sorted(n for n, _ in migrations)
    finally:
        pgserver.drop_schema(pg_server.uri, schema)


_APPENDER = """
import sys
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.records import FactInput
from memoryport.storage.turns import TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex
dsn, schema, me = sys.argv[1], sys.argv[2], int(sys.argv[3])
turns = PostgresTurnIndex(dsn, schema=schema, dense=False)
facts = PostgresFactStore(dsn, schema=schema, user_id="team")
for n in range(15):
    turns.add_turns([TurnInput("shared", f"host{me}", f"host{me} note {n} about the launch",
                               1.7e9 + n, f"h{me}-{n}", user_id="team")] * 2)
    facts.add(FactInput("The launch date is Friday"))
    facts.add(FactInput(f"Host{me} owns task {n}"))
print("done")
"""
_SEARCHER = """
import sys
from memoryport.storage.turns.postgres import PostgresTurnIndex
turns = PostgresTurnIndex(sys.argv[1], schema=sys.argv[2], dense=False)
for _ in range(25):
    for hit in turns.search("launch note", user_id="team", limit=10):
        assert hit.text.startswith(hit.speaker) and hit.source_id.startswith("h"), hit
print("done")
"""


def test_hosts_appending_to_one_session_while_others_search(
        pg_server: pgserver.PgServer) -> None:
    """Four processes append turns to one user's session and add facts (one of them the
    same fact) while two search: every append lands at its own position, the shared fact
    is stored once, every search sees whole turns, and the counts add up."""
    schema = pgserver.fresh_schema("hconc")
    try:
        PostgresTurnIndex(pg_server.uri, schema=schema, dense=False).close()
        PostgresFactStore(pg_server.uri, schema=schema).close()
        procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, pg_server.uri, schema,
                                   str(me)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for me in range(4)]
        procs += [subprocess.Popen([sys.executable, "-c", _SEARCHER, pg_server.uri, schema],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for _ in range(2)]
        results = [p.communicate(timeout=300) for p in procs]
        assert [r[0].strip() for r in results] == ["done"] * 6, results
        with psycopg.connect(pg_server.uri) as conn:
            positions = [r[0] for r in conn.execute(sql.SQL(
                "SELECT position FROM {}.turns WHERE session_id = 'shared' ORDER BY position"
            ).format(sql.Identifier(schema)))]
            launch = conn.execute(sql.SQL(
                "SELECT count(*) FROM {}.facts WHERE content = 'The launch date is Friday'"
            ).format(sql.Identifier(schema))).fetchone()
        assert positions == list(range(4 * 15 * 2))
        assert launch == (1,)
        assert _consistent(pg_server.uri, schema) == (120, 61)
    finally:
        pgserver.drop_schema(pg_server.uri, schema)
