"""TurnIndex's dense signal (the ``embeddings`` extra) with a real, tiny embedder.

The embedder below is a real implementation of the ``Embedder`` protocol (concept
buckets: words of one topic share a dimension), so these tests need neither the extra
nor its model; the installed model is exercised by ``benchmarks/locomo_retrieval.py``.
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from collections.abc import Sequence
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnIndex, TurnInput, Weights, vectors

TOPICS = {
    "dog": 0, "puppy": 0, "pets": 0, "pet": 0, "cat": 0,
    "car": 1, "engine": 1, "garage": 1,
    "hiking": 2, "mountains": 2, "trail": 2,
}


class TopicEmbedder:
    """Unit vectors over topic buckets (plus one bucket for every other word)."""

    name = "topics-v1"

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            vec = [0.0] * 4
            for word in text.lower().replace(",", " ").split():
                vec[TOPICS.get(word, 3)] += 1.0 if word in TOPICS else 0.1
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


def _turns() -> list[TurnInput]:
    return [
        TurnInput("s1", "Ann", "I adopted a puppy last week", 0.0, "D1:1"),
        TurnInput("s1", "Bob", "My car engine broke down again", 0.0, "D1:2"),
        TurnInput("s1", "Ann", "We went hiking in the mountains", 0.0, "D1:3"),
        TurnInput("s1", "Ann", "Work has been busy lately", 0.0, "D1:4"),
    ]


def test_dense_signal_lifts_the_turn_about_the_topic(tmp_path: Path) -> None:
    """"Ann's pets" shares only the speaker name with every Ann turn; the vectors pick
    the puppy turn, which is not first without them."""
    strong = Weights(dense=2.0)
    with TurnIndex(tmp_path / "d.db", embedder=TopicEmbedder(), weights=strong) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(60)  # vectors are written by a background writer
        rows, parts = index.candidates("what pets does Ann have")
        dense = {r[6]: p.dense for r, p in zip(rows, parts, strict=True)}
        assert dense["D1:1"] > 0 and dense["D1:2"] == 0 and dense["D1:3"] == 0
        assert index.search("what pets does Ann have")[0].source_id == "D1:1"
    with TurnIndex(tmp_path / "plain.db", dense=False, weights=strong) as plain:
        assert plain.embedder is None
        plain.add_turns(_turns())
        _, parts = plain.candidates("what pets does Ann have")
        assert all(p.dense == 0 for p in parts)
        assert plain.search("what pets does Ann have")[0].source_id != "D1:1"


def test_vectors_are_written_with_their_turns_and_model(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with TurnIndex(path, embedder=TopicEmbedder()) as index:
        ids = index.add_turns(_turns())
        with pytest.raises(ValueError, match="turn 1"):
            index.add_turns([_turns()[0], TurnInput("", "Ann", "x", 0.0)])
        assert index.flush_vectors(60)
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT turn_id, model, length(vec) FROM turn_vectors").fetchall()
    conn.close()
    assert rows == [(i, "topics-v1", 16) for i in ids]  # 4 float32 each; the bad batch: none


def test_vectors_of_another_model_are_replaced(tmp_path: Path) -> None:
    """A model change must not compare vectors of two models: the writer of the new model
    replaces the old vectors (read by model name, so old ones count as absent until then)."""
    path = tmp_path / "m.db"
    with TurnIndex(path, embedder=TopicEmbedder()) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(60)

    class Renamed(TopicEmbedder):
        name = "topics-v2"

    with TurnIndex(path, embedder=Renamed()) as index:
        assert index.flush_vectors(60)
        _, parts = index.candidates("what pets does Ann have")
        assert any(p.dense > 0 for p in parts)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT DISTINCT model FROM turn_vectors").fetchall() == [("topics-v2",)]
    conn.close()


def test_dense_scores_are_z_scored_and_clipped() -> None:
    q = array("f", [1.0, 0.0])
    vecs = [array("f", [1.0, 0.0]), array("f", [0.0, 1.0]), None, array("f", [1.0])]
    scores = vectors.dense_scores(q, vecs)
    assert scores[0] == pytest.approx(1.0) and scores[1:] == [0.0, 0.0, 0.0]
    assert vectors.dense_scores(q, [array("f", [1.0, 0.0])]) == [0.0]
    assert vectors.decode(vectors.encode(q)) == q


def test_missing_model_turns_dense_off_with_a_reason(tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    reason = vectors.status(missing)
    assert reason.startswith("off: ") and "make embeddings" in reason
    assert vectors.load_default(missing) is None


def test_default_weights_keep_dense_below_bm25() -> None:
    """Equal-weight fusion lowered recall on LoCoMo; the default stays BM25-weighted."""
    weights = Weights()
    assert 0 < weights.dense < weights.main
    with pytest.raises(ValueError, match="dense"):
        Weights(dense=-1)
