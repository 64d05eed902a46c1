"""Stored turn vectors kept in memory once read, and cosines over their blobs (shared by
the SQLite and PostgreSQL turn indexes)."""

from __future__ import annotations

import threading
from array import array
from collections.abc import Sequence
from typing import Any

__all__ = ["VECTOR_CACHE", "VectorCache", "blob_cosines"]

VECTOR_CACHE = 100_000
"""How many turn vectors an index keeps in memory (about 150 MB at MiniLM's 384
dimensions; the older half is dropped when full)."""


class VectorCache:
    """Turn vectors (float32 bytes) by turn id, at most :data:`VECTOR_CACHE` of them. A
    turn's vector of a model never changes (turns are never rewritten), so a kept one
    stays right."""

    def __init__(self, size: int = VECTOR_CACHE) -> None:
        self.size = size
        self._held: dict[int, bytes] = {}
        self._lock = threading.Lock()

    def put(self, found: dict[int, bytes]) -> None:
        """Keep ``found`` (dropping the older half when full)."""
        with self._lock:
            if len(self._held) + len(found) > self.size:
                keep = list(self._held.items())[len(self._held) // 2:]
                self._held = dict(keep)
            self._held.update(found)

    def get(self, turn_ids: Sequence[int]) -> dict[int, bytes]:
        """The held vectors of ``turn_ids``."""
        with self._lock:
            held = self._held
            return {i: held[i] for i in turn_ids if i in held}


def blob_cosines(np: Any, query: array[float], blobs: Sequence[bytes | None]
                 ) -> list[float | None]:
    """The dot product of ``query`` and each float32 blob (unit vectors: the cosine), in
    one numpy matrix product; None for a missing blob or one of another length."""
    size = 4 * len(query)
    rows = [n for n, b in enumerate(blobs) if b is not None and len(b) == size]
    out: list[float | None] = [None] * len(blobs)
    if rows:
        joined = b"".join(blob for n in rows if (blob := blobs[n]) is not None)
        matrix = np.frombuffer(joined, dtype=np.float32).reshape(len(rows), len(query))
        q = np.frombuffer(query.tobytes(), dtype=np.float32)
        for n, value in zip(rows, (matrix @ q).tolist(), strict=True):
            out[n] = float(value)
    return out
