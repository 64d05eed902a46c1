"""``memoryport storage copy`` moves the holographic fact store and turn index too: facts
with every column (trust, counts, supersession, events, history), entities, turns and
their vectors; idempotent, all or nothing per chunk. Real PostgreSQL (tests/pgserver.py).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

import pgserver
from memoryport.admin.storage_facts import copy_holographic
from memoryport.cli import main
from memoryport.errors import StoreError
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.postgres_open import schema_for
from memoryport.storage.facts.records import FactInput, Provenance
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput
from memoryport.storage.turns import vectors as vec

pytestmark = pytest.mark.postgres

T0 = 1_684_000_000.0


@pytest.fixture
def profile(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh profile name; its schema is dropped afterwards."""
    name = f"p{uuid.uuid4().hex[:10]}"
    yield name
    pgserver.drop_schema(pg_server.uri, schema_for(name))


def _home(root: Path, profile: str) -> Path:
    """A SQLite home with facts of two users (a supersession, feedback, retrievals, an
    update, a forgotten fact), turns of three sessions and one stored vector."""
    home = root / "profiles" / profile
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("memory:\n  provider: holographic\n")
    db = home / "holographic.db"
    ann = FactStore(db, user_id="ann")
    vim = ann.add(FactInput("Ann prefers vim as her editor", speaker="Ann"))
    ann.add(FactInput("Ann prefers emacs as her editor", speaker="Ann"))
    tea = ann.add(FactInput("Ann's favorite tea is sencha", category="user_pref",
                            tags="drinks", provenance=Provenance(session_id="s1",
                                                                 actor="user")))
    ann.feedback(tea.fact.id, helpful=True)
    ann.mark_retrieved([tea.fact.id, vim.fact.id])
    deploy = ann.add(FactInput("The deploy runs on Friday evenings"))
    ann.update(deploy.fact.id, content="The deploy runs on Monday mornings",
               provenance=Provenance(actor="user"))
    gone = ann.add(FactInput("Ann once lived in Oslo"))
    ann.forget(gone.fact.id)
    ann.add(FactInput("We met Caroline at the pottery class last Friday"))
    ann.close()
    bo = FactStore(db, user_id="bo")
    bo.add(FactInput("Bo keeps bees on the roof"))
    bo.close()
    index = TurnIndex(db, dense=False)
    index.add_turns([TurnInput("s1", "Ann", f"turn {i}: we talked about greyhounds",
                               T0 + i, f"m{i}", "ann") for i in range(3)]
                    + [TurnInput("s2", "Ann", "I adopted a greyhound named Pixel", T0 + 9,
                                 "", "ann"),
                       TurnInput("s9", "Bo", "the bees swarmed yesterday", T0, "", "bo")])
    index.close()
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO turn_vectors(turn_id, model, vec) VALUES (1, 'tiny', ?)",
                     (vec.encode(array("f", [0.6, 0.8, 0.0])),))
    return home


def _sqlite_facts(home: Path, user: str) -> list[dict[str, Any]]:
    store = FactStore(home / "holographic.db", user_id=user)
    try:
        return [f.to_dict() for f in store.list_facts(limit=100, include_retired=True)]
    finally:
        store.close()


def _pg_store(uri: str, profile: str, user: str) -> PostgresFactStore:
    return PostgresFactStore(uri, user_id=user, schema=schema_for(profile))


def _rows(uri: str, profile: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri) as conn:
        return conn.execute(sql.SQL(query).format(s=sql.Identifier(schema_for(profile)))
                            ).fetchall()


