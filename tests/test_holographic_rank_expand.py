"""Query expansion through the stored vocabulary (the ``expand`` signal).

The background vector writer embeds each distinct word of the stored turns once
(``turn_words``); a query's nearest words expand it, so a turn that shares no word with
the question ("Which instruments ..." / "I practised the violin") becomes a candidate. The
embedder below is a real implementation of the ``Embedder`` protocol (topic buckets), so
these tests need neither the ``embeddings`` extra's model nor a download.
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memoryport.storage.turns import TurnIndex, TurnInput, Weights, expand
from memoryport.storage.turns.rank import DENSE_WEIGHTS

_BUCKETS = {"instruments": 0, "violin": 0, "clarinet": 0, "music": 0,
            "pets": 1, "turtles": 1, "dog": 1}


class BucketEmbedder:
    """Unit vectors over buckets (music, pets, everything else at a small weight); keeps
    every text it was asked to embed."""

    name = "buckets-expand-v1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            self.seen.append(text)
            vec = [0.0] * 3
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                vec[_BUCKETS.get(word, 2)] += 1.0 if word in _BUCKETS else 0.05
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


def _turns() -> list[TurnInput]:
    return [
        TurnInput("s1", "Bob", "The instruments in that shop were expensive.", 0.0, "D1:1"),
        TurnInput("s1", "Ann", "Shops downtown always are.", 0.0, "D1:2"),
        TurnInput("s1", "Bob", "We should go back another day.", 0.0, "D1:3"),
        TurnInput("s2", "Ann", "Weekend plans are still open.", 0.0, "D2:1"),
        TurnInput("s2", "Bob", "Mine too, nothing booked.", 0.0, "D2:2"),
        TurnInput("s3", "Ann", "Yesterday I practised the violin for hours.", 0.0, "D3:1"),
        TurnInput("s3", "Bob", "The weather was lovely.", 0.0, "D3:2"),
    ]


QUESTION = "Which instruments are played here?"


def test_words_of_keeps_content_words() -> None:
    assert expand.words_of("I practised the Violin, twice: at 9 and 10!") == {
        "practised", "violin", "twice"}
    assert expand.words_of("") == set()


def test_terms_leave_out_query_words_their_forms_and_names() -> None:
    nearest = [("instrument", 0.9), ("violin", 0.8), ("ann", 0.7), ("clarinet", 0.6)]
    assert expand.terms(nearest, ["which", "instruments", "does", "ann", "play"], ["Ann"]) == [
        ("violin", 0.8), ("clarinet", 0.6)]


def test_a_turn_sharing_no_word_with_the_question_is_found(tmp_path: Path) -> None:
    """Without expansion the violin turn is not a candidate at all: it shares no word
    with the question, is no neighbour of a turn that does, and its session block does
    not match. Its word "violin" is the question's nearest stored word."""
    with TurnIndex(tmp_path / "x.db", embedder=BucketEmbedder()) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(30)
        found = [h.source_id for h in index.search(QUESTION, limit=5)]
        assert "D3:1" in found
        rows, parts = index.candidates(QUESTION)
        by_source = {row[6]: part for row, part in zip(rows, parts, strict=True)}
        assert by_source["D3:1"].expand > 0
        assert by_source["D1:1"].expand == 0  # holds the query word, not an expansion


def test_without_a_model_nothing_expands(tmp_path: Path) -> None:
    with TurnIndex(tmp_path / "x.db", dense=False) as index:
        index.add_turns(_turns())
        assert index.weights == Weights()
        found = [h.source_id for h in index.search(QUESTION, limit=5)]
        assert "D3:1" not in found
        assert all(p.expand == 0 for p in index.candidates(QUESTION)[1])


def test_a_zero_expand_weight_adds_no_candidate(tmp_path: Path) -> None:
    """The signal off (as on PostgreSQL, which keeps no vocabulary) means no expansion
    candidates either: the candidates are the lexical ones."""
    weights = replace(DENSE_WEIGHTS, expand=0.0)
    with TurnIndex(tmp_path / "x.db", embedder=BucketEmbedder(), weights=weights) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(30)
        rows, parts = index.candidates(QUESTION)
        assert "D3:1" not in [r[6] for r in rows]
        assert all(p.expand == 0 for p in parts)


def test_words_are_embedded_once_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    first = BucketEmbedder()
    with TurnIndex(path, embedder=first) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(30)
        assert index.weights.expand == DENSE_WEIGHTS.expand > 0
    conn = sqlite3.connect(path)
    stored = {r[0] for r in conn.execute("SELECT word FROM turn_words WHERE model = ?",
                                         (first.name,))}
    conn.close()
    assert {"violin", "instruments", "practised", "weather"} <= stored
    assert first.seen.count("violin") == 1
    again = BucketEmbedder()
    with TurnIndex(path, embedder=again) as index:
        assert index.flush_vectors(30)
        assert "violin" not in again.seen  # nothing re-embedded on reopening
        assert "D3:1" in [h.source_id for h in index.search(QUESTION, limit=5)]
        index.add_turns([TurnInput("s4", "Ann", "My clarinet squeaks.", 0.0, "D4:1")])
        assert index.flush_vectors(30)
        assert again.seen.count("clarinet") == 1 and "squeaks" in again.seen
        assert "D4:1" in [h.source_id for h in index.search(QUESTION, limit=5)]
