"""A search's query vector: embedded beside the lexical part, on the index's query thread.

The embedder below is a real implementation of the ``Embedder`` protocol (topic buckets)
that records which thread embedded each text, so these tests need neither the
``embeddings`` extra nor its model. What they prove: the query is embedded on the query
thread (started before the lexical part), the vector and so every score are exactly those
of embedding it on the search's own thread (``query_vectors.AHEAD`` off), a wrong guess
of the text (a speaker named in the query without a candidate turn) is embedded again
exactly as asked, a repeated query is not embedded twice, and closing the index stops
the thread.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnIndex, TurnInput, Weights, query_vectors, vectors

TOPICS = {"dog": 0, "puppy": 0, "pets": 0, "car": 1, "engine": 1, "hiking": 2, "trail": 2}


class ThreadEmbedder:
    """Unit vectors over topic buckets; records (text, thread name) of each text."""

    name = "topics-threads-v1"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            with self._lock:
                self.seen.append((text, threading.current_thread().name))
            vec = [0.0] * 4
            for word in text.lower().replace("?", " ").replace(",", " ").split():
                vec[TOPICS.get(word, 3)] += 1.0 if word in TOPICS else 0.1
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out

    def threads_of(self, text: str) -> list[str]:
        """The threads that embedded ``text``."""
        with self._lock:
            return [name for seen, name in self.seen if seen == text]


def _turns() -> list[TurnInput]:
    return [
        TurnInput("s1", "Ann", "I adopted a puppy last week", 0.0, "D1:1"),
        TurnInput("s1", "Bob", "My car engine broke down again", 0.0, "D1:2"),
        TurnInput("s1", "Ann", "We went hiking on a new trail", 0.0, "D1:3"),
        TurnInput("s1", "Ann", "Work has been busy with the car", 0.0, "D1:4"),
        TurnInput("s2", "Carol", "The weather was nice", 0.0, "D2:1"),
    ]


@pytest.fixture()
def ahead() -> Iterator[None]:
    """Restore ``query_vectors.AHEAD`` after a test that turns it off."""
    yield
    query_vectors.AHEAD = True


def _search(path: Path, query: str, *, on: bool) -> tuple[list[tuple[str, float]],
                                                         ThreadEmbedder]:
    query_vectors.AHEAD = on
    embedder = ThreadEmbedder()
    with TurnIndex(path, embedder=embedder, weights=Weights(dense=2.0)) as index:
        assert index.flush_vectors(60)
        hits = index.search(query, limit=5)
    return [(h.source_id, h.score) for h in hits], embedder


def test_query_embedded_on_the_query_thread_with_the_same_scores(
        tmp_path: Path, ahead: None) -> None:
    path = tmp_path / "q.db"
    with TurnIndex(path, embedder=ThreadEmbedder()) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(60)
    query = "What happened to Ann's car engine?"
    later, embedder = _search(path, query, on=False)
    assert embedder.threads_of("What happened to car engine?") == ["MainThread"]
    early, embedder = _search(path, query, on=True)
    # the writer read every turn's speaker (flush), so the names were guessed right
    assert embedder.threads_of("What happened to car engine?") == [
        "memoryport-query-vectors"]
    assert early == later and early[0][0] == "D1:2"


def test_wrong_guess_is_embedded_again_as_asked() -> None:
    """The scope's speakers include Carol, so the guess drops her name; the search's
    candidates have no turn of hers, so it asks for the query with the name: that text
    is embedded (on the asking thread), and the vector is exactly the embedder's."""
    embedder = ThreadEmbedder()
    queries = query_vectors.QueryVectors(embedder.embed, vectors.query_text)
    try:
        queries.spoke("", {"Ann", "Carol"})
        query = "Did Carol fix the car engine?"
        queries.start(query, "")
        assert queries.get("Did fix the car engine?") == embedder.embed(
            ["Did fix the car engine?"])[0]
        assert queries.get(query) == embedder.embed([query])[0]
        assert embedder.threads_of("Did fix the car engine?")[0] == "memoryport-query-vectors"
        assert embedder.threads_of(query)[0] == "MainThread"
        assert queries.idle.is_set()
    finally:
        queries.stop()


def test_repeated_query_is_embedded_once_and_close_stops_the_thread(tmp_path: Path) -> None:
    embedder = ThreadEmbedder()
    index = TurnIndex(tmp_path / "r.db", embedder=embedder)
    index.add_turns(_turns())
    assert index.flush_vectors(60)
    first = index.search("the car engine", limit=3)
    second = index.search("the car engine", limit=3)
    assert [h.source_id for h in first] == [h.source_id for h in second]
    assert len(embedder.threads_of("the car engine")) == 1
    threads = [t for t in threading.enumerate() if t.name == "memoryport-query-vectors"]
    assert threads
    index.close()
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive()
