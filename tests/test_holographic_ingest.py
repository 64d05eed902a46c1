"""Ingest and recall consistency of the ``holographic`` provider: a turn's facts are one
transaction, duplicates are found by their statement, and ``prefetch`` injects what
``recall_items`` ranks (the call the LoCoMo benchmark scores)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from memoryport import open as open_memory
from memoryport.errors import ConfigError, ToolArgumentError
from memoryport.providers.holographic import HolographicProvider
from memoryport.providers.holographic.recall import turn_line
from memoryport.providers.holographic.settings import Settings
from memoryport.storage.facts.records import FactInput
from memoryport.storage.facts.store import FactStore


def _provider(home: Path, **section: object) -> HolographicProvider:
    home.mkdir(parents=True, exist_ok=True)
    if section:
        (home / "config.yaml").write_text(yaml.safe_dump({"holographic": dict(section)}))
    provider = HolographicProvider()
    provider.initialize("s1", home=str(home))
    return provider


def _revisions(path: Path) -> int:
    """How many revisions the database holds (read through a second connection)."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM fact_revisions").fetchone()[0])
    finally:
        conn.close()


def test_a_turns_facts_are_written_together_and_see_each_other(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home")
    provider.sync_turn("I live in Paris. Actually, I moved to Berlin. I like tea.", "ok",
                       session_id="s1", source_id="m1")
    store = provider.store
    assert store is not None
    live = {f.content for f in store.list_facts()}
    assert live == {"Actually, I moved to Berlin", "I like tea"}
    pairs = store.contradictions()
    assert [(p.older.value, p.newer.value) for p in pairs] == [("paris", "berlin")]
    assert all(f.message_id == "m1" for f in store.list_facts(include_retired=True))
    provider.shutdown()


def test_add_many_checks_every_item_first_and_writes_nothing_on_a_bad_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.db"
    store = FactStore(path)
    with pytest.raises(ToolArgumentError, match="fact 2: content must be a non-empty"):
        store.add_many([FactInput("I like tea"), FactInput("   ")])
    with pytest.raises(ToolArgumentError, match="fact 1: category 'nope'"):
        store.add_many([FactInput("I like tea", category="nope"), FactInput("I like jam")])
    assert store.count(include_retired=True) == 0 and _revisions(path) == 0
    results = store.add_many([FactInput("I like tea"), FactInput("i like TEA!")])
    assert [r.status for r in results] == ["added", "duplicate"]
    assert results[0].fact.id == results[1].fact.id and results[0].fact.entities
    store.close()


def test_near_duplicates_without_a_statement_and_across_spellings(tmp_path: Path) -> None:
    store = FactStore(tmp_path / "h.db")
    first = store.add(FactInput("Deploys happen Tuesdays after standup")).fact
    again = store.add(FactInput("Deploys happen on Tuesdays after the standup"))
    assert again.status == "duplicate" and again.fact.id == first.id
    colour = store.add(FactInput("Colour scheme stays dark in the office")).fact
    color = store.add(FactInput("The color scheme stays dark in office"))
    assert color.status == "duplicate" and color.fact.id == colour.id
    assert store.add(FactInput("Deploys happen Fridays after standup")).status == "added"
    store.close()


def test_another_speakers_first_person_fact_is_not_a_duplicate(tmp_path: Path) -> None:
    store = FactStore(tmp_path / "h.db")
    bob = store.add(FactInput("I like green tea from the hills of Japan in spring",
                              speaker="Bob")).fact
    mine = store.add(FactInput("I like green tea from hills of Japan in the spring"))
    assert bob.subject == "bob" and mine.status == "added" and mine.fact.subject == "user"
    store.close()


def test_prefetch_injects_turns_recall_items_ranks_without_a_shared_word(
    tmp_path: Path,
) -> None:
    provider = _provider(tmp_path / "home", recall_facts=0)
    provider.sync_turn("I adopted a puppy last week.", "", session_id="c1", speaker="Alice",
                       source_id="D1:1", timestamp=1683590400.0)
    provider.sync_turn("We went hiking in the Alps.", "", session_id="c1", speaker="Bob",
                       source_id="D1:2", timestamp=1683590400.0)
    question = "What did Alice adopt?"  # "adopt" is not a word of "adopted"
    _facts, hits = provider.recall_items(question)
    assert hits and hits[0].source_id == "D1:1"
    text = provider.prefetch(question)
    assert "Alice: I adopted a puppy last week." in text
    assert [h.source_id for h in hits if turn_line(h) in text] == [h.source_id for h in hits]
    provider.shutdown()


def test_recall_floor_drops_weak_turns_and_is_checked(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home", recall_facts=0, recall_floor=1.0)
    for n, text in enumerate(["The tomato plants need water daily.",
                              "Tomato soup tomato salad tomato everything.",
                              "We bought tomato seeds."]):
        provider.sync_turn(text, "", session_id="c1", source_id=f"t{n}")
    _facts, hits = provider.recall_items("tomato")
    best = max(h.score for h in hits)
    assert hits and all(h.score == best for h in hits)
    provider.shutdown()
    with pytest.raises(ConfigError, match="recall_floor"):
        Settings.from_section({"recall_floor": 2})


def test_prefetch_through_memoryport_open_is_the_ranked_recall(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": "holographic", "nudge_interval": 0}}))
    memory = open_memory(home, "default", platform="cli")
    turn = memory.begin_turn("We adopted two kittens from the shelter.")
    memory.end_turn(turn, "Lovely!")
    memory.flush()
    turn = memory.begin_turn("how many did we adopt?")
    recalled = "\n".join(text for name, text in turn.contexts if name == "holographic")
    memory.end_turn(turn, "Two.")
    memory.flush()
    assert "user: We adopted two kittens from the shelter." in recalled
    memory.close()


def test_session_end_does_not_bring_back_a_superseded_fact(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": "holographic", "nudge_interval": 0}}))
    memory = open_memory(home, "default", platform="cli")
    for text in ("I live in Lisbon.", "I moved to Porto."):
        memory.end_turn(memory.begin_turn(text), "Noted.")
    memory.flush()
    memory.close()
    store = FactStore(home / "holographic.db")
    assert [f.value for f in store.list_facts()] == ["porto"]
    assert store.count(include_retired=True) == 2 and len(store.contradictions()) == 1
    store.close()
