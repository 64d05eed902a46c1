"""The final order of a turn search's candidates (:meth:`.index.TurnIndex.search`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["best"]


def best(scores: list[float], main: Sequence[float], rows: Sequence[Sequence[Any]],
         limit: int) -> list[int]:
    """Indexes of the ``limit`` best candidates, best first: by score, ties by the turn's
    own BM25 (``main``), then the older turn (``rows[i][0]``, its id). Only the candidates
    scoring at least the ``limit``-th best score can be among them, so only those are
    ordered in full (a C sort of the floats finds that score; usually a few of the
    hundreds of candidates)."""
    if len(scores) > limit:
        floor = sorted(scores, reverse=True)[limit - 1]
        pick = [i for i, s in enumerate(scores) if s >= floor]
    else:
        pick = list(range(len(scores)))
    pick.sort(key=lambda i: (-scores[i], -main[i], rows[i][0], i))
    return pick[:limit]
