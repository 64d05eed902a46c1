"""The recall text ``prefetch`` returns: compact lines, each with its date and source,
cut to the character budget (whole lines only; the best first)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from memoryport.storage.facts.records import Fact
from memoryport.storage.turns import TurnHit

__all__ = [
    "HEADER", "TURNS_HEADER", "citation", "event_date", "fact_line", "fit", "render",
    "turn_line", "when",
]

HEADER = "Remembered facts (date; source):"
"""The first line of the fact block."""

TURNS_HEADER = "Earlier turns (date; speaker; session):"
"""The first line of the turn block."""

_MAX_LINE = 320


def when(epoch: float | None) -> str:
    """``YYYY-MM-DD`` (UTC) of an epoch time, ``?`` when unknown."""
    if epoch is None:
        return "?"
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def event_date(fact: Fact) -> str:
    """The fact's event window at its precision (``2022``, ``2023-04``, ``week of
    2023-05-01``, ``2023-05-05``); "" when its words named no time."""
    if fact.event_start is None:
        return ""
    day = when(fact.event_start + 43200)  # noon: local midnight may be the UTC eve
    return {"year": day[:4], "month": day[:7], "week": f"week of {day}"}.get(
        fact.event_precision, day)


def citation(fact: Fact) -> str:
    """The short citation of a recalled fact: ``date; [event <date>;] fact #id, <source
    kind>`` plus ``session <first 12 characters of its id>`` when it has one. The date is
    when it was said; the event date is what its time words ("last year") resolved to."""
    source = fact.source_kind or "fact"
    if fact.session_id:
        prefix = fact.session_id[:12] + ("…" if len(fact.session_id) > 12 else "")
        source += f", session {prefix}"
    event = event_date(fact)
    said = when(fact.stated_at or fact.valid_from or fact.recorded_at)
    return f"{said}; {'event ' + event + '; ' if event else ''}fact #{fact.id}, {source}"


def fact_line(fact: Fact) -> str:
    """``- <speaker: >content (citation)`` (see :func:`citation`)."""
    text = " ".join(fact.content.split())
    if fact.speaker and fact.speaker != "user" and not text.startswith(fact.speaker):
        text = f"{fact.speaker}: {text}"
    line = f"- {text} ({citation(fact)})"
    if len(line) > _MAX_LINE:
        line = line[: _MAX_LINE - 1] + "…"
    return line


def fit(header: str, lines: Sequence[str], budget: int) -> str:
    """``header`` and as many whole ``lines`` as fit in ``budget`` characters ("" when
    none fits)."""
    out: list[str] = []
    used = len(header) + 1
    for line in lines:
        if used + len(line) + 1 > budget:
            continue
        out.append(line)
        used += len(line) + 1
    return "\n".join([header, *out]) if out else ""


def turn_line(hit: TurnHit) -> str:
    """``- [date] speaker: text (session)``, the text cut to one compact line."""
    text = " ".join(hit.text.split())
    line = f"- [{when(hit.timestamp)}] {hit.speaker}: {text} (session {hit.session_id[:24]})"
    if len(line) > _MAX_LINE:
        line = line[: _MAX_LINE - 1] + "…"
    return line


def render(facts: Sequence[Fact], turns: Sequence[TurnHit], budget: int) -> str:
    """The fact block, then the turn block in what is left of ``budget``."""
    first = fit(HEADER, [fact_line(f) for f in facts], budget)
    left = budget - len(first) - (1 if first else 0)
    second = fit(TURNS_HEADER, [turn_line(t) for t in turns], left)
    return "\n".join(part for part in (first, second) if part)
