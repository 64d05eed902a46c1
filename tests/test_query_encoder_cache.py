"""The query encoder's caches: token ids word by word (``word_tokens``) and the mapped
token rows of a scope's map (``QueryEncoder.vector``). Both must give what the uncached
computation gives: the same ids, and ``normalise(raw @ W)`` up to float rounding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from memoryport.storage.turns import query_encoder, word_tokens
from test_holographic_query_encoder import model_dir  # noqa: F401 (fixture)

TEXTS = [
    "What did Melanie paint last Tuesday?",
    "I bought a car. Did Bob buy a car too?",
    "park,hiking;car--car!!  (12) 3.5km e-mail a_b",
    "tabs\tand\nnew\r\nlines",
    "",
    "   ",
    "café naïve 東京 car",  # not ASCII: the tokenizer whole
    "car\x01park",  # a control character (BERT drops it): the tokenizer whole
    "x" * 150,  # longer than WordPiece's longest word
]


class Counting:
    """A tokenizer that counts its ``encode`` calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def encode(self, text: str, add_special_tokens: bool = True) -> Any:
        self.calls += 1
        return self.inner.encode(text, add_special_tokens=add_special_tokens)


def _tokenizer(where: Path) -> Any:
    return Tokenizer.from_file(str(where / "tokenizer.json"))


def test_word_by_word_ids_are_the_tokenizers(model_dir: Path) -> None:  # noqa: F811
    tokenizer = _tokenizer(model_dir)
    words = word_tokens.WordTokens(tokenizer)
    assert words.by_word
    for text in TEXTS:
        assert words.ids(text) == tokenizer.encode(text, add_special_tokens=False).ids, text


def test_a_seen_word_is_not_tokenized_again(model_dir: Path) -> None:  # noqa: F811
    counting = Counting(_tokenizer(model_dir))
    words = word_tokens.WordTokens(counting)
    counting.calls = 0
    first = words.ids("did bob buy a car")
    assert counting.calls == 5
    assert words.ids("a car did bob buy") == [first[n] for n in (3, 4, 0, 1, 2)]
    assert counting.calls == 5
    words.ids("car\x01park")  # not plain: whole, not cached
    words.ids("car\x01park")
    assert counting.calls == 7


def test_the_cache_is_bounded(model_dir: Path,  # noqa: F811
                              monkeypatch: pytest.MonkeyPatch) -> None:
    tokenizer = _tokenizer(model_dir)
    words = word_tokens.WordTokens(tokenizer)
    monkeypatch.setattr(word_tokens, "WORDS_KEPT", 3)
    for text in TEXTS[:4]:
        assert words.ids(text) == tokenizer.encode(text, add_special_tokens=False).ids
        assert len(words._ids) <= 3


def test_a_tokenizer_it_does_not_hold_for_is_asked_whole() -> None:
    """A cased word-level tokenizer that keeps runs of punctuation together: the probes
    disagree, so every text goes to it whole (same ids as asking it)."""
    vocab = {"[UNK]": 0, "What": 1, "what": 2, "did": 3, "--": 4, "-": 5, "?": 6}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    words = word_tokens.WordTokens(tokenizer)
    assert not words.by_word
    for text in ("What did -- what?", "what did - What"):
        assert words.ids(text) == tokenizer.encode(text, add_special_tokens=False).ids


def _expected(encoder: query_encoder.QueryEncoder, text: str, mapping: Any) -> Any:
    raw = encoder.raw([text])[0].astype(np.float64) @ mapping.astype(np.float64)
    return raw / max(np.linalg.norm(raw), 1e-12)


def test_mapped_rows_give_the_mapped_raw_vector(model_dir: Path,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = query_encoder.for_model_dir(model_dir)
    assert encoder is not None
    rng = np.random.default_rng(3)
    texts = ["did bob buy a car", "hiking in the park", "a car a car a car", "car"]
    encoder.fit("s", texts * 4, rng.standard_normal((16, encoder.dim)).astype(np.float32))
    first = encoder._maps["s"][0]
    for text in [*texts, "park car hiking", ""]:
        got = np.frombuffer(encoder.vector(text, "s").tobytes(), dtype=np.float32)
        if not text:
            assert not got.any()
            continue
        assert got == pytest.approx(_expected(encoder, text, first), abs=1e-5)
    assert encoder._maps["s"][1]  # rows kept
    # A new fit replaces the map and its kept rows.
    encoder.fit("s", texts * 4, rng.standard_normal((16, encoder.dim)).astype(np.float32))
    second = encoder._maps["s"][0]
    assert not np.allclose(first, second)
    got = np.frombuffer(encoder.vector("did bob buy a car", "s").tobytes(), dtype=np.float32)
    assert got == pytest.approx(_expected(encoder, "did bob buy a car", second), abs=1e-5)
    # Bounded: past ROWS_KEPT the rows are dropped and computed again.
    monkeypatch.setattr(query_encoder, "ROWS_KEPT", 2)
    for text in texts:
        got = np.frombuffer(encoder.vector(text, "s").tobytes(), dtype=np.float32)
        assert got == pytest.approx(_expected(encoder, text, second), abs=1e-5)
        assert len(encoder._maps["s"][1]) <= max(2, len(set(encoder.words.ids(text))))
    # Without a map: the raw vector itself.
    got = np.frombuffer(encoder.vector("hiking in the park", "other").tobytes(),
                        dtype=np.float32)
    assert got.tolist() == encoder.raw(["hiking in the park"])[0].tolist()
