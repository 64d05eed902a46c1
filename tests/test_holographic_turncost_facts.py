"""The fact search's cache (``storage.facts.searchcache``) changes nothing it returns
(real SQLite files): a store's cached search equals the uncached query code on the same
file, after writes through the store, through another store on the same file and by
plain SQL, for every trust floor and ``as_of``; and the tables' generation moves with
every write to them, not with the turn index's writes in the same file."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from memoryport.storage.facts import read, searchcache
from memoryport.storage.facts.records import Fact, FactInput
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput

PEOPLE = ("Alice", "Bob", "Caroline", "Dmitri", "Elena")
THINGS = ("vim", "emacs", "pottery", "Paris", "Berlin", "tea", "coffee", "guitar", "rust",
          "python", "sqlite", "the museum", "the beach", "PostgreSQL 16")
VERBS = ("likes", "prefers", "lives in", "works on", "visited", "plays", "hates")
START = 1_700_000_000.0


def _fact(rng: random.Random, at: float) -> FactInput:
    text = f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)}"
    if rng.random() < 0.3:
        text += f" and {rng.choice(THINGS)}"
    return FactInput(text, trust=rng.choice([None, 0.2, 0.5, 0.5, 0.8]),
                     valid_from=at if rng.random() < 0.5 else None)


def _queries(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.sample([*PEOPLE, *THINGS, *VERBS, "what", "the", "does", "zebra"],
                           rng.randint(1, 5))
        out.append(" ".join(words) + "?")
    return out


def _uncached(store: FactStore, query: str, limit: int, floor: float,
              as_of: float | None) -> list[Fact]:
    conn = sqlite3.connect(store.path)
    try:
        return read.search(conn, store.user_id, query, limit=limit, min_trust=floor,
                           as_of=as_of)
    finally:
        conn.close()


def _same_everywhere(store: FactStore, rng: random.Random, n: int = 40) -> int:
    compared = 0
    for query in _queries(rng, n):
        for limit, floor, as_of in ((6, 0.3, None), (3, 0.0, None), (10, 0.6, None),
                                    (6, 0.3, START + 50)):
            assert store.search(query, limit=limit, min_trust=floor, as_of=as_of) == \
                _uncached(store, query, limit, floor, as_of), query
            compared += 1
    return compared


def test_cached_search_equals_the_queries_through_every_kind_of_write(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(12)
    store, other = FactStore(path), FactStore(path)
    for i in range(40):
        store.add(_fact(rng, START + i))
    assert _same_everywhere(store, rng) > 0
    for i in range(10):  # another store on the file (another process would do the same)
        other.add(_fact(rng, START + 40 + i))
    _same_everywhere(store, rng)
    live = [f.id for f in store.list_facts(limit=100)]
    for fact_id in live[:5]:
        other.feedback(fact_id, helpful=False)
    other.remove(live[5])
    _same_everywhere(store, rng)
    conn = sqlite3.connect(path)  # plain SQL: retrieval counts and a retirement
    conn.execute("UPDATE facts SET retrieval_count = retrieval_count + 3 WHERE id % 3 = 0")
    conn.execute("UPDATE facts SET retired_at = ? WHERE id = 7", (START + 99,))
    conn.commit()
    conn.close()
    _same_everywhere(store, rng)
    store.close()
    other.close()


def test_generation_moves_with_fact_writes_only(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    store, turns = FactStore(path), TurnIndex(path, dense=False)

    def generation() -> int:
        conn = sqlite3.connect(path)
        try:
            return int(conn.execute("SELECT n FROM fact_generation").fetchone()[0])
        finally:
            conn.close()

    start = generation()
    turns.add_turns([TurnInput("s1", "user", "Alice likes vim", START)])
    assert generation() == start  # turns share the file, not the generation
    added = store.add(FactInput("Alice likes vim", valid_from=START)).fact
    after_add = generation()
    assert after_add > start
    store.mark_retrieved([added.id])
    assert generation() > after_add
    hits = store.search("what does Alice like?", limit=5)
    assert [f.id for f in hits] == [added.id] and hits[0].retrieval_count == 1
    store.close()
    turns.close()


def test_ties_on_trust_and_time_come_back_in_the_querys_order(tmp_path: Path) -> None:
    """Entity candidates that tie on trust and recorded time: the cached answer is the
    query's own, in its order, search after search."""
    path = tmp_path / "holographic.db"
    store = FactStore(path)
    store.add_many([FactInput(f"Alice visited place number {i}") for i in range(12)])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE facts SET recorded_at = ?, trust_score = 0.5", (START,))
    conn.commit()
    conn.close()
    for _ in range(2):
        for limit in (1, 3, 6, 20):
            assert store.search("Alice", limit=limit) == _uncached(store, "Alice", limit, 0.3,
                                                                   None)
    store.close()


def test_a_large_entity_index_is_read_key_by_key(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "holographic.db"
    store = FactStore(path)
    rng = random.Random(5)
    for i in range(30):
        store.add(_fact(rng, START + i))
    monkeypatch.setattr(searchcache, "LINKS_ALL", 4)  # the threshold, not our code
    _same_everywhere(store, rng, 20)
    store.close()


def test_a_function_word_read_as_subject_links_no_entity(tmp_path: Path) -> None:
    """"The staging database is PostgreSQL 16." reads subject "the": no entity "the",
    so a question holding "the" does not recall the fact (it did, every turn), while a
    question about it still does."""
    store = FactStore(tmp_path / "holographic.db")
    fact = store.add(FactInput("The staging database is PostgreSQL 16.")).fact
    stored = store.get(fact.id)
    assert stored is not None and stored.subject == "the"
    assert "the" not in {name.casefold() for name in stored.entities}
    assert store.search("What did we decide about the sqlite schema?", limit=6) == []
    assert [f.id for f in store.search("which database is staging on?", limit=6)] == [fact.id]
    store.close()
