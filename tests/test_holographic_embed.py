"""The ``embeddings`` extra's MiniLM path on small BERT models the tests build themselves
(real safetensors and tokenizer.json files, the real numpy encoder, real SQLite files):
numerics against transformers' BertModel and an independent float64 reference, dense
candidates through the turn index and the provider, vectors written off the turn's path,
back-fill after a crash or a model change, and the model-missing fallback."""

from __future__ import annotations

import json
import math
import struct
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from memoryport.cli import main
from memoryport.providers.holographic import HolographicProvider
from memoryport.storage.turns import TurnIndex, TurnInput, Weights, distill, vectors
from memoryport.storage.turns.encoder import MiniLM, read_safetensors
from memoryport.storage.turns.rank import DENSE_WEIGHTS

WORDS = ["i", "bought", "a", "car", "automobile", "purchase", "we", "went", "hiking",
         "mountains", "trail", "my", "dog", "puppy", "likes", "the", "park", "work",
         "is", "busy", "lately", "ann", "bob", "what", "did", ".", ",", "?", "!", "##s",
         "##ing", "un", "##known"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
DIM, HEADS, LAYERS, FFN = 16, 2, 2, 32
SENTENCES = ["I bought a car.", "We went hiking in the mountains, unknown trails!",
             "what did ann buy?"]
# transformers 4.x BertModel (+ mean pooling, L2 norm) on the seed-12 model below: the
# first six values of each sentence's vector (computed once with torch, not at test time).
TORCH_REFERENCE = [
    [0.155419, 0.093246, 0.061244, -0.172511, -0.044845, 0.219326],
    [0.146336, 0.113954, 0.349218, -0.247109, -0.006016, 0.037979],
    [0.181768, 0.06099, 0.244922, -0.144289, 0.161794, -0.115585],
]


def _write_safetensors(path: Path, tensors: dict[str, Any]) -> None:
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def _write_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.save(str(path))


def _tensors(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)

    def w(*shape: int, scale: float = 0.3) -> Any:
        return rng.standard_normal(shape) * scale

    t = {"embeddings.word_embeddings.weight": w(len(VOCAB), DIM),
         "embeddings.position_embeddings.weight": w(64, DIM, scale=0.1),
         "embeddings.token_type_embeddings.weight": w(2, DIM, scale=0.1),
         "embeddings.LayerNorm.weight": 1 + w(DIM, scale=0.1),
         "embeddings.LayerNorm.bias": w(DIM, scale=0.1)}
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for k in ("query", "key", "value"):
            t[f"{p}attention.self.{k}.weight"] = w(DIM, DIM)
            t[f"{p}attention.self.{k}.bias"] = w(DIM, scale=0.1)
        t[p + "attention.output.dense.weight"] = w(DIM, DIM)
        t[p + "attention.output.dense.bias"] = w(DIM, scale=0.1)
        t[p + "attention.output.LayerNorm.weight"] = 1 + w(DIM, scale=0.1)
        t[p + "attention.output.LayerNorm.bias"] = w(DIM, scale=0.1)
        t[p + "intermediate.dense.weight"] = w(FFN, DIM)
        t[p + "intermediate.dense.bias"] = w(FFN, scale=0.1)
        t[p + "output.dense.weight"] = w(DIM, FFN)
        t[p + "output.dense.bias"] = w(DIM, scale=0.1)
        t[p + "output.LayerNorm.weight"] = 1 + w(DIM, scale=0.1)
        t[p + "output.LayerNorm.bias"] = w(DIM, scale=0.1)
    return t


def _synonyms(t: dict[str, Any]) -> dict[str, Any]:
    """A model that averages its words' (layer-normed) embeddings: every layer adds zero,
    positions and [CLS]/[SEP] count for nothing, and synonyms share an embedding."""
    out = {k: (np.ones_like(v) if k.endswith("LayerNorm.weight") else np.zeros_like(v))
           for k, v in t.items()}
    word = t["embeddings.word_embeddings.weight"].copy()
    word[[VOCAB.index("[CLS]"), VOCAB.index("[SEP]")]] = 0.0
    for a, b in (("automobile", "car"), ("purchase", "bought")):
        word[VOCAB.index(a)] = word[VOCAB.index(b)]
    out["embeddings.word_embeddings.weight"] = word
    return out


def tiny_model(where: Path, *, synonyms: bool = False) -> Path:
    """Write a 2-layer, 16-dimension BERT (seed 12) in the layout MiniLM ships."""
    tensors = _tensors(12)
    where.mkdir(parents=True, exist_ok=True)
    _write_safetensors(where / "model.safetensors", _synonyms(tensors) if synonyms else tensors)
    _write_tokenizer(where / "tokenizer.json")
    (where / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_act": "gelu", "hidden_size": DIM,
        "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": FFN,
        "max_position_embeddings": 64, "vocab_size": len(VOCAB), "type_vocab_size": 2,
        "layer_norm_eps": 1e-12}))
    return where


