"""Turn search cost (issue 12): phrases in half the turns or more are left out of the
MATCH when a rarer phrase alone fills the search depth (``rowcache.CommonPhrases``), so
``bm25()`` no longer scores every turn holding a common word — and the ranking stays
the same (real SQLite files, the real FTS5 index)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnHit, TurnIndex, TurnInput, rowcache
from memoryport.storage.turns.index import MAIN_DEPTH
from memoryport.storage.turns.rowcache import CommonPhrases

START = 1_700_000_000.0
TOPICS = ("tea", "pottery", "paris", "museum", "guitar", "garden", "concert", "beach")


def _store(path: Path, turns: int, *, rare_every: int) -> TurnIndex:
    """Every turn says "decided"; one in ``rare_every`` also says "sqlite"; each has its
    own number, a topic or two and its own length (so no two turns tie on their BM25:
    between exact ties the ~1e-6 of a common word decides which come first, and with
    them which neighbours are candidates)."""
    rng = random.Random(turns)
    index = TurnIndex(path, dense=False)
    batch = []
    for n in range(turns):
        filler = [f"w{rng.randint(0, 400)}" for _ in range(n)]
        words = ["we", "decided", *rng.sample(TOPICS, rng.randint(1, 2)), *filler, f"n{n}"]
        if n % rare_every == 0:
            words.insert(2, "sqlite")
        batch.append(TurnInput(f"s{n // 90}", ("Alice", "Bob")[n % 2], " ".join(words),
                               START + n))
    index.add_turns(batch)
    return index


def _narrow(path: Path, match: str, depth: int = MAIN_DEPTH) -> str:
    conn = sqlite3.connect(path)
    try:
        seen = int(conn.execute("SELECT max(id) FROM turns").fetchone()[0])
        return CommonPhrases().narrow(conn, match, seen, depth)
    finally:
        conn.close()


def _key(hits: list[TurnHit]) -> list[int]:
    return [h.turn_id for h in hits]


def test_a_common_phrase_is_left_out_only_when_a_rarer_one_fills_the_depth(
        tmp_path: Path) -> None:
    """"decided" is in every turn (FTS5 clamps its idf), "sqlite" in a third of them:
    with 300 turns "sqlite" alone matches 100 >= 80 turns, so "decided" goes; with 150
    (50 "sqlite" turns) the common-only turns would fill the depth: the MATCH stays whole.
    A phrase in fewer than half the turns is never left out."""
    big = tmp_path / "big.db"
    _store(big, 300, rare_every=3).close()
    match = '"decided" OR "sqlite" OR "n7"'
    assert _narrow(big, match) == '"sqlite" OR "n7"'
    assert _narrow(big, match, depth=101) == match  # 100 "sqlite" turns: not enough
    assert _narrow(big, '"sqlite" OR "n7"') == '"sqlite" OR "n7"'
    assert _narrow(big, '"decided" OR "n7"') == '"decided" OR "n7"'
    assert _narrow(big, '"decided"') == '"decided"'
    small = tmp_path / "small.db"
    _store(small, 150, rare_every=3).close()
    assert _narrow(small, match) == match


def test_counts_follow_the_turns_stored_since(tmp_path: Path) -> None:
    """A phrase's count is caught up by the turns stored after it was counted: "sqlite"
    grows from a third to more than half of the turns and becomes common itself."""
    path = tmp_path / "h.db"
    index = _store(path, 300, rare_every=3)
    conn = sqlite3.connect(path)
    phrases = CommonPhrases()

    def narrow(match: str) -> str:
        seen = int(conn.execute("SELECT max(id) FROM turns").fetchone()[0])
        return phrases.narrow(conn, match, seen, 40)

    try:
        assert narrow('"decided" OR "sqlite" OR "tea"') == '"sqlite" OR "tea"'
        index.add_turns([TurnInput("s9", "Bob", f"sqlite again {n}", START + 400 + n)
                         for n in range(120)])  # sqlite: 220 of 420, decided: 300 of 420
        assert narrow('"decided" OR "sqlite" OR "tea"') == '"tea"'  # in about 55 turns
        assert CommonPhrases().narrow(conn, '"decided" OR "sqlite" OR "tea"', 420, 40) == '"tea"'

    finally:
        conn.close()
        index.close()


@pytest.mark.parametrize("turns", [150, 300, 600])
def test_search_ranks_as_with_the_whole_match(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, turns: int) -> None:
    """The same turns in the same order (scores within what a clamped phrase adds) as a
    search that keeps every phrase, for queries with and without common words."""
    index = _store(tmp_path / "h.db", turns, rare_every=3)
    queries = ("What did we decide about sqlite and tea?", "decided sqlite museum n12",
               "What did Alice say about the garden concert?", "decided",
               "Where did Bob go for the sqlite pottery class?")
    try:
        narrowed = {q: index.search(q, limit=15) for q in queries}
        monkeypatch.setattr(CommonPhrases, "narrow",
                            lambda self, conn, match, seen, depth: match)
        with TurnIndex(tmp_path / "h.db", dense=False) as whole:
            for query in queries:
                want = whole.search(query, limit=15)
                assert _key(narrowed[query]) == _key(want), query
                assert [h.score for h in narrowed[query]] == pytest.approx(
                    [h.score for h in want], abs=1e-4)
    finally:
        index.close()


def test_the_search_leaves_the_common_phrase_out(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Through TurnIndex.search: the MATCH the word index runs holds no common phrase
    (each narrowing recorded as FTS5 sees it)."""
    seen: list[tuple[str, str]] = []
    real = CommonPhrases.narrow

    def record(self: CommonPhrases, conn: sqlite3.Connection, match: str, top: int,
               depth: int) -> str:
        out = real(self, conn, match, top, depth)
        seen.append((match, out))
        return out

    monkeypatch.setattr(rowcache.CommonPhrases, "narrow", record)
    with _store(tmp_path / "h.db", 300, rare_every=3) as index:
        hits = index.search("We decided on sqlite for n42", limit=5)
    assert hits and "n42" in hits[0].text
    assert seen == [('"decided" OR "sqlite" OR "n42"', '"sqlite" OR "n42"')]


def test_a_store_of_several_users_keeps_the_whole_match(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With another user's turns in the file, counts over the file are not the scope's:
    no narrowing (the rarer phrase's turns could all be the other user's)."""
    calls: list[str] = []
    monkeypatch.setattr(rowcache.CommonPhrases, "narrow",
                        lambda self, conn, match, seen, depth: calls.append(match) or match)
    with _store(tmp_path / "h.db", 300, rare_every=3) as index:
        index.add_turns([TurnInput("s1", "Ann", "sqlite for ann", START, "", "ann")])
        assert index.search("We decided on sqlite for n42", limit=5)
        assert index.search("We decided on sqlite", limit=5, user_id="ann")
    assert calls == []
