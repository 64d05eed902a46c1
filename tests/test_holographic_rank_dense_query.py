"""The query text the turn index embeds: without the speakers' names.

Turns are embedded without their speaker, so a speaker's name in the query would only pull
the query's vector towards turns that mention the name and away from the turns about the
topic. The embedders below are real implementations of the ``Embedder`` protocol (topic
buckets), so these tests need neither the ``embeddings`` extra nor its model.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import pgserver
from memoryport.storage.turns import TurnIndex, TurnInput, Weights, vectors

_BUCKETS = {"pets": 0, "puppy": 0, "dog": 0, "car": 1, "engine": 1, "ann": 2}


class BucketEmbedder:
    """Unit vectors over buckets (pets, cars, the word "ann", everything else); keeps
    every text it was asked to embed."""

    name = "buckets-v1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            self.seen.append(text)
            vec = [0.0] * 4
            for word in text.lower().replace(",", " ").replace("?", " ").split():
                vec[_BUCKETS.get(word, 3)] += 1.0 if word in _BUCKETS else 0.1
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


def _turns() -> list[TurnInput]:
    return [
        TurnInput("s1", "Ann", "I adopted a puppy last week", 0.0, "D1:1"),
        TurnInput("s1", "Bob", "Ann, my car engine broke down again", 0.0, "D1:2"),
        TurnInput("s1", "Ann", "Work has been busy lately", 0.0, "D1:3"),
        TurnInput("s1", "Bob", "The weather was nice", 0.0, "D1:4"),
        TurnInput("s1", "Ann", "We watched a movie", 0.0, "D1:5"),
        TurnInput("s1", "Bob", "Dinner was late", 0.0, "D1:6"),
    ]


def test_query_text_drops_speaker_names_only() -> None:
    speakers = ["Melanie", "Caroline"]
    assert vectors.query_text("What activities does Melanie partake in?", speakers) == (
        "What activities does partake in?")
    assert vectors.query_text("What do Melanie's kids like?", speakers) == "What do kids like?"
    assert vectors.query_text("What do Caroline and Melanie both paint?", speakers) == (
        "What do and both paint?")
    # whole words only, case as the name is written; a name alone stays the query
    assert vectors.query_text("Did Melanies or melanie call?", speakers) == (
        "Did Melanies or melanie call?")
    assert vectors.query_text("Melanie?", speakers) == "Melanie?"
    # role speakers are words, not names: "user" stays in "add a user"
    assert vectors.query_text("how do I add a user", ["user", "assistant"]) == (
        "how do I add a user")
    assert vectors.query_text("What did John Smith buy?", ["John Smith"]) == "What did buy?"
    assert vectors.query_text("anything", []) == "anything"


def test_search_embeds_the_query_without_the_named_speaker(tmp_path: Path) -> None:
    """"What pets does Ann have?": Bob's turn that says "Ann" is not about pets; with the
    name embedded its cosine would be the highest after the puppy turn's and take a dense
    signal (the name bucket), without it only the puppy turn has one."""
    embedder = BucketEmbedder()
    with TurnIndex(tmp_path / "q.db", embedder=embedder, weights=Weights(dense=2.0)) as index:
        index.add_turns(_turns())
        assert index.flush_vectors(60)
        rows, parts = index.candidates("What pets does Ann have?")
        assert embedder.seen[-1] == "What pets does have?"
        dense = {r[6]: p.dense for r, p in zip(rows, parts, strict=True)}
        assert dense["D1:1"] > 0
        assert dense["D1:2"] == 0
        assert index.search("What pets does Ann have?")[0].source_id == "D1:1"
    # the same vectors with the name kept in the query: Bob's turn gets a dense signal
    named = BucketEmbedder().embed(["What pets does Ann have?"])[0]
    turn_vecs = BucketEmbedder().embed([t.text for t in _turns()])
    sims = [sum(a * b for a, b in zip(named, v, strict=True)) for v in turn_vecs]
    assert vectors.zscores(sims)[1] > 0


def test_without_a_model_the_query_is_not_embedded(tmp_path: Path) -> None:
    with TurnIndex(tmp_path / "plain.db", dense=False) as plain:
        plain.add_turns(_turns())
        _, parts = plain.candidates("What pets does Ann have?")
        assert parts and all(p.dense == 0 for p in parts)


@pytest.fixture(scope="module")
def plain_server() -> Iterator[pgserver.PgServer]:
    """The distribution's PostgreSQL (no pgvector: float32 bytea vectors)."""
    server = pgserver.start_system_server()
    yield server
    server.stop()


@pytest.mark.postgres
def test_postgres_embeds_the_same_query_text(tmp_path: Path,
                                             plain_server: pgserver.PgServer) -> None:
    from memoryport.storage.turns.postgres import PostgresTurnIndex

    schema = pgserver.fresh_schema("dq")
    try:
        lite_embedder, pg_embedder = BucketEmbedder(), BucketEmbedder()
        with TurnIndex(tmp_path / "v.db", embedder=lite_embedder) as lite, \
                PostgresTurnIndex(plain_server.uri, schema=schema, embedder=pg_embedder) as pg:
            lite.add_turns(_turns())
            pg.add_turns(_turns())
            assert lite.flush_vectors(60)
            assert pg.flush_vectors(60)
            for query in ("What pets does Ann have?", "Did Bob's car break?"):
                rows_l, parts_l = lite.candidates(query)
                rows_p, parts_p = pg.candidates(query)
                assert lite_embedder.seen[-1] == pg_embedder.seen[-1]
                dense_l = {r[6]: p.dense for r, p in zip(rows_l, parts_l, strict=True)}
                dense_p = {r[6]: p.dense for r, p in zip(rows_p, parts_p, strict=True)}
                assert dense_p == pytest.approx(dense_l, rel=1e-5)
            assert lite_embedder.seen[-1] == "Did car break?"
    finally:
        pgserver.drop_schema(plain_server.uri, schema)
