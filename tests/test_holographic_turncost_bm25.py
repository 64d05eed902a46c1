"""The turn index ranks its main candidates with FTS5's ``bm25()`` computed in process
(:mod:`memoryport.storage.turns.bm25`): the same turns, the same scores to the bit and
the same order (ties to the older turn) as the FTS5 query, on real SQLite files, while
turns arrive from this index, from another one and in bulk, with words FTS5 stems, words
outside ASCII, words FTS5 splits in two (the query then runs in SQL) and tiny bounds.
Every test runs with the top computed by numpy (:mod:`memoryport.storage.turns.bm25_arrays`),
by the plain-Python loop, and by numpy's path falling back to the loop (turn ids too far
apart for one array)."""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnIndex, TurnInput, bm25, bm25_arrays
from memoryport.storage.turns import index as index_module
from memoryport.storage.turns.index import MAIN_DEPTH
from memoryport.storage.turns.rank import (
    DENSE_WEIGHTS,
    Components,
    Weights,
    combine_columns,
    fts_query,
    query_words,
)
from memoryport.storage.turns.rowcache import CATCH_UP_MAX

WORDS = ("decide", "decided", "deciding", "sqlite", "schema", "schemas", "tea", "a1", "b2",
         "x", "is", "be", "abc123", "ies9", "running", "runner", "happily", "caf\u00e9",
         "na\u00efve", "Stra\u00dfe", "\u6771\u4eac", "ab\u19b0cd", "garden", "gardens",
         "lunch", "Lunch", "2024", "07", "relational", "generalization", "sky", "skies")
START = 1_700_000_000.0


@pytest.fixture(autouse=True, params=["numpy", "python", "numpy-falling-back"])
def top_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which computation of the in-process top the test's indexes use."""
    monkeypatch.setattr(bm25, "ARRAYS", request.param != "python")
    monkeypatch.setattr(bm25, "ARRAYS_IMPORT_TURNS", 0)  # numpy imported at any size
    if request.param == "numpy-falling-back":
        monkeypatch.setattr(bm25_arrays, "SPAN_PER_POSTING", -10**9)
    return str(request.param)


def _turns(rng: random.Random, n: int, user: str | None = None,
           sessions: int = 4) -> list[TurnInput]:
    out = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.choice((1, 2, 3, 5, 8, 13)))]
        out.append(TurnInput(f"s{rng.randint(1, sessions)}", rng.choice(("Alice", "Bob", "")),
                             " ".join(words) + rng.choice(("", ".", "?")), START + i, "", user))
    return out


def _reference(path: Path, query: str) -> list[tuple[int, float]]:
    """What the FTS5 query itself returns (a connection of its own, after the search)."""
    match = fts_query(query_words(query))
    if not match:  # stopwords only: no search
        return []
    with sqlite3.connect(path) as conn:
        return [(i, -s) for i, s in conn.execute(
            "SELECT rowid, bm25(turns_fts) AS s FROM turns_fts WHERE turns_fts MATCH ?"
            " ORDER BY s LIMIT ?", (match, index_module.MAIN_DEPTH))]


def _main(index: TurnIndex, query: str, depth: int) -> list[tuple[int, float]]:
    """The main candidates of a search (the first rows :meth:`candidates` returns) and
    their ``main`` signal."""
    rows, parts = index.candidates(query)
    return [(row[0], part.main) for row, part in zip(rows[:depth], parts[:depth], strict=True)]


def _same(index: TurnIndex, path: Path, rng: random.Random, queries: int = 12) -> None:
    for _ in range(queries):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        expected = _reference(path, query)
        assert _main(index, query, len(expected)) == expected, query


@pytest.mark.parametrize("depth", [MAIN_DEPTH, 3])
def test_in_process_bm25_is_fts5s_to_the_bit(tmp_path: Path, depth: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "MAIN_DEPTH", depth)  # ties at the cut when 3
    path = tmp_path / "holographic.db"
    rng = random.Random(12)
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(rng, 150))
        _same(index, path, rng)
        postings = index._cache.postings
        assert postings._terms  # ranked in process, not by the FTS5 query
        assert (postings._np is not None) == bm25.ARRAYS  # by numpy when it is on
        for _ in range(6):  # turns arriving one or a few at a time: caught up
            index.add_turns(_turns(rng, rng.randint(1, 3)))
            _same(index, path, rng, 4)
        with sqlite3.connect(path) as conn:
            ties = [s for (s,) in conn.execute(
                "SELECT bm25(turns_fts) FROM turns_fts WHERE turns_fts MATCH 'sqlite'")]
        assert len(ties) > len(set(ties))  # equal scores: ordered as FTS5 orders them


