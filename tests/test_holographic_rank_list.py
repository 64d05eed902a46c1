"""The ``listed`` signal: list-shaped questions reach their items in other sessions.

A question asking for several things ("What instruments has Ann played?") has its answers
in turns that share no word with it; the query expansion finds them (``expand``), and for
such a question the expansion counts again for the turns of the speaker it names, but
only below the first ``LIST_KEEP`` places of the ranking without it. The embedder below
is a real implementation of the ``Embedder`` protocol (two topic buckets), so these tests
need neither the ``embeddings`` extra's model nor a download.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memoryport.storage.turns import Components, TurnIndex, TurnInput, Weights
from memoryport.storage.turns.rank import (
    DENSE_WEIGHTS,
    LIST_KEEP,
    asks_for_list,
    combine_columns,
    listed_column,
)

_MUSIC = frozenset({"instruments", "violin", "cello", "music"})
LIST_QUESTION = "What instruments has Ann played?"
ONE_QUESTION = "Which instrument did Ann play at the fair?"


class MusicEmbedder:
    """Unit vectors over two buckets: music words, and everything else at a small weight."""

    name = "buckets-list-v1"

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            vec = [0.0, 0.0]
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                vec[0 if word in _MUSIC else 1] += 1.0 if word in _MUSIC else 0.05
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


def _turns() -> list[TurnInput]:
    """Twelve sessions that name the instruments at a fair (Ann and Bob in turn), then
    Ann's violin and Bob's cello, which share no word with the questions."""
    turns = []
    for n in range(12):
        said, answered = ("Ann", "Bob") if n % 2 else ("Bob", "Ann")
        turns += [TurnInput(f"s{n}", said, f"The instruments at fair number {n} were loud.",
                            float(n), f"D{n}:1"),
                  TurnInput(f"s{n}", answered, f"Sounds like a long day {n}.", float(n),
                            f"D{n}:2")]
    return [
        *turns,
        TurnInput("s20", "Ann", "Yesterday I practised the violin for hours.", 20.0, "D20:1"),
        TurnInput("s20", "Bob", "The weather was lovely.", 20.0, "D20:2"),
        TurnInput("s21", "Bob", "My cello needs new strings.", 21.0, "D21:1"),
    ]


@pytest.mark.parametrize("question", [
    "What activities does Melanie partake in?", "What books has Melanie read?",
    "What European countries has Maria been to?", "Where has Melanie camped?",
    "What has Melanie painted?", "What are Joanna's hobbies?",
    "What are Maria's dogs' names?", "What do Jon and Gina both have in common?",
    "How many children does Melanie have?", "What kind of writings does Joanna do?",
    "Which cities has Jon visited?", "What people has Maria met?"])
def test_list_questions_are_told_by_their_shape(question: str) -> None:
    assert asks_for_list(question)


@pytest.mark.parametrize("question", [
    "What did Melanie paint recently?", "When did Caroline go to the LGBTQ support group?",
    "What is Caroline's identity?", "Where did Caroline move from 4 years ago?",
    "Why did Gina decide to start her own clothing store?", "What does Jon's studio offer?",
    "Would Caroline pursue writing as a career option?", "What kind of art does she make?",
    "What was grandma's gift to Melanie?", "", "instruments", "What is this?"])
def test_other_questions_are_not(question: str) -> None:
    assert not asks_for_list(question)


def test_listed_leaves_the_first_places_and_reorders_the_rest() -> None:
    """Seven candidates: main alone orders them 0..6; ``listed`` favours 6, then 5. The
    first LIST_KEEP keep their places and order, 6 and 5 come next, ahead of nothing
    they did not beat."""
    main = [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    listed = [0.0, 0.0, 0.0, 0.0, 9.0, 4.0, 10.0]
    zeros = [0.0] * len(main)
    columns = [main, *([zeros] * 10), listed]
    weights = replace(Weights(), listed=1.0)
    scores = combine_columns(columns, weights)
    order = sorted(range(len(main)), key=lambda i: -scores[i])
    assert LIST_KEEP == 5
    assert order == [0, 1, 2, 3, 4, 6, 5]
    alone = [(1.0 / 7.0) * m for m in main]  # as combine_columns scales
    assert combine_columns(columns, replace(weights, listed=0.0)) == alone
    assert combine_columns([main, *([zeros] * 11)], weights) == alone


def test_listed_column_is_the_named_speakers_expand_for_list_questions_only() -> None:
    expand = [2.0, 0.0, 3.0]
    assert listed_column(LIST_QUESTION, [1.0, 1.0, 0.0], expand) == [2.0, 0.0, 0.0]
    assert listed_column(LIST_QUESTION, [0.0, 0.0, 0.0], expand) == expand  # names no one
    assert listed_column(ONE_QUESTION, [1.0, 1.0, 0.0], expand) == [0.0, 0.0, 0.0]
    assert listed_column(LIST_QUESTION, [1.0, 1.0, 0.0], [0.0] * 3) == [0.0] * 3


def _search(path: Path, weights: Weights, question: str) -> list[str]:
    with TurnIndex(path, embedder=MusicEmbedder(), weights=weights) as index:
        if not index.count():
            index.add_turns(_turns())
        assert index.flush_vectors(30)
        return [h.source_id for h in index.search(question, limit=10)]


def test_a_list_question_reaches_the_named_speakers_item(tmp_path: Path) -> None:
    """Ann's violin shares no word with the question and ranks under the twelve turns
    naming the instruments without ``listed``; with it, it enters the ten best after the
    first LIST_KEEP places, which do not move. Bob's cello (not the named speaker) does
    not."""
    assert DENSE_WEIGHTS.listed > 0
    plain = _search(tmp_path / "off.db", replace(DENSE_WEIGHTS, listed=0.0), LIST_QUESTION)
    listed = _search(tmp_path / "on.db", DENSE_WEIGHTS, LIST_QUESTION)
    assert "D20:1" not in plain
    assert "D20:1" in listed and listed.index("D20:1") >= LIST_KEEP
    assert listed[:LIST_KEEP] == plain[:LIST_KEEP]
    assert "D21:1" not in listed
    with TurnIndex(tmp_path / "on.db", embedder=MusicEmbedder()) as index:
        rows, parts = index.candidates(LIST_QUESTION)
        by_source = {row[6]: part for row, part in zip(rows, parts, strict=True)}
        assert by_source["D20:1"].listed == by_source["D20:1"].expand > 0
        assert by_source["D21:1"].expand > 0 == by_source["D21:1"].listed


def test_other_questions_rank_as_without_it(tmp_path: Path) -> None:
    plain = _search(tmp_path / "off.db", replace(DENSE_WEIGHTS, listed=0.0), ONE_QUESTION)
    assert _search(tmp_path / "on.db", DENSE_WEIGHTS, ONE_QUESTION) == plain
    with TurnIndex(tmp_path / "on.db", embedder=MusicEmbedder()) as index:
        parts = index.candidates(ONE_QUESTION)[1]
        assert any(p.expand for p in parts) and not any(p.listed for p in parts)


def test_without_a_model_nothing_is_listed(tmp_path: Path) -> None:
    with TurnIndex(tmp_path / "x.db", dense=False) as index:
        index.add_turns(_turns())
        assert index.weights == Weights() and Weights().listed == 0
        parts = index.candidates(LIST_QUESTION)[1]
        assert parts and not any(p.listed or p.expand for p in parts)
        assert "D20:1" not in [h.source_id for h in index.search(LIST_QUESTION, limit=10)]


def test_the_benchmark_fit_ranks_as_the_index() -> None:
    """``benchmarks/locomo_retrieval.py --folds`` fits weights with its own numpy scoring;
    with ``listed`` it must order candidates as :func:`combine_columns` does."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import _locomo_holo as holo

    parts = [Components(main=m, prev=0.0, next=0.0, session=0.0, speaker=1.0, window=0.0,
                        when=0.0, dense=d, expand=e, listed=e)
             for m, d, e in ((9, 1, 0), (8, 0, 0), (7, 2, 0), (6, 0, 1), (5, 0, 0),
                             (4, 0, 3), (3, 1, 0), (2, 0, 5), (1, 0, 4))]
    for weights in (DENSE_WEIGHTS, replace(DENSE_WEIGHTS, listed=0.0), Weights()):
        expected = combine_columns([list(c) for c in zip(*parts, strict=True)], weights)
        normed, main = holo._matrix(parts)
        vector = [getattr(weights, name) for name in Components._fields]
        got = holo._scores(normed, main, np.array(vector, dtype=np.float64))
        order = sorted(range(len(parts)), key=lambda i: -expected[i])
        assert sorted(range(len(parts)), key=lambda i: -got[i]) == order
