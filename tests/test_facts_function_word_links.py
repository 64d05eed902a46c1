"""Migration ``m005_function_word_links`` (SQLite and PostgreSQL): a store an older version
wrote, with entity links from a function word ("The staging database is ..." -> entity
"the"; "It's raining in Paris" -> entity "it"), opened with the current code loses
exactly those links (and the entities left without one), recall stops boosting the fact
for every question holding the word, and a second open changes nothing. On PostgreSQL
as an ordinary role (row-level security applies), and with two processes opening the old
store at once. Real SQLite files and a real server (tests/pgserver.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.storage.facts import migrations, postgres_schema, postgres_sql, read, write
from memoryport.storage.facts.entities import extract_entities
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.records import FactInput
from memoryport.storage.facts.store import FactStore
from memoryport.storage.sessions import migrate as runner
from memoryport.storage.sqlite_ledger import ConnLedger
from memoryport.storage.turns.postgres_schema import migrate as run_pg_migrations
from memoryport.storage.turns.postgres_schema import set_scope

STAGING = "The staging database is PostgreSQL 16."
RAIN = "It's raining in Paris today."
PLAIN = "Alice works at Initech."
THE_QUESTION = "What did we decide about the sqlite schema?"
IT_QUESTION = "Is it done yet?"
OLD_LINKS = (("the", STAGING), ("it", RAIN))
"""(entity key, fact) links an older writer made and the current one does not."""


def test_the_current_writer_links_no_function_word() -> None:
    """The premise: the current extractor names neither "the" nor "it" for these facts
    (so the links below are what only an older version wrote)."""
    for key, text in OLD_LINKS:
        triple = write.triple_for(text, "user")
        assert key not in {e.key for e in write.entities_for(text, triple)}
    assert [e.key for e in extract_entities(RAIN)] == ["paris"]


# ---------------------------------------------------------------------------- SQLite


def _old_sqlite(path: Path) -> dict[str, int]:
    """A fact store at m004 (before the cleanup) holding two users' facts and the
    function-word links an older writer made; the fact ids by content."""
    conn = sqlite3.connect(path, isolation_level=None)
    runner.migrate(migrations.MIGRATIONS[:4], ConnLedger(conn, migrations.LEDGER_TABLE))
    assert migrations.pending(conn) == ["m005_function_word_links"]
    ids: dict[str, int] = {}
    conn.execute("BEGIN")
    for user in ("", "bob"):
        for text in (STAGING, RAIN, PLAIN):
            triple = write.triple_for(text, "user")
            fact_id = write.insert_fact(conn, user, FactInput(text), triple, 0.5)
            write.link_entities(conn, user, fact_id, text, triple)
            ids[user + text] = fact_id
        for key, text in OLD_LINKS:  # what the old writer added
            conn.execute("INSERT OR IGNORE INTO entities(user_id, key, name, kind, created_at)"
                         " VALUES (?, ?, ?, 'person', 0)", (user, key, key))
            conn.execute("INSERT INTO fact_entities(fact_id, entity_id) SELECT ?, id"
                         " FROM entities WHERE user_id = ? AND key = ?",
                         (ids[user + text], user, key))
    conn.execute("COMMIT")
    conn.close()
    return ids


def _sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {
            "facts": conn.execute("SELECT * FROM facts ORDER BY id").fetchall(),
            "entities": conn.execute("SELECT * FROM entities ORDER BY id").fetchall(),
            "links": conn.execute("SELECT fe.fact_id, e.user_id, e.key FROM fact_entities fe"
                                  " JOIN entities e ON e.id = fe.entity_id"
                                  " ORDER BY 1, 3").fetchall(),
            "revisions": conn.execute("SELECT * FROM fact_revisions").fetchall(),
            "fts": conn.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'staging'"
                                ).fetchall(),
            "generation": conn.execute("SELECT n FROM fact_generation").fetchall(),
        }
    finally:
        conn.close()


def _without_old_links(rows: dict[str, list[tuple[Any, ...]]]) -> dict[str, Any]:
    """``rows`` as the cleanup should leave them (generation aside)."""
    keys = {key for key, _ in OLD_LINKS}
    return {
        "facts": rows["facts"], "revisions": rows["revisions"], "fts": rows["fts"],
        "entities": [r for r in rows["entities"] if r[2] not in keys],
        "links": [r for r in rows["links"] if r[2] not in keys],
    }


def test_sqlite_old_links_are_removed_once(tmp_path: Path) -> None:
    """Opening the old store removes the links and entities "the"/"it" of every user,
    nothing else; recall no longer boosts the facts for "the"/"it" questions (it did),
    still finds them by their words; the generation moved; a second open is a no-op."""
    path = tmp_path / "holographic.db"
    ids = _old_sqlite(path)
    before = _sqlite_rows(path)
    assert {(u, k) for _, u, k in before["links"]} >= {("", "the"), ("bob", "it")}
    conn = sqlite3.connect(path)
    old = read.search(conn, "", THE_QUESTION, limit=6, min_trust=0.3)
    assert [f.id for f in old] == [ids[STAGING]]  # the bug, as an old store has it
    assert [f.id for f in read.search(conn, "", IT_QUESTION, limit=6, min_trust=0.3)
            ] == [ids[RAIN]]
    conn.close()

    store = FactStore(path)
    assert store.search(THE_QUESTION, limit=6) == []
    assert store.search(IT_QUESTION, limit=6) == []
    assert [f.id for f in store.search("which database is staging on?", limit=6)
            ] == [ids[STAGING]]
    assert [f.id for f in store.search("raining in Paris", limit=6)] == [ids[RAIN]]
    store.close()
    after = _sqlite_rows(path)
    assert {k: v for k, v in after.items() if k != "generation"} == _without_old_links(before)
    assert after["generation"][0][0] > before["generation"][0][0]

    FactStore(path).close()  # second open: nothing to do
    assert _sqlite_rows(path) == after
    conn = sqlite3.connect(path)
    assert migrations.applied(conn)[-1] == "m005_function_word_links"
    assert migrations.pending(conn) == []
    assert conn.execute(f"SELECT count(*) FROM {migrations.LEDGER_TABLE}"
                        " WHERE name = 'm005_function_word_links'").fetchone()[0] == 1
    conn.close()


def test_sqlite_a_fresh_store_writes_no_function_word_link(tmp_path: Path) -> None:
    """Through the public API: the facts stored now link neither "the" nor "it"."""
    store = FactStore(tmp_path / "holographic.db")
    for text in (STAGING, RAIN):
        fact = store.add(FactInput(text)).fact
        assert not {n.casefold() for n in fact.entities} & {"the", "it"}
    assert store.search(IT_QUESTION, limit=6) == []
    store.close()


_SQLITE_OPENER = """
import sys
from memoryport.storage.facts.store import FactStore
store = FactStore(sys.argv[1])
print(len(store.search("What did we decide about the sqlite schema?", limit=6)))
store.close()
"""


def test_sqlite_two_processes_opening_the_old_store_clean_it_once(tmp_path: Path) -> None:
    """Two processes open the old file at once: both succeed and see no boosted fact;
    the cleanup is recorded once and removed exactly the old links."""
    path = tmp_path / "holographic.db"
    _old_sqlite(path)
    before = _sqlite_rows(path)
    procs = [subprocess.Popen([sys.executable, "-c", _SQLITE_OPENER, str(path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert [out.strip() for out, _ in results] == ["0", "0"]
    after = _sqlite_rows(path)
    assert {k: v for k, v in after.items() if k != "generation"} == _without_old_links(before)
    conn = sqlite3.connect(path)
    assert conn.execute(f"SELECT count(*) FROM {migrations.LEDGER_TABLE}"
                        " WHERE name = 'm005_function_word_links'").fetchone()[0] == 1
    conn.close()


# ---------------------------------------------------------------------------- PostgreSQL


@pytest.fixture
def owner(pg_server: pgserver.PgServer) -> Iterator[tuple[str, str]]:
    """(DSN of a fresh ordinary role that may create schemas, a fresh schema name)."""
    role = f"mp_fw_{uuid.uuid4().hex[:8]}"
    schema = pgserver.fresh_schema("fwl")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(conn.info.dbname), sql.Identifier(role)))
    yield make_conninfo(pg_server.uri, user=role), schema
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _old_postgres(dsn: str, schema: str) -> dict[str, int]:
    """The PostgreSQL fact store at m003 (before the generation and the cleanup) with
    the old writer's links, for two users; the fact ids by user + content."""
    ids: dict[str, int] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        run_pg_migrations(conn, schema, postgres_schema.MIGRATIONS[:3],
                          postgres_schema.LEDGER_TABLE)
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        for user in ("", "bob"):
            set_scope(conn, user)
            pg = postgres_sql.PgConnection(conn, user, schema)
            with conn.transaction():
                for text in (STAGING, RAIN, PLAIN):
                    triple = write.triple_for(text, "user")
                    fact_id = write.insert_fact(pg, user, FactInput(text), triple, 0.5)
                    write.link_entities(pg, user, fact_id, text, triple)
                    ids[user + text] = fact_id
                for key, text in OLD_LINKS:
                    pg.execute("INSERT OR IGNORE INTO entities(user_id, key, name, kind,"
                               " created_at) VALUES (?, ?, ?, 'person', 0)", (user, key, key))
                    pg.execute("INSERT INTO fact_entities(fact_id, entity_id) SELECT ?, id"
                               " FROM entities WHERE user_id = ? AND key = ?",
                               (ids[user + text], user, key))
                postgres_sql.index_dirty(pg)
            if not user:
                old = postgres_sql.search(pg, THE_QUESTION, limit=6, min_trust=0.3)
                assert [f.id for f in old] == [ids[STAGING]]  # the bug, as stored
    return ids


