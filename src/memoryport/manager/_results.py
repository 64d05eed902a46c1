"""Provider answers to text hooks (recall, prompt blocks, compression) as ``(label, text)``."""

from __future__ import annotations

import logging
from typing import Any

from memoryport.manager._seed01 import LabelledContext
from memoryport.manager._slot import ProviderSlot
from memoryport.manager._workers import coerce_text
from memoryport.types import ContextPair

__all__ = ["context_pairs"]

log = logging.getLogger("memoryport.manager")


def context_pairs(hook: str, results: list[tuple[ProviderSlot, Any]]) -> list[ContextPair]:
    """``[(provider name, text)]`` of the non-empty answers, in the order given.

    A seed-01 ``enrich_turn`` may answer labelled sections (:class:`LabelledContext`); each
    becomes its own pair, labelled ``"<provider>: <label>"``. An answer of an unusable type
    is counted as an error of ``hook`` and left out.
    """
    pairs: list[ContextPair] = []
    for slot, value in results:
        sections = value.pairs(slot.name) if isinstance(value, LabelledContext) else None
        for label, item in sections or [(slot.name, value)]:
            try:
                text = coerce_text(item, f"{slot.name}.{hook}")
            except TypeError as exc:
                slot.health.error(hook, exc, 0.0)
                log.warning("provider %r: %s", slot.name, exc)
                continue
            if text.strip():
                pairs.append((label, text))
    return pairs
