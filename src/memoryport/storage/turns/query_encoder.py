"""Query vectors without running the model on the turn's path: static token vectors,
fitted per scope to the model's own turn vectors.

Embedding a question with all-MiniLM-L6-v2 costs 10-16 ms of this 2-core CPU, nearly all
that the turn index adds to an agent's turn when the model is on. Turns are embedded by
the model in the background (:class:`.vectors.DenseIndex`), so only the query has to be
cheap. This module gives each query a vector in the model's space in ~0.1 ms:

1. **Token table** (built once by ``python -m memoryport.storage.turns.distill``, file
   :data:`TOKENS_FILE` beside the model): every vocabulary token run through the model
   alone (``[CLS] token [SEP]``, mean-pooled, as a sentence is), then centred on the mean of
   the word tokens, unit length, and weighted by ``log(1 + rank)`` (the WordPiece vocabulary
   is in frequency order after its single characters, so rarer words weigh more).
2. **Raw query vector**: the sum of the query's word tokens' rows (punctuation, single
   characters and special tokens only when there is nothing else), unit length.
3. **Fitted map, per scope**: a 384 x 384 matrix ``W`` from the raw vectors of the scope's
   own turns to their model vectors, ridge-regressed towards the identity
   (``W = (X'X + λI)^-1 (X'Y + λI)``, λ = :data:`RIDGE`), so a scope with few turns stays
   near the raw vector and one with many learns how the model reads its words. The query's
   vector is ``normalise(raw @ W)``. No labels, no other user's turns: a scope's map is
   fitted on its own turns only.

The fit uses the first turns of the scope (by id) up to the last *checkpoint* its
vector count has passed (:func:`checkpoint`: 32, then x1.25 each), at most
:data:`FIT_MAX` of them (the latest before the checkpoint), so a store's maps are a
function of its turns, not of when the background writer ran.

Measured on LoCoMo dev (``docs/holographic.md``, "Query vectors without the model"):
categories 1-4 R@5 / R@10 0.728 / 0.812 against 0.743 / 0.812 with the model on the query
and 0.703 / 0.782 without vectors; ``bench_turn.py --compare --user-ms 50`` with the model
on: holographic adds ~2.8 ms instead of ~15 ms.
"""

from __future__ import annotations

import json
import math
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memoryport.storage.turns.word_tokens import WordTokens

__all__ = [
    "CHOICES",
    "CHOICE_ENV",
    "FIT_FIRST",
    "FIT_GROWTH",
    "FIT_MAX",
    "MAPS_KEPT",
    "RIDGE",
    "ROWS_KEPT",
    "TOKENS_FILE",
    "FitSchedule",
    "QueryEncoder",
    "build_tokens",
    "check_choice",
    "checkpoint",
    "describe",
    "fit_window",
    "for_model_dir",
]

CHOICES = ("table", "model")
"""How a search gets its query's vector when the model is installed (the ``holographic``
setting ``query_vectors``): ``table``, the token table fitted to the scope's turns (the
model never runs on the turn's path; LoCoMo dev R@5 / R@10 0.728 / 0.812, multi-hop and
open-domain R@10 0.494 / 0.499), or ``model``, MiniLM on each query (0.743 / 0.812,
0.506 / 0.510, at 10-16 ms a query on a 2-core CPU)."""
CHOICE_ENV = "MEMORYPORT_QUERY_VECTORS"
"""Set to ``model`` to embed queries with the model whatever :data:`CHOICES` the caller
asked for (a process-wide switch, for benchmarks)."""
TOKENS_FILE = "static_tokens.npy"
"""The token table's file in the model directory (float32, one row per vocabulary id)."""
RIDGE = 1.0
"""λ of the fit towards the identity (the cosine of fitted and model query vectors on
LoCoMo dev questions, no labels: 0.3 -> 0.73, 1.0 -> 0.74, 3.0 -> 0.72, 10 -> 0.70)."""
FIT_FIRST = 32
"""A scope's first fit, at this many turns with vectors (fewer: the raw vector)."""
FIT_GROWTH = 1.25
"""Each later fit when the scope's vectors have grown by this factor."""
FIT_MAX = 4096
"""At most this many turns per fit (the latest before the checkpoint)."""
MAPS_KEPT = 64
"""Fitted maps held per process (590 KB each at 384 dimensions); others are refitted."""
ROWS_KEPT = 2048
"""Mapped token rows kept per map (3 MB at 384 dimensions; all dropped when full)."""
_BATCH = 2048


