"""Query expansion stays inside the searched user scope.

The vocabulary's word vectors are shared by every scope of a file (a word's vector says
nothing about who wrote it), but a query's expansion terms are chosen only among the words
of its own scope's turns (``turn_word_users``): another user's words can neither crowd the
scope's own words out of the :data:`~memoryport.storage.turns.expand.TERMS` nearest nor
change its ranking in any way. The embedder is a real implementation of the ``Embedder``
protocol (fixed word directions), so no model or download is needed.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from pathlib import Path

from memoryport.storage.turns import TurnIndex, TurnInput, expand

# More instrument names than a query keeps expansion terms, all nearer the question than
# "guitar" (which leans towards the "other" direction).
_ALICE_WORDS = ["violin", "cello", "viola", "oboe", "flute", "bassoon", "trumpet", "tuba",
                "harp", "piano", "organ", "banjo", "mandolin", "ukulele", "sitar", "zither",
                "lute", "bagpipes", "accordion", "harmonica", "xylophone", "marimba",
                "trombone", "clarinet", "saxophone"]
_MUSIC = {"instruments": (1.0, 0.0), "guitar": (1.0, 0.6)} | {w: (1.0, 0.0) for w in _ALICE_WORDS}
QUESTION = "Which instruments are played here?"


class DirectionEmbedder:
    """Unit vectors: music words along one axis (guitar partly off it), every other word a
    little along the second."""

    name = "directions-scope-v1"

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            vec = [0.0, 0.0]
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                music, other = _MUSIC.get(word, (0.0, 0.05))
                vec[0] += music
                vec[1] += other
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


def _alice() -> list[TurnInput]:
    return [TurnInput("a1", "Alice", f"Tonight I tried my {word} again.", 0.0, f"A:{n}", "alice")
            for n, word in enumerate(_ALICE_WORDS)]


def _bob() -> list[TurnInput]:
    return [
        TurnInput("b1", "Bob", "The instruments in that shop were expensive.", 0.0, "B:1", "bob"),
        TurnInput("b1", "Cy", "Shops downtown always are.", 0.0, "B:2", "bob"),
        TurnInput("b2", "Bob", "Weekend plans are still open.", 0.0, "B:3", "bob"),
        TurnInput("b3", "Cy", "Yesterday I restrung my guitar for hours.", 0.0, "B:4", "bob"),
        TurnInput("b3", "Bob", "The weather was lovely.", 0.0, "B:5", "bob"),
    ]


def _bob_view(index: TurnIndex) -> dict[str, float]:
    """Bob's turns with an ``expand`` score for the question, and the score."""
    rows, parts = index.candidates(QUESTION, user_id="bob")
    return {row[6]: part.expand for row, part in zip(rows, parts, strict=True) if part.expand}


def test_another_users_words_do_not_crowd_out_the_scopes_own(tmp_path: Path) -> None:
    """Alice's 25 instrument words are nearer the question than Bob's "guitar": shared,
    they would fill all 20 expansion terms and Bob's guitar turn would not be found."""
    assert len(_ALICE_WORDS) > expand.TERMS
    with TurnIndex(tmp_path / "x.db", embedder=DirectionEmbedder()) as index:
        index.add_turns(_alice() + _bob())
        assert index.flush_vectors(30)
        assert "B:4" in _bob_view(index)
        assert "B:4" in [h.source_id for h in index.search(QUESTION, limit=3, user_id="bob")]


def test_the_scopes_ranking_is_the_same_with_or_without_another_user(tmp_path: Path) -> None:
    """Exact isolation: Bob's expansion candidates and their ``expand`` scores are those of
    a file holding Bob's turns alone, before and after reopening the file, and after
    Alice writes a word only Bob had. (The lexical BM25 of FTS5 counts the whole file:
    not this signal's.)"""
    with TurnIndex(tmp_path / "alone.db", embedder=DirectionEmbedder()) as index:
        index.add_turns(_bob())
        assert index.flush_vectors(30)
        alone = _bob_view(index)
    shared = tmp_path / "shared.db"
    with TurnIndex(shared, embedder=DirectionEmbedder()) as index:
        index.add_turns(_alice())
        index.add_turns(_bob())
        assert index.flush_vectors(30)
        assert _bob_view(index) == alone
    assert set(alone) == {"B:4"}
    with TurnIndex(shared, embedder=DirectionEmbedder()) as index:
        assert index.flush_vectors(30)
        assert _bob_view(index) == alone
        index.add_turns([TurnInput("a2", "Alice", "My new guitar arrived.", 0.0, "A:x", "alice")])
        assert index.flush_vectors(30)
        assert _bob_view(index) == alone