def test_a_word_fts5_splits_runs_the_query_in_sql(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(5)
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(rng, 60))
        query = "ab\u19b0cd sqlite"  # one word to Python, two terms to FTS5
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH ?",
                                (fts_query(query_words(query)),)).fetchone()[0] > 0
        expected = _reference(path, query)
        assert _main(index, query, len(expected)) == expected
        assert index._cache.postings.top(index._conn, query_words(query), 5) is None


def test_turns_from_another_writer_and_a_bulk_import_are_caught_up(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(8)
    warm, other = TurnIndex(path, dense=False), TurnIndex(path, dense=False)
    try:
        warm.add_turns(_turns(rng, 40))
        _same(warm, path, rng)
        other.add_turns(_turns(rng, 7))
        _same(warm, path, rng)
        other.add_turns(_turns(rng, CATCH_UP_MAX + 30, sessions=30))
        _same(warm, path, rng)
        warm.add_turns(_turns(rng, 2))
        _same(warm, path, rng)
    finally:
        warm.close()
        other.close()


@pytest.mark.parametrize(("vocabulary_turns", "vocabulary_max"), [(0, 0), (10_000, 12)])
def test_tiny_bounds_clear_and_stay_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          vocabulary_turns: int, vocabulary_max: int) -> None:
    monkeypatch.setattr(bm25, "POSTINGS_MAX", 40)
    monkeypatch.setattr(bm25, "WORDS_MAX", 4)
    monkeypatch.setattr(bm25, "VOCABULARY_TURNS", vocabulary_turns)  # 0: looked up
    monkeypatch.setattr(bm25, "VOCABULARY_MAX", vocabulary_max)  # 12: grows past it
    monkeypatch.setattr(bm25, "VOCABULARY_AFTER", 0)
    path = tmp_path / "holographic.db"
    rng = random.Random(21)
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(rng, 80))
        for _ in range(5):
            _same(index, path, rng, 5)
            index.add_turns(_turns(rng, 2))


def test_the_kept_vocabulary_follows_new_turns(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "VOCABULARY_AFTER", 2)
    path = tmp_path / "holographic.db"
    rng = random.Random(17)
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(rng, 30))
        assert index.search("sqlite") != []  # the first search: the FTS5 query
        assert index._cache.postings._vocabulary is None
        assert index.search("tea") != []
        assert index.search("garden") != []  # two words looked up, then read once
        assert index._cache.postings._vocabulary is None
        assert index.search("zebra") == []  # no turn holds it: the vocabulary says so
        assert index._cache.postings._vocabulary is not None
        index.add_turns([TurnInput("s9", "Alice", "A zebra crossed the garden.", START)])
        assert [h.text for h in index.search("zebra")] == ["A zebra crossed the garden."]
        _same(index, path, rng)
        index.add_turns(_turns(rng, 3))
        index.search("garden")  # caught up
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, turns_fts, row)")
            stored = dict(conn.execute("SELECT term, doc FROM temp.v"))
        assert index._cache.postings._vocabulary == stored  # every term, turns holding it