def checkpoint(count: int) -> int:
    """The number of turns a scope with ``count`` turns with vectors is fitted on
    (0: too few); the sequence 32, 40, 50, 63, ... (each ``ceil(x * FIT_GROWTH)``)."""
    point, last = FIT_FIRST, 0
    while point <= count:
        last, point = point, math.ceil(point * FIT_GROWTH)
    return last


def fit_window(point: int) -> tuple[int, int]:
    """``(offset, limit)`` of the scope's turns (by id, those with vectors) a fit at
    checkpoint ``point`` uses."""
    limit = min(point, FIT_MAX)
    return point - limit, limit


def _word_offset(vocab: dict[str, int]) -> int:
    """The first id of a whole-word token of two or more letters (BERT's uncased
    vocabulary: 1996, "the"); ids before it are special tokens and single characters."""
    words = [i for tok, i in vocab.items()
             if len(tok) >= 2 and tok.isalpha() and not tok.startswith("##")]
    return min(words) if words else 0


def build_tokens(model: Any, model_dir: Path) -> Path:
    """Run every vocabulary token of ``model`` (a :class:`.encoder.MiniLM` loaded from
    ``model_dir``) through it alone and write the table to ``model_dir/TOKENS_FILE``
    (~80 s for MiniLM's 30,522 tokens on an idle core here); returns the file."""
    import numpy as np

    vocab = json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]
    size = max(vocab.values()) + 1
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    table = np.zeros((size, model.dim), dtype=np.float32)
    for start in range(0, size, _BATCH):
        ids = [[cls, i, sep] for i in range(start, min(size, start + _BATCH))]
        table[start:start + len(ids)] = model._forward(ids, 3)
    out = model_dir / TOKENS_FILE
    tmp = out.with_suffix(".tmp.npy")
    np.save(tmp, table)
    tmp.replace(out)
    return out