def _pg_rows(uri: str, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the fact tables (read as the superuser: no row-level security)."""
    with psycopg.connect(uri) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        return {
            "facts": conn.execute("SELECT * FROM facts ORDER BY id").fetchall(),
            "entities": conn.execute("SELECT * FROM entities ORDER BY id").fetchall(),
            "links": conn.execute("SELECT fe.fact_id, e.user_id, e.key FROM fact_entities fe"
                                  " JOIN entities e ON e.id = fe.entity_id"
                                  " ORDER BY 1, 3").fetchall(),
            "revisions": conn.execute("SELECT * FROM fact_revisions ORDER BY id").fetchall(),
            "fts": conn.execute("SELECT * FROM fact_terms ORDER BY 1, 2, 3").fetchall(),
            "stats": conn.execute("SELECT * FROM fact_stats ORDER BY 1, 2").fetchall(),
        }


def _pg_ledger(uri: str, schema: str) -> list[str]:
    with psycopg.connect(uri) as conn:
        return [r[0] for r in conn.execute(sql.SQL("SELECT name FROM {}.{} ORDER BY name")
                                           .format(sql.Identifier(schema),
                                                   sql.Identifier(postgres_schema.LEDGER_TABLE)))]


@pytest.mark.postgres
def test_postgres_old_links_are_removed_once(pg_server: pgserver.PgServer,
                                             owner: tuple[str, str]) -> None:
    """The SQLite test's claims on PostgreSQL, the store opened by an ordinary role (the
    cleanup reads and deletes under row-level security, every user's rows)."""
    dsn, schema = owner
    ids = _old_postgres(dsn, schema)
    before = _pg_rows(pg_server.uri, schema)
    assert {(u, k) for _, u, k in before["links"]} >= {("", "the"), ("bob", "it")}

    store = PostgresFactStore(dsn, schema=schema)
    assert store.search(THE_QUESTION, limit=6) == []
    assert store.search(IT_QUESTION, limit=6) == []
    assert [f.id for f in store.search("which database is staging on?", limit=6)
            ] == [ids[STAGING]]
    store.close()
    bob = PostgresFactStore(dsn, schema=schema, user_id="bob")
    assert bob.search(IT_QUESTION, limit=6) == []
    bob.close()
    after = _pg_rows(pg_server.uri, schema)
    expected = _without_old_links(before)
    assert {k: v for k, v in after.items() if k != "stats"} == expected
    assert after["stats"] == before["stats"]
    assert _pg_ledger(pg_server.uri, schema) == sorted(n for n, _ in postgres_schema.MIGRATIONS)

    PostgresFactStore(dsn, schema=schema).close()  # second open: nothing to do
    assert _pg_rows(pg_server.uri, schema) == after


_OPENER = """
import sys
from memoryport.storage.facts.postgres import PostgresFactStore
store = PostgresFactStore(sys.argv[1], schema=sys.argv[2])
print(len(store.search("What did we decide about the sqlite schema?", limit=6)))
store.close()
"""


@pytest.mark.postgres
def test_postgres_two_hosts_opening_the_old_store_clean_it_once(
        pg_server: pgserver.PgServer, owner: tuple[str, str]) -> None:
    """Two processes open the old store at once: both succeed, see no boosted fact, and
    each migration is recorded once (the ledger's advisory lock)."""
    dsn, schema = owner
    _old_postgres(dsn, schema)
    before = _pg_rows(pg_server.uri, schema)
    procs = [subprocess.Popen([sys.executable, "-c", _OPENER, dsn, schema],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert [out.strip() for out, _ in results] == ["0", "0"]
    ledger = _pg_ledger(pg_server.uri, schema)
    assert ledger == sorted(n for n, _ in postgres_schema.MIGRATIONS)  # each once
    after = _pg_rows(pg_server.uri, schema)
    assert {k: v for k, v in after.items() if k != "stats"} == _without_old_links(before)
