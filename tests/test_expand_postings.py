"""The expansion's term lookups from the in-process postings (:meth:`.bm25.Postings.holders`):
in a file whose only user is the scope searched, each expansion word's turns come from
memory instead of one FTS5 phrase query each, with the same turns and the same sums (to
the bit) as the SQL path, on real SQLite files, while turns arrive from this index and
from another writer (also between a search's snapshot and its expansion), with tiny
bounds; a file with a second user, a word FTS5 makes several terms of, and a word in more
than :data:`~memoryport.storage.turns.expand.COMMON` turns take the SQL path's answer."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnIndex, TurnInput, bm25, expand
from test_holographic_rank_expand import BucketEmbedder

WORDS = ("violin", "violins", "clarinet", "guitar", "music", "musical", "garden", "gardens",
         "gardening", "pets", "turtles", "dog", "dogs", "weather", "lunch", "running",
         "runner", "caf\u00e9", "stra\u00dfe", "generalization", "sqlite", "decided")
SPLIT = "ab\u19b0cd"  # one vocabulary word (expand.words_of), two FTS5 terms ("ab", "cd")


def _turns(rng: random.Random, n: int, user: str | None = None,
           sessions: int = 5) -> list[TurnInput]:
    out = []
    for i in range(n):
        words = [rng.choice((*WORDS, SPLIT)) for _ in range(rng.choice((1, 2, 3, 5, 8)))]
        out.append(TurnInput(f"s{rng.randint(1, sessions)}", rng.choice(("Ann", "Bob", "")),
                             " ".join(words) + rng.choice(("", ".", "!")), float(i), "", user))
    return out


def _expansion(rng: random.Random, words: Sequence[str] = WORDS) -> list[tuple[str, float]]:
    return [(w, rng.uniform(expand.FLOOR, 0.95))
            for w in rng.sample(list(words), rng.randint(1, min(expand.TERMS, len(words))))]


def _bits(scores: dict[int, float]) -> dict[int, str]:
    return {turn: score.hex() for turn, score in scores.items()}


def _reference(path: Path, scope: str, expansion: list[tuple[str, float]]) -> dict[int, float]:
    """The SQL path's scores, on a connection of its own (after the index's lookup)."""
    conn = sqlite3.connect(path)
    try:
        return expand.scores(conn, scope, expansion)
    finally:
        conn.close()


def _from_postings(index: TurnIndex, expansion: list[tuple[str, float]]
                   ) -> tuple[dict[int, float], bool]:
    """The scores as the expansion computes them in a one-user file (search lock, a read
    snapshot, the catch-up first), and whether the postings answered."""
    conn, cache = index._conn, index._cache
    with index._lock, index._snapshot():
        cache.catch_up(conn)
        assert cache.single == ""
        answered = cache.postings.holders(conn, [w for w, _ in expansion],
                                          expand.COMMON) is not None
        return expand.scores(conn, "", expansion, cache.postings), answered


@pytest.mark.parametrize("tiny", [False, True])
def test_the_postings_give_the_sql_paths_scores_to_the_bit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny: bool) -> None:
    if tiny:  # bounds cleared and refilled between lookups: still exact
        monkeypatch.setattr(bm25, "POSTINGS_MAX", 30)
        monkeypatch.setattr(bm25, "WORDS_MAX", 6)
    path = tmp_path / "holographic.db"
    rng = random.Random(12)
    with TurnIndex(path, dense=False) as index, TurnIndex(path, dense=False) as other:
        index.add_turns(_turns(rng, 120))
        assert index.search("garden weather") != []  # the file's only user, now known
        found = 0
        for step in range(8):
            for _ in range(4):
                expansion = _expansion(rng)
                got, answered = _from_postings(index, expansion)
                assert answered
                assert _bits(got) == _bits(_reference(path, "", expansion))
                found += len(got)
            writer = index if step % 2 else other  # this index, or another writer
            writer.add_turns(_turns(rng, rng.randint(1, 4)))
        assert found > 0
        if not tiny:
            assert index._cache.postings._holders  # kept and followed, not re-read


def test_new_turns_after_the_searchs_snapshot_are_caught_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn another writer stores between the search's snapshot and its expansion holds
    an expansion word: the expansion's own snapshot catches up, and scores it."""
    path = tmp_path / "holographic.db"
    with TurnIndex(path, embedder=BucketEmbedder()) as index, \
            TurnIndex(path, dense=False) as other:
        index.add_turns(_music_turns())
        assert index.flush_vectors(30)
        assert index.search(QUESTION) != []
        calls = _spy(monkeypatch)
        stored: list[int] = []
        nearest = index._add_nearest

        def meanwhile(query: str, scope: str, rows: list[expand.Row]) -> list[expand.Row]:
            stored.extend(other.add_turns([TurnInput("s9", "Ann", "The clarinet again.",
                                                     9.0, "D9:1")]))
            return nearest(query, scope, rows)

        monkeypatch.setattr(index, "_add_nearest", meanwhile)
        rows, parts = index.candidates(QUESTION)
        ((expansion, postings, got),) = calls
        assert postings is index._cache.postings
        assert "clarinet" in [w for w, _ in expansion]
        assert stored[0] in got
        assert _bits(got) == _bits(_reference(path, "", expansion))
        by_id = {row[0]: part.expand for row, part in zip(rows, parts, strict=True)}
        assert by_id[stored[0]] == got[stored[0]] > 0


