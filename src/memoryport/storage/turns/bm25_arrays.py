"""The in-process BM25 top of :meth:`.bm25.Postings.top` computed with numpy: the same
turns, the same scores to the bit and the same order as the plain-Python loop (and so as
FTS5's ``bm25()`` query).

Why: the Python loop updates a dict entry per (turn, query word), and for common words
most stored turns hold them (the 80 best of ~1,000 matching turns: ~170 µs back to back,
~450 µs after an agent's idle time between turns, when its code and data are out of the
caches). Here each term's postings are three flat columns (:class:`Columns`: turn ids,
counts, turn lengths, appended to by the catch-up), and a search is a few array
operations per query word.

Exactness: each posting's term is computed with the same float operations in the same
order as the Python loop (``idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * len / avgdl)))``,
one numpy operation per Python operator, IEEE doubles, nothing fused), the terms are
added per turn in query order starting from 0.0 (``0.0 + x`` is ``x``), the cut keeps
every turn at or above the ``depth``-th best score, and the order is best score first,
ties to the smaller turn id, as the Python loop orders them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from array import array
from typing import Any

__all__ = ["AVAILABLE", "SPAN_PER_POSTING", "Columns", "numpy", "top"]

AVAILABLE = importlib.util.find_spec("numpy") is not None
"""Whether numpy is installed (the ``embeddings`` extra); it is imported at the first
in-process search, never by a one-shot process (:meth:`.bm25.Postings.top`)."""
SPAN_PER_POSTING = 8
"""The scores are summed in an array spanning the turn ids the query's postings hold; when
that span exceeds this many ids per posting (turn ids far apart), the Python loop runs."""


def numpy() -> Any:
    """The numpy module, imported with ``OPENBLAS_NUM_THREADS`` defaulted to
    :data:`.model_files.BLAS_THREADS` as the model's loader imports it (whichever imports
    it first sets OpenBLAS's threads for the process)."""
    if "numpy" not in sys.modules:
        from memoryport.storage.turns.model_files import BLAS_THREADS

        os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)
    return importlib.import_module("numpy")


class Columns:
    """One FTS5 term's postings as columns, in turn-id order: the turns holding it
    (``ids``), how often each holds it (``counts``), that count times ``k1 + 1``
    (``counts_k1``) and ``b`` times the turn's length in tokens (``lengths_b``): the
    parts of each posting's BM25 term that do not change as turns are stored, computed
    with the very operations the score's formula applies to them. Appending keeps the
    order: new turns have larger ids."""

    __slots__ = ("b", "counts", "counts_k1", "ids", "k1_plus", "lengths_b")

    def __init__(self, k1: float, b: float) -> None:
        self.k1_plus, self.b = k1 + 1.0, b
        self.ids = array("q")
        self.counts = array("d")
        self.counts_k1 = array("d")
        self.lengths_b = array("d")

    @classmethod
    def of(cls, k1: float, b: float, postings: list[tuple[int, int]],
           lengths: dict[int, int]) -> Columns:
        """The columns of ``postings`` ``(turn id, count)`` (any order), with each turn's
        length from ``lengths``."""
        column = cls(k1, b)
        ordered = sorted(postings)
        ids = [turn_id for turn_id, _ in ordered]
        counts = [float(count) for _, count in ordered]
        column.ids.extend(ids)
        column.counts.extend(counts)
        column.counts_k1.extend([count * column.k1_plus for count in counts])
        column.lengths_b.extend([b * length for length in map(lengths.__getitem__, ids)])
        return column

    def append(self, turn_id: int, count: int, length: int) -> None:
        """Add a turn that holds the term ``count`` times and is ``length`` tokens long
        (its id larger than every id held)."""
        self.ids.append(turn_id)
        self.counts.append(count)
        self.counts_k1.append(float(count) * self.k1_plus)
        self.lengths_b.append(self.b * length)


def top(np: Any, columns: list[Columns], idfs: list[float], avgdl: float, depth: int,
        k1: float, b: float) -> list[tuple[int, float]] | None:
    """``(turn id, score)`` of the ``depth`` best turns, best first, for the query whose
    words' postings are ``columns`` (in query order) with the phrases' ``idfs``; None when
    the turn ids lie too far apart for one array (:data:`SPAN_PER_POSTING`)."""
    held = [(c, idf) for c, idf in zip(columns, idfs, strict=True) if c.ids]
    if not held:
        return []
    sizes = [len(c.ids) for c, _ in held]
    lo = min(c.ids[0] for c, _ in held)
    span = max(c.ids[-1] for c, _ in held) - lo + 1
    if span > SPAN_PER_POSTING * sum(sizes) + 1024:
        return None
    # Every query word's postings in one row, in query order: one pass of the formula,
    # then each turn's terms summed in that order (bincount adds element by element).
    frombuffer, float64 = np.frombuffer, np.float64
    at = np.concatenate([frombuffer(c.ids, dtype=np.int64) for c, _ in held]) - lo
    freq = np.concatenate([frombuffer(c.counts, dtype=float64) for c, _ in held])
    freq_k1 = np.concatenate([frombuffer(c.counts_k1, dtype=float64) for c, _ in held])
    length_b = np.concatenate([frombuffer(c.lengths_b, dtype=float64) for c, _ in held])
    idf = np.repeat(np.array([idf for _, idf in held]), sizes)
    # idf * ((freq * (k1 + 1)) / (freq + k1 * (1 - b + b * length / avgdl))), as the
    # Python loop and fts5_aux.c compute it (the first and the b * length are kept).
    scores = np.bincount(at, weights=idf * (freq_k1 / (freq + k1 * (1 - b + length_b / avgdl))),
                         minlength=span)
    return _best(np, scores, lo, depth)


def _best(np: Any, scores: Any, lo: int, depth: int) -> list[tuple[int, float]]:
    """``(lo + index, score)`` of the ``depth`` best of the positive ``scores`` (the
    others are held by no posting: every held score is positive, idf >= 1e-6), best
    first, ties to the smaller index, as the Python loops cut and order them."""
    ids = np.flatnonzero(scores)
    found = scores[ids]
    if len(ids) > depth:
        floor = np.partition(found, len(ids) - depth)[len(ids) - depth]
        keep = found >= floor
        ids, found = ids[keep], found[keep]
    order = np.lexsort((ids, -found))[:depth]
    return list(zip((ids[order] + lo).tolist(), found[order].tolist(), strict=True))


def block_top(np: Any, held: list[dict[int, int]], idfs: list[float],
              lengths: dict[int, int], avgdl: float, depth: int, k1: float, b: float
              ) -> list[tuple[int, float]]:
    """``(block id, score)`` of the ``depth`` best session blocks, best first (ties to the
    smaller id), for the query whose words' blocks are ``held`` (block id -> how often
    the block holds the word, in query order) with the phrases' ``idfs``; ``lengths``
    holds each block's length in tokens. The scores of :meth:`.bm25.Postings.blocks`'
    Python loop, to the bit."""
    sizes = [len(h) for h in held]
    total = sum(sizes)
    if not total:
        return []
    float64 = np.float64
    ids = np.fromiter((block for h in held for block in h), dtype=np.int64, count=total)
    freq = np.fromiter((count for h in held for count in h.values()), dtype=float64,
                       count=total)
    length = np.fromiter(map(lengths.__getitem__, ids.tolist()), dtype=float64, count=total)
    idf = np.repeat(np.array(idfs), sizes)
    lo = int(ids.min())
    scores = np.bincount(ids - lo, minlength=int(ids.max()) - lo + 1, weights=idf * (
        (freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * length / avgdl))))
    return _best(np, scores, lo, depth)