def test_cli_copy_moves_facts_and_turns_and_recall_finds_them(
        tmp_path: Path, pg_server: pgserver.PgServer, profile: str) -> None:
    """Copy, switch, open the home on PostgreSQL: the same facts (every field, ids kept),
    history, chains and turns; recall through the provider finds them; a rerun copies
    nothing twice."""
    from memoryport.providers.holographic import HolographicProvider

    home = _home(tmp_path, profile)
    before = {user: _sqlite_facts(home, user) for user in ("ann", "bo")}
    queries = ("which editor does Ann prefer", "what tea", "when does the deploy run",
               "who did we meet last Friday", "bees")
    lite = FactStore(home / "holographic.db", user_id="ann")
    recalled = [[(f.id, f.content) for f in lite.search(q)] for q in queries]
    lite.close()
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "storage", "copy", "--to",
                                  pg_server.uri, "--switch", "--json"])
    assert result.exit_code == 0, result.output
    holo = json.loads(result.stdout)["holographic"]
    assert holo == {"facts": 6, "facts_skipped": 0, "turns": 5, "sessions_skipped": 0,
                    "kept_ids": True}
    for user, facts in before.items():
        store = _pg_store(pg_server.uri, profile, user)
        try:
            assert [f.to_dict() for f in store.list_facts(limit=100, include_retired=True)
                    ] == facts
        finally:
            store.close()
    vim = next(f["fact_id"] for f in before["ann"] if "vim" in f["content"])
    store = _pg_store(pg_server.uri, profile, "ann")
    try:
        assert [f.content for f in store.chain(vim)] == [
            "Ann prefers vim as her editor", "Ann prefers emacs as her editor"]
        assert [r.action for r in store.revisions(vim)] == ["add", "retire"]
        assert store.search("which tea")[0].content == "Ann's favorite tea is sencha"
        assert [[(f.id, f.content) for f in store.search(q)] for q in queries] == recalled
        assert any(recalled)  # (scores differ in the last digits: BM25's statistics
        # are the user's on PostgreSQL, the whole file's on SQLite)
    finally:
        store.close()
    assert _rows(pg_server.uri, profile, "SELECT model, length(vec::text) > 0 FROM"
                 " {s}.turn_vectors") == [("tiny", True)]
    assert _rows(pg_server.uri, profile, "SELECT count(*) FROM {s}.fact_revisions"
                 " WHERE action = 'forget'") == [(1,)]
    provider = HolographicProvider()
    try:
        provider.initialize("s3", home=home, platform="cli", user_id="ann")
        assert "emacs" in provider.prefetch("which editor does Ann prefer", session_id="s3")
        _, hits = provider.recall_items("what is the greyhound called")
        assert any("Pixel" in h.text for h in hits)
    finally:
        provider.shutdown()
    again = runner.invoke(main, ["--home", str(home), "storage", "copy", "--to",
                                 pg_server.uri, "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["holographic"] == {
        "facts": 0, "facts_skipped": 6, "turns": 0, "sessions_skipped": 3, "kept_ids": False}
    assert _rows(pg_server.uri, profile, "SELECT count(*) FROM {s}.facts") == [(6,)]


def test_second_home_merges_in_chunks_with_progress(
        tmp_path: Path, pg_server: pgserver.PgServer, profile: str) -> None:
    """A second home of the same profile, one fact per chunk: its facts get new ids with
    the supersession chain and entity links mapped across chunks; facts both homes hold
    are not doubled; the progress callback counts up to the totals."""
    _home(tmp_path / "a", profile)
    copy_holographic(tmp_path / "a" / "profiles" / profile, pg_server.uri)
    other = tmp_path / "b" / "profiles" / profile
    other.mkdir(parents=True)
    store = FactStore(other / "holographic.db", user_id="ann")
    store.add(FactInput("Ann's favorite tea is sencha"))  # also in the first home
    old = store.add(FactInput("Cam prefers vim as his editor", speaker="Cam"))
    store.add(FactInput("Cam prefers emacs as his editor", speaker="Cam"))
    store.close()
    seen: list[tuple[str, int, int]] = []
    report = copy_holographic(other, pg_server.uri, chunk_facts=1,
                              progress=lambda *p: seen.append(p))
    assert (report.facts, report.facts_skipped, report.kept_ids) == (2, 1, False)
    assert seen[-1] == ("copying facts", 3, 3)
    pg = _pg_store(pg_server.uri, profile, "ann")
    try:
        red = next(f for f in pg.list_facts(limit=50, include_retired=True)
                   if f.content == "Cam prefers vim as his editor")
        assert red.id != old.fact.id and red.superseded_by is not None
        assert [f.content for f in pg.chain(red.id)][-1] == "Cam prefers emacs as his editor"
        assert [f.content for f in pg.probe("Cam")] == ["Cam prefers emacs as his editor"]
        assert sum(f.content == "Ann's favorite tea is sencha"
                   for f in pg.list_facts(limit=50, include_retired=True)) == 1
    finally:
        pg.close()


def test_a_refused_chunk_lands_nothing_and_a_rerun_finishes(
        tmp_path: Path, pg_server: pgserver.PgServer, profile: str) -> None:
    """A fact PostgreSQL refuses (a NUL character in its text) stops the copy with a
    clear error: the chunks before it are in, nothing of its chunk is; with the source
    fixed, running it again copies the rest, none twice."""
    home = _home(tmp_path, profile)
    db = home / "holographic.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE facts SET content = ? WHERE user_id = 'bo'",
                     ("Bo keeps \x00 bees",))
    with pytest.raises(StoreError, match="cannot copy the fact store"):
        copy_holographic(home, pg_server.uri, chunk_facts=2)
    assert _rows(pg_server.uri, profile, "SELECT count(*) FROM {s}.facts") == [(5,)]
    assert _rows(pg_server.uri, profile, "SELECT count(*) FROM {s}.fact_revisions"
                 " WHERE user_id = 'bo'") == [(0,)]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE facts SET content = 'Bo keeps bees' WHERE user_id = 'bo'")
    report = copy_holographic(home, pg_server.uri, chunk_facts=2)
    assert (report.facts, report.facts_skipped, report.turns) == (1, 5, 5)
    assert _rows(pg_server.uri, profile, "SELECT count(*) FROM {s}.facts") == [(6,)]