def test_a_second_user_in_the_file_takes_the_sql_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bob's turn holds the expansion words: the postings would count it (and the file's
    turns as ``N``); the scope's scores leave it out and count only the scope's turns."""
    path = tmp_path / "holographic.db"
    with TurnIndex(path, embedder=BucketEmbedder()) as index:
        index.add_turns(_music_turns())
        assert index.flush_vectors(30)
        assert index.search(QUESTION) != []
        assert index._cache.single == ""
        bob = index.add_turns([TurnInput("b1", "Bob", "My violin and my clarinet.", 0.0,
                                         "B1:1", user_id="bob")])
        calls = _spy(monkeypatch)
        index.candidates(QUESTION)
        ((expansion, postings, got),) = calls
        assert postings is None and index._cache.single is None
        assert bob[0] not in got and got
        assert _bits(got) == _bits(_reference(path, "", expansion))
        with sqlite3.connect(path) as conn:
            everyone = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        mine = index.count()
        assert everyone == mine + 1  # a different N for the postings: not used


def test_a_word_of_several_fts5_terms_takes_the_sql_path(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(5)
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(rng, 80))
        assert index.search("garden") != []
        expansion = [("violin", 0.6), (SPLIT, 0.5), ("garden", 0.4)]
        assert expand.words_of(SPLIT) == {SPLIT}
        got, answered = _from_postings(index, expansion)
        assert not answered
        reference = _reference(path, "", expansion)
        assert _bits(got) == _bits(reference)
        alone = _reference(path, "", [(SPLIT, 0.5)])
        assert alone and set(alone) <= set(got)  # its turns scored, by FTS5's phrase


def test_a_word_in_too_many_turns_is_skipped_and_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expand, "COMMON", 5)
    path = tmp_path / "holographic.db"
    turns = ([TurnInput("s1", "Ann", f"garden visit {i}", float(i)) for i in range(9)]
             + [TurnInput("s2", "Bob", f"violin lesson {i}", float(i)) for i in range(3)]
             + [TurnInput("s2", "Bob", "violin in the garden", 3.0)])
    with TurnIndex(path, dense=False) as index:
        index.add_turns(turns)
        assert index.search("visit") != []
        expansion = [("garden", 0.7), ("violin", 0.5)]
        got, answered = _from_postings(index, expansion)
        assert answered
        assert _bits(got) == _bits(_reference(path, "", expansion))
        assert len(got) == 4 and len(set(got.values())) == 1  # violin's only: garden skipped
        postings = index._cache.postings
        assert "garden" in postings._over and "garden" not in postings._holders
        statements: list[str] = []
        index._conn.set_trace_callback(statements.append)
        try:
            again, _ = _from_postings(index, expansion)
        finally:
            index._conn.set_trace_callback(None)
        assert again == got and not any("MATCH" in s for s in statements)  # from memory
        # Violin grows past the bound through the catch-up: skipped from then on too.
        index.add_turns([TurnInput("s3", "Ann", f"violin {i}", 9.0) for i in range(3)])
        got, answered = _from_postings(index, expansion)
        assert answered and got == {} == _reference(path, "", expansion)


def test_the_kept_vocabulary_skips_a_common_word_without_a_query(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expand, "COMMON", 5)
    monkeypatch.setattr(bm25, "VOCABULARY_AFTER", 0)
    path = tmp_path / "holographic.db"
    with TurnIndex(path, dense=False) as index:
        index.add_turns([TurnInput("s1", "Ann", f"garden visit {i}", float(i))
                         for i in range(9)])
        assert index.search("visit") != []
        assert index.search("garden") != []  # a word looked up: the vocabulary read
        postings = index._cache.postings
        assert postings._vocabulary is not None
        statements: list[str] = []
        index._conn.set_trace_callback(statements.append)
        try:
            got, answered = _from_postings(index, [("visits", 0.6), ("zebra", 0.5)])
        finally:
            index._conn.set_trace_callback(None)
        assert answered and got == {}
        assert not any("MATCH" in s for s in statements)
        assert _reference(path, "", [("visits", 0.6), ("zebra", 0.5)]) == {}


# A real Embedder (topic buckets, from the expansion's own tests): the expansion of
# QUESTION is the music words.
QUESTION = "Which instruments are played here?"


def _music_turns() -> list[TurnInput]:
    return [
        TurnInput("s1", "Bob", "The instruments in that shop were expensive.", 0.0, "D1:1"),
        TurnInput("s1", "Ann", "Shops downtown always are.", 1.0, "D1:2"),
        TurnInput("s2", "Ann", "Yesterday I practised the violin for hours.", 2.0, "D2:1"),
        TurnInput("s2", "Bob", "My clarinet squeaks, the dog hates it.", 3.0, "D2:2"),
        TurnInput("s3", "Ann", "Music at the park on Sunday.", 4.0, "D3:1"),
        TurnInput("s3", "Bob", "The weather was lovely.", 5.0, "D3:2"),
    ]


Call = tuple[list[tuple[str, float]], "bm25.Postings | None", dict[int, float]]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Record each :func:`expand.scores` call of a search: its expansion, the postings it
    was given and what it returned."""
    calls: list[Call] = []
    real = expand.scores

    def spy(conn: sqlite3.Connection, scope: str, expansion: Sequence[tuple[str, float]],
            postings: bm25.Postings | None = None) -> dict[int, float]:
        out = real(conn, scope, expansion, postings)
        calls.append((list(expansion), postings, out))
        return out

    monkeypatch.setattr(expand, "scores", spy)
    return calls