def _reference(t: dict[str, Any], ids: list[int]) -> list[float]:
    """BERT + mean pooling in float64, token by token and head by head (math.erf)."""
    def ln(v: Any, name: str) -> Any:
        mean, var = v.mean(), v.var()
        return (v - mean) / math.sqrt(var + 1e-12) * t[name + ".weight"] + t[name + ".bias"]

    e = "embeddings."
    x = [ln(t[e + "word_embeddings.weight"][i] + t[e + "position_embeddings.weight"][p]
            + t[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
         for p, i in enumerate(ids)]
    size = DIM // HEADS
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."

        def lin(v: Any, name: str, pre: str = p) -> Any:
            return t[pre + name + ".weight"] @ v + t[pre + name + ".bias"]

        q = [lin(v, "attention.self.query") for v in x]
        k = [lin(v, "attention.self.key") for v in x]
        val = [lin(v, "attention.self.value") for v in x]
        new = []
        for i in range(len(x)):
            context = np.zeros(DIM)
            for h in range(HEADS):
                s = slice(h * size, (h + 1) * size)
                logits = [float(q[i][s] @ k[j][s]) / math.sqrt(size) for j in range(len(x))]
                top = max(logits)
                weights = [math.exp(a - top) for a in logits]
                total = sum(weights)
                context[s] = sum(w / total * val[j][s] for j, w in enumerate(weights))
            a = ln(x[i] + lin(context, "attention.output.dense"), p + "attention.output.LayerNorm")
            hidden = np.array([0.5 * z * (1 + math.erf(z / math.sqrt(2)))
                               for z in lin(a, "intermediate.dense")])
            new.append(ln(a + lin(hidden, "output.dense"), p + "output.LayerNorm"))
        x = new
    pooled = sum(x) / len(x)
    return list(pooled / np.linalg.norm(pooled))


def test_encoder_matches_transformers_and_a_float64_reference(tmp_path: Path) -> None:
    model = MiniLM(tiny_model(tmp_path / "m"))
    got = model.matrix(SENTENCES)
    assert got.shape == (3, DIM) and got.dtype == np.float32
    assert np.abs(got[:, :6] - np.array(TORCH_REFERENCE)).max() < 1e-5
    tensors = {k: v.astype(np.float64) for k, v in _tensors(12).items()}
    for row, text in zip(got, SENTENCES, strict=True):
        ids = model.tokenizer.encode(text).ids
        assert np.abs(row - np.array(_reference(tensors, ids))).max() < 1e-5
    one_by_one = np.stack([model.matrix([s])[0] for s in SENTENCES])  # no padding at all
    assert np.abs(one_by_one - got).max() < 1e-6
    assert [len(v) for v in model.embed(["", "x" * 500])] == [DIM, DIM]  # empty, truncated
    assert model.matrix([]).shape == (0, DIM)


def test_bad_model_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make embeddings"):
        MiniLM(tmp_path)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(bad)
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.safetensors is not a safetensors file"):
        read_safetensors(empty)


@pytest.fixture
def synonym_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The synonym model installed as the default model (``$MEMORYPORT_EMBEDDINGS_MODEL``)."""
    where = tiny_model(tmp_path / "synonyms", synonyms=True)
    monkeypatch.setenv(vectors.MODEL_ENV, str(where))
    yield where


TURNS = [("Ann", "My dog likes the park."), ("Bob", "I bought a car."),
         ("Ann", "We went hiking in the mountains."), ("Bob", "Work is busy lately.")]


def _turns() -> list[TurnInput]:
    return [TurnInput("s1", who, text, 1.7e9, f"D1:{n}") for n, (who, text) in enumerate(TURNS)]


def test_dense_candidates_find_a_turn_that_shares_no_word(
    tmp_path: Path, synonym_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"automobile purchase" matches no stored word: without vectors nothing is found;
    with dense candidates on (``DENSE_DEPTH``; off by default, as LoCoMo did not gain) the
    car turn is one (nearest by cosine) and ranks first."""
    assert vectors.status() == "ready"
    with TurnIndex(tmp_path / "t.db") as index:
        assert isinstance(index.embedder, MiniLM) and index.weights == DENSE_WEIGHTS
        index.add_turns(_turns())
        assert index.flush_vectors(60)
        assert vectors.DENSE_DEPTH == 0 and index.search("automobile purchase?") == []
        monkeypatch.setattr(vectors, "DENSE_DEPTH", 2)
        hits = index.search("automobile purchase?")
        assert [h.source_id for h in hits][:1] == ["D1:1"] and len(hits) == 2
    with TurnIndex(tmp_path / "t.db", dense=False) as plain:
        assert plain.weights == Weights() and plain.search("automobile purchase?") == []


def test_the_dense_signal_reranks_lexical_candidates(
    tmp_path: Path, synonym_model: Path
) -> None:
    """Two turns match "Bob" alike (same length: equal BM25, the older first); the one
    closest in meaning to the question (cars bought) comes first only with the model."""
    turns = [TurnInput("s1", "Bob", "Bob went hiking.", 1.7e9, "D1:0"),
             TurnInput("s2", "Bob", "Bob bought cars.", 1.7e9, "D2:0")]
    with TurnIndex(tmp_path / "r.db") as index:
        index.add_turns(turns)
        assert index.flush_vectors(60)
        assert [h.source_id for h in index.search("Bob automobile purchase")] == ["D2:0", "D1:0"]
    with TurnIndex(tmp_path / "r.db", dense=False) as plain:
        assert [h.source_id for h in plain.search("Bob automobile purchase")] == ["D1:0", "D2:0"]


class _Gate:
    """An embedder that waits for ``opened`` before it embeds (a slow model)."""

    name = "gate-v1"

    def __init__(self) -> None:
        self.opened = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        assert self.opened.wait(60)
        return [array("f", [1.0, 0.0] if "car" in t else [0.0, 1.0]) for t in texts]


def _vector_count(path: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM turn_vectors").fetchone()[0])
    finally:
        conn.close()


def test_vectors_are_written_off_the_turns_path(tmp_path: Path) -> None:
    """add_turns returns while the model is still busy; the turn is searchable at once and
    its vector follows from the background writer."""
    gate = _Gate()
    path = tmp_path / "gate.db"
    with TurnIndex(path, embedder=gate) as index:
        index.add_turns(_turns())  # would block forever if it embedded on this thread
        with TurnIndex(path, dense=False) as reader:  # committed, searchable at once
            assert reader.search("bought car")[0].source_id == "D1:1"
        assert _vector_count(path) == 0 and not index.flush_vectors(0.05)
        gate.opened.set()
        assert index.flush_vectors(60)
        assert _vector_count(path) == 4


def test_turns_without_vectors_are_filled_in_when_the_index_reopens(tmp_path: Path) -> None:
    """A crash (or no model) between the turn and its vector: the next index with a model
    back-fills every turn; a model change replaces the old model's vectors."""
    path = tmp_path / "fill.db"
    with TurnIndex(path, dense=False) as index:
        index.add_turns(_turns())
    gate = _Gate()
    gate.opened.set()
    with TurnIndex(path, embedder=gate) as index:
        assert index.flush_vectors(60) and _vector_count(path) == 4

    class Other(_Gate):
        name = "gate-v2"

    other = Other()
    other.opened.set()
    with TurnIndex(path, embedder=other) as index:
        assert index.flush_vectors(60)
    import sqlite3

    conn = sqlite3.connect(path)
    models = conn.execute("SELECT DISTINCT model FROM turn_vectors").fetchall()
    conn.close()
    assert models == [("gate-v2",)]


def _provider(home: Path) -> HolographicProvider:
    home.mkdir()
    (home / "config.yaml").write_text("holographic:\n  recall_turns: 10\n")
    made = HolographicProvider()
    made.initialize("s1", home=str(home))
    return made


def test_the_provider_recalls_through_the_installed_model(
    tmp_path: Path, synonym_model: Path
) -> None:
    provider = _provider(tmp_path / "home")
    try:
        for n, text in enumerate(("Bob went hiking.", "Bob bought cars.")):
            provider.sync_turn(text, "", session_id=f"conv{n}", speaker="Bob",
                               timestamp=1.7e9, source_id=f"D{n}:0")
        deadline = time.monotonic() + 60
        found: list[str] = []
        while time.monotonic() < deadline and found[:1] != ["D1:0"]:  # vectors come after
            found = [h.source_id for h in provider.recall_items("Bob automobile purchase")[1]]
            time.sleep(0.05)
        assert found == ["D1:0", "D0:0"]
    finally:
        provider.shutdown()


def test_without_the_model_recall_is_lexical_and_status_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(vectors.MODEL_ENV, str(tmp_path / "no-model"))
    reason = vectors.status()
    assert reason.startswith("off: no MiniLM model at") and "make embeddings" in reason
    assert vectors.load_default() is None
    home = tmp_path / "home"
    provider = _provider(home)
    try:
        assert provider.turns is not None and provider.turns.embedder is None
        provider.sync_turn("I bought a car.", "", session_id="conv", speaker="Bob",
                           timestamp=1.7e9, source_id="D1:1")
        assert [h.source_id for h in provider.recall_items("Bob car")[1]] == ["D1:1"]
        assert provider.recall_items("automobile purchase?")[1] == []
    finally:
        provider.shutdown()
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "holographic"}}))
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--no-probe", "--json"])
    details = json.loads(result.output)["provider"]["details"]
    assert details["embeddings"].startswith("installed; model off: no MiniLM model at")


def test_the_install_step_reports_what_is_missing(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert distill.main(["--out", str(blocker / "model")]) == 2