def test_an_id_taken_meanwhile_gets_a_new_one(
        tmp_path: Path, pg_server: pgserver.PgServer, profile: str) -> None:
    """Into a schema whose sequences were never used but where another host wrote a row
    with an id of its own: the ids still free are kept, the taken one gets a new id with
    its links and history, and a fact added afterwards takes no kept id."""
    home = _home(tmp_path, profile)
    before = _sqlite_facts(home, "ann")
    PostgresFactStore(pg_server.uri, schema=schema_for(profile)).close()
    _rows(pg_server.uri, profile, "INSERT INTO {s}.facts (id, user_id, content, content_hash,"
          " recorded_at, updated_at, indexed) VALUES (1, 'zed', 'Zed was here', 'zed', 0, 0,"
          " true) RETURNING id")
    report = copy_holographic(home, pg_server.uri, chunk_facts=2)
    assert (report.facts, report.kept_ids) == (6, True)
    store = _pg_store(pg_server.uri, profile, "ann")
    try:
        after = {f["content"]: f for f in (x.to_dict() for x in store.list_facts(
            limit=100, include_retired=True))}
        assert set(after) == {f["content"] for f in before}
        moved = [f for f in before if after[f["content"]]["fact_id"] != f["fact_id"]]
        assert [f["fact_id"] for f in moved] == [1]
        vim = after["Ann prefers vim as her editor"]
        assert [f.content for f in store.chain(vim["fact_id"])][-1] == (
            "Ann prefers emacs as her editor")
        assert [r.action for r in store.revisions(vim["fact_id"])] == ["add", "retire"]
        assert "Ann" in vim["entities"]
        new = store.add(FactInput("Ann collects stamps")).fact.id
        assert new > max(f["fact_id"] for f in after.values())
    finally:
        store.close()
    assert _rows(pg_server.uri, profile, "SELECT content FROM {s}.facts WHERE id = 1") == [
        ("Zed was here",)]
