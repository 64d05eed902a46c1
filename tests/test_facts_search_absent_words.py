"""The SQLite fact search skips its FTS5 query when no fact holds any of the query's words
(``SearchCache.may_match``, each word looked up once per fact-table generation): the
same results as the uncached search, and a fact written since with one of those words,
by this store or another one on the file, is found at once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memoryport.storage.facts import read
from memoryport.storage.facts.records import Fact, FactInput
from memoryport.storage.facts.store import FactStore


def _uncached(store: FactStore, query: str) -> list[Fact]:
    conn = sqlite3.connect(store.path)
    try:
        return read.search(conn, store.user_id, query, limit=6, min_trust=0.3)
    finally:
        conn.close()


def test_absent_words_skip_the_query_and_new_facts_are_found(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    store, other = FactStore(path), FactStore(path)
    try:
        store.add(FactInput("Alice prefers vim"))
        store.add(FactInput("The staging database is PostgreSQL 16"))
        queries = ("what about the zebra schema?", "does Alice like vim or the zebra?",
                   "PostgreSQL 16 zebra", "zebra schema")
        for _ in range(2):  # the second time from what the cache knows
            for query in queries:
                assert store.search(query) == _uncached(store, query), query
        assert store.search("zebra schema") == []
        known = store._cache._phrases
        assert known['"zebra"'] is False and known['"schema"'] is False
        other.add(FactInput("Bob drew a zebra"))  # another store on the same file
        found = store.search("zebra schema")
        assert [f.content for f in found] == ["Bob drew a zebra"]
        assert found == _uncached(store, "zebra schema")
        store.add(FactInput("The schema has three tables"))
        assert {f.content for f in store.search("zebra schema")} == {
            "Bob drew a zebra", "The schema has three tables"}
    finally:
        store.close()
        other.close()