class QueryEncoder:
    """Static query vectors fitted per scope (see the module docstring). Thread-safe."""

    def __init__(self, table: Any, tokenizer: Any, offset: int) -> None:
        import numpy as np

        self.np = np
        self.tokenizer = tokenizer
        self.offset = offset
        size, self.dim = int(table.shape[0]), int(table.shape[1])
        self._mean = np.asarray(table[offset:], dtype=np.float32).mean(axis=0)
        self.table = np.empty((size, self.dim), dtype=np.float32)
        self._unweight = np.empty((size, 1), dtype=np.float32)  # table row -> model row
        for start in range(0, size, _BATCH):  # a block at a time: no whole-table temporaries
            stop = min(size, start + _BATCH)
            rows = np.asarray(table[start:stop], dtype=np.float32) - self._mean
            norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
            rows /= norms
            rank = np.maximum(np.arange(start, stop) - offset + 1, 1)
            weight = np.log1p(rank)[:, None]
            self.table[start:stop] = rows * weight  # float64 products, stored as float32
            self._unweight[start:stop] = norms / weight
        self.words = WordTokens(tokenizer)
        """The query's token ids, word by word from a cache (:mod:`.word_tokens`)."""
        self._maps: OrderedDict[str, tuple[Any, dict[int, Any]]] = OrderedDict()
        self._lock = threading.Lock()
        self.fits = 0
        """How many fits this encoder has made (a kept query vector is stale after one)."""

    def raw(self, texts: Sequence[str]) -> Any:
        """The raw vectors of ``texts`` as a ``(len(texts), dim)`` float32 array (unit
        length; zero for a text with no token)."""
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for n, enc in enumerate(self.tokenizer.encode_batch(list(texts),
                                                            add_special_tokens=False)):
            ids = [i for i in enc.ids if i >= self.offset] or list(enc.ids)
            if ids:
                v = self.table[ids].sum(axis=0)
                out[n] = v / max(float(np.linalg.norm(v)), 1e-9)
        return out

    def word_vector(self, word: str) -> Any:
        """The model's vector of ``word`` alone, as the token table holds it: the sum of
        its tokens' rows (each the model's ``[CLS] token [SEP]`` vector), unit length; a
        float32 array (zero for a word with no token). For a one-token word it is exactly
        what the background writer stores for the word (:mod:`.expand`)."""
        np = self.np
        ids = self.words.ids(word)
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        rows = self.table[ids] * self._unweight[ids] + self._mean
        v = rows.sum(axis=0)
        return (v / max(float(np.linalg.norm(v)), 1e-9)).astype(np.float32)

    def fit(self, scope: str, texts: Sequence[str], vectors: Any) -> None:
        """Fit ``scope``'s map on its turns' ``texts`` and their model ``vectors``
        (``(len(texts), dim)``, in the same order)."""
        np = self.np
        x = self.raw(texts).astype(np.float64)
        y = np.asarray(vectors, dtype=np.float64).reshape(len(texts), self.dim)
        eye = np.eye(self.dim)
        mapping = np.linalg.solve(x.T @ x + RIDGE * eye, x.T @ y + RIDGE * eye)
        with self._lock:
            self._maps[scope] = (mapping.astype(np.float32), {})
            self._maps.move_to_end(scope)
            self.fits += 1
            while len(self._maps) > MAPS_KEPT:
                self._maps.popitem(last=False)

    def has_map(self, scope: str) -> bool:
        """Whether ``scope``'s map is held."""
        with self._lock:
            return scope in self._maps

    def vector(self, text: str, scope: str | None) -> array[float]:
        """The query vector of ``text`` in ``scope`` (its map applied when held).

        With a map the vector is the sum of the query's tokens' mapped rows (``row @ W``,
        each computed once per map and kept, at most :data:`ROWS_KEPT`), unit length: the
        map is linear, so that is ``normalise(raw @ W)`` up to float rounding, without
        reading the whole 384 x 384 map per query (after an agent's idle time between
        turns that read cost ~0.3 ms, as much as the rest of the vector)."""
        np = self.np
        every = self.words.ids(text)
        ids = [i for i in every if i >= self.offset] or every
        if not ids:
            return array("f", bytes(4 * self.dim))
        with self._lock:
            held = self._maps.get(scope) if scope is not None else None
            if held is not None:
                self._maps.move_to_end(scope)  # type: ignore[arg-type]
        if held is None:
            x = self.table[ids].sum(axis=0)
        else:
            mapping, rows = held
            new = [i for i in dict.fromkeys(ids) if i not in rows]
            if new:
                if len(rows) + len(new) > ROWS_KEPT:
                    rows.clear()
                for i, row in zip(new, self.table[new] @ mapping, strict=True):
                    rows[i] = row
            x = np.sum([rows[i] for i in ids], axis=0) if len(ids) > 1 else rows[ids[0]]
        x = x / max(float(np.linalg.norm(x)), 1e-9)
        return array("f", np.asarray(x, dtype=np.float32).tobytes())


def describe(model_dir: Path, choice: str = "table") -> str:
    """How queries get their vectors with the model in ``model_dir`` and the
    ``query_vectors`` setting ``choice`` (for ``memoryport status``)."""
    if os.environ.get(CHOICE_ENV, "").strip().lower() == "model":
        return f"embedded by the model (${CHOICE_ENV}=model)"
    if check_choice(choice) == "model":
        return ("embedded by the model (holographic.query_vectors: model; 10-16 ms a "
                "query)")
    if not (model_dir / TOKENS_FILE).is_file():
        return ("embedded by the model (10-16 ms a query); build the token table with "
                "`python -m memoryport.storage.turns.distill` to keep the model off the "
                "turn's path")
    return "token table fitted to each user's turns (the model is not run on queries)"


