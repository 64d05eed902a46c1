"""The background vector writer yields to a search's query embedding, loses nothing.

A search's query is embedded on the index's query thread (``query_vectors``); while it
is, the writer waits before each batch (and, with MiniLM, before each layer of the
model). The embedders here are real: the encoder runs the 2-layer BERT that
``test_holographic_embed`` writes, and ``GateEmbedder`` is a topic-bucket ``Embedder``
whose query embedding waits for the test to let it finish (so the order of the two is
checked without timing).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnIndex, TurnInput, vectors
from memoryport.storage.turns.encoder import MiniLM
from test_holographic_embed import LAYERS, tiny_model


def test_pause_runs_before_each_layer_and_changes_nothing(tmp_path: Path) -> None:
    model = MiniLM(tiny_model(tmp_path / "tiny"))
    texts = ["alice bought a car", "the car", "bob"]
    calls: list[int] = []
    paused = model.embed(texts, pause=lambda: calls.append(1))
    assert [list(v) for v in paused] == [list(v) for v in model.embed(texts)]
    assert len(calls) == LAYERS  # one batch: the three texts fit in one forward pass
    assert model.pauses


class GateEmbedder:
    """Unit vectors over two buckets; a text holding "slow" waits for :attr:`gate`.
    Records ``("start" | "done", text)`` in order."""

    name = "gate-v1"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started_slow = threading.Event()
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            with self._lock:
                self.events.append(("start", text))
            if "slow" in text:
                self.started_slow.set()
                assert self.gate.wait(30)
            cars = sum(w in ("car", "engine") for w in text.lower().split())
            norm = math.sqrt(cars * cars + 1.0)
            out.append(array("f", [cars / norm, 1.0 / norm]))
            with self._lock:
                self.events.append(("done", text))
        return out

    def index(self, event: tuple[str, str]) -> int:
        """Where ``event`` happened (first time)."""
        with self._lock:
            return self.events.index(event)


def test_writer_waits_for_the_query_and_loses_nothing(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "WRITER_WAIT", 30.0)  # the gate decides, not a timeout
    embedder = GateEmbedder()
    path = tmp_path / "w.db"
    with TurnIndex(path, embedder=embedder) as index:
        index.add_turns([TurnInput("s1", "Ann", "my car engine broke", 0.0, "D1:1")])
        assert index.flush_vectors(30)
        found: list[str] = []
        search = threading.Thread(target=lambda: found.extend(
            h.source_id for h in index.search("slow car engine", limit=3)))
        search.start()
        assert embedder.started_slow.wait(30)  # the query is being embedded
        index.add_turns([TurnInput("s1", "Bob", "the car is fixed", 0.0, "D1:2")])
        embedder.gate.set()
        search.join(30)
        assert found[0] == "D1:1"
        assert index.flush_vectors(30)
        assert embedder.index(("done", "slow car engine")) < embedder.index(
            ("start", "the car is fixed"))
        hits = index.search("car", limit=3)
    assert {h.source_id for h in hits} == {"D1:1", "D1:2"}
    with sqlite3.connect(path) as conn:  # every turn has its vector, of this model
        stored = conn.execute("SELECT t.source_id, v.model FROM turns t JOIN turn_vectors v"
                              " ON v.turn_id = t.id ORDER BY t.id").fetchall()
    assert stored == [("D1:1", "gate-v1"), ("D1:2", "gate-v1")]