def test_an_empty_store_and_absent_words_find_nothing(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    with TurnIndex(path, dense=False) as index:
        assert index.search("sqlite schema") == []
        index.add_turns([TurnInput("s1", "Alice", "We chose the sqlite schema.", START)])
        assert index.search("pottery") == []
        assert [h.text for h in index.search("sqlite")] == ["We chose the sqlite schema."]


def test_varints_read_sqlite_format() -> None:
    assert bm25.varints(bytes([0x05, 0x81, 0x00, 0x7F])) == [5, 128, 127]
    nine = bytes([0xFF] * 8 + [0x01])
    assert bm25.varints(nine) == [((1 << 56) - 1) << 8 | 1]


def test_first_varint_is_the_first_of_varints() -> None:
    for blob in (bytes([0x00]), bytes([0x7F, 0x05]), bytes([0x81, 0x00]), bytes([0x82, 0x80, 0x01]),
                 bytes([0xFF] * 8 + [0x01, 0x07])):
        assert bm25.first_varint(blob) == bm25.varints(blob)[0]
    assert bm25.first_varint(bytes([0x81, 0x00])) == 128


def _reference_blocks(path: Path, query: str, depth: int) -> list[tuple[tuple[str, int], float]]:
    match = fts_query(query_words(query))
    with sqlite3.connect(path) as conn:
        return [((s, b), -v) for s, b, v in conn.execute(
            "SELECT b.session_id, b.block, bm25(blocks_fts) AS s FROM blocks_fts f"
            " JOIN turn_blocks b ON b.id = f.rowid WHERE blocks_fts MATCH ? AND b.user_id = ?"
            " ORDER BY s LIMIT ?", (match, "", depth))]


@pytest.mark.parametrize("depth", [MAIN_DEPTH, 3])
def test_session_blocks_are_scored_as_fts5_scores_them(tmp_path: Path, depth: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "MAIN_DEPTH", depth)  # ties at the cut when 3
    path = tmp_path / "holographic.db"
    rng = random.Random(30 + depth)
    with TurnIndex(path, dense=False) as index:
        twins = _turns(rng, 20, sessions=1)  # the same text in several sessions: ties
        for name in ("t1", "t2", "t3"):
            index.add_turns([TurnInput(name, t.speaker, t.text, t.timestamp) for t in twins])
        index.add_turns(_turns(rng, 300, sessions=3))
        for step in range(8):
            query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
            index.search(query)  # caught up, postings loaded
            match = fts_query(query_words(query))
            if match:
                got = index._block_scores(match, "")
                assert list(got.items()) == _reference_blocks(path, query, depth), query
            index.add_turns(_turns(rng, step % 3 + 1, sessions=5))
        assert index._cache.postings._in_blocks  # scored in process


def test_ascii_text_is_split_as_fts5_splits_it() -> None:
    """The catch-up splits ASCII text itself (runs of letters and digits): what FTS5's
    tokenizer makes of every ASCII character between words."""
    texts = [(cp, f"ab{chr(cp)}cd Q{chr(cp)}9 x{chr(cp)}") for cp in range(1, 128)]
    found: dict[int, list[str]] = {}
    for rowid, term in bm25.tokens(texts):
        found.setdefault(rowid, []).append(term)
    for rowid, text in texts:
        words = re.findall(r"[a-z0-9]+", text.lower())
        index = bm25.Postings(64)
        terms = index._terms_of(words)
        assert terms is not None
        assert sorted(found[rowid]) == sorted(terms), repr(text)


@pytest.mark.parametrize("weights", [Weights(), DENSE_WEIGHTS])
def test_signals_are_combined_as_one_column_at_a_time(weights: Weights) -> None:
    """The weighted sum takes three columns a pass: the same floats as adding one column
    at a time, left to right."""
    rng = random.Random(9)
    for size in (1, 7, 260):
        columns = [[rng.random() if rng.random() < share else 0.0 for _ in range(size)]
                   for share in (0.3, 0.5, 0.5, 1.0, 0.0, 0.1, 0.2, 1.0, 0.0, 0.2, 0.3, 0.0)]
        expected = [0.0] * size
        for name, column in zip(Components._fields, columns, strict=True):
            weight = getattr(weights, name)
            best = max(column) if weight else 0.0
            if best > 0 and name != "listed":
                expected = [t + weight / best * v for t, v in zip(expected, column, strict=True)]
        listed_off = [*columns[:-1], [0.0] * size]
        assert combine_columns(listed_off, weights) == expected


def test_postings_read_fts5s_averages_themselves_outside_a_search(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(random.Random(2), 40))
        fresh = bm25.Postings(64)  # no catch-up has handed it the averages records
        assert fresh.top(index._conn, ["sqlite", "tea"], 5) is None  # its first: the query
        found = fresh.top(index._conn, ["sqlite", "tea"], index_module.MAIN_DEPTH)
        assert found == _reference(path, "sqlite tea")


def test_a_word_in_too_many_turns_is_ranked_by_the_query(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "TERM_MAX", 5)
    path = tmp_path / "holographic.db"
    rng = random.Random(6)
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns(rng, 80))
        _same(index, path, rng)  # common words: the query; rare ones: in process
        assert "sqlite" not in index._cache.postings._terms