class FitSchedule:
    """Which scopes' maps are due (a background writer's bookkeeping; the SQLite and the
    PostgreSQL writers share it). A scope is *wanted* once written or searched in this
    process; it is due when its count of turns with vectors has passed a checkpoint its
    map was not fitted at (or its map was dropped). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectored: dict[str, int] = {}  # scope -> turns with vectors (known so far)
        self._fit_at: dict[str, int] = {}  # scope -> the checkpoint of its map
        self._wanted: set[str] = set()
        self._failed: set[str] = set()  # fits that raised: not retried before a new point

    def want(self, scope: str) -> bool:
        """Mark ``scope`` wanted; True when it was not yet."""
        with self._lock:
            new = scope not in self._wanted
            self._wanted.add(scope)
            return new

    def add(self, scope: str, count: int) -> None:
        """``count`` more turns of ``scope`` have vectors."""
        with self._lock:
            self._vectored[scope] = self._vectored.get(scope, 0) + count

    def counted(self, scope: str, count: int) -> None:
        """``scope`` has ``count`` turns with vectors (a count read from the store)."""
        with self._lock:
            self._vectored[scope] = count

    def known(self, scope: str) -> bool:
        """Whether ``scope``'s count is known (added to or counted)."""
        with self._lock:
            return scope in self._vectored

    def next(self, encoder: QueryEncoder, *, uncounted: bool) -> str | None:
        """The first wanted scope that is due (or, with ``uncounted``, not counted yet:
        its writer counts it first); None when there is none."""
        with self._lock:
            for scope in sorted(self._wanted):
                if scope not in self._vectored:
                    if uncounted:
                        return scope
                    continue
                point = checkpoint(self._vectored[scope])
                if point and (point != self._fit_at.get(scope) or (
                        scope not in self._failed and not encoder.has_map(scope))):
                    return scope
        return None

    def point(self, scope: str) -> int:
        """The checkpoint ``scope``'s count has passed (0: none)."""
        with self._lock:
            return checkpoint(self._vectored.get(scope, 0))

    def fitted(self, scope: str, point: int, *, ok: bool = True) -> None:
        """``scope``'s map was fitted at ``point`` (``ok=False``: the fit raised; it is
        tried again only at the next checkpoint)."""
        with self._lock:
            self._fit_at[scope] = point
            (self._failed.discard if ok else self._failed.add)(scope)


_LOADED: dict[Path, QueryEncoder | None] = {}
_LOAD_LOCK = threading.Lock()


def check_choice(choice: str) -> str:
    """``choice`` when it is one of :data:`CHOICES`; else ``ValueError`` naming them."""
    if choice not in CHOICES:
        raise ValueError(f"query_vectors must be one of {', '.join(CHOICES)}, got {choice!r}")
    return choice


def _model_chosen(choice: str) -> bool:
    """Whether queries are embedded by the model: ``choice`` is ``model`` or
    ``$MEMORYPORT_QUERY_VECTORS`` says ``model``."""
    return choice == "model" or os.environ.get(CHOICE_ENV, "").strip().lower() == "model"


def for_model_dir(model_dir: Path | None, choice: str = "table") -> QueryEncoder | None:
    """The query encoder of the model in ``model_dir`` (loaded once per process), or
    ``None`` when its token table is not built, ``choice`` is ``model`` or
    ``$MEMORYPORT_QUERY_VECTORS`` is ``model`` (queries are then embedded by the model)."""
    if _model_chosen(check_choice(choice)):
        return None
    if model_dir is None or not (model_dir / TOKENS_FILE).is_file():
        return None
    with _LOAD_LOCK:
        if model_dir not in _LOADED:
            import numpy as np
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.no_truncation()
            vocab = json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]
            table = np.load(model_dir / TOKENS_FILE, mmap_mode="r")  # read a block at a time
            _LOADED[model_dir] = QueryEncoder(table, tokenizer, _word_offset(vocab))
        return _LOADED[model_dir]
