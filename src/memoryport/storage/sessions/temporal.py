"""Time hints in search queries, used to re-rank the top BM25 candidates (no LLM).

Computed from the query text and the store's latest message time, shared by every backend:

* **Named periods.** Dates and relative expressions ("on July 24, 2023", "the week before
  16 Nov 2023", "May 2023", "last Tuesday", "in May", "since March") are resolved by
  :mod:`memoryport.storage.timeexpr` against the store's latest message time (never the
  wall clock). Conversations report events after the fact ("yesterday I went..."), so the
  window on *message time* is widened by one day before and :data:`REPORT_LAG_DAYS` after
  the period; messages inside get :data:`WINDOW_BOOST`. Messages whose own words resolved
  (at write time) to an event window overlapping the period get :data:`EVENT_BOOST`.
* **Temporal intent.** "When did...", "How long...", "What year..." ask for a time, so
  messages that carry a temporal expression ("last week", "yesterday", a date, a
  weekday) get :data:`INTENT_BOOST`.
* **Only time.** A query that is nothing but a period and question filler ("what did we
  talk about last Tuesday?") is flagged ``only_time``: ``session_search`` browses that
  period instead of searching words.

Scores are BM25 normalised to the best candidate (1.0), so the boosts are fractions of
the top score. Only the top :data:`RERANK_DEPTH` candidates are re-ordered; a query
without hints is left in plain BM25 order.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memoryport.storage.timeexpr import MONTHS, resolve

__all__ = [
    "EVENT_BOOST",
    "INTENT_BOOST",
    "REPORT_LAG_DAYS",
    "RERANK_DEPTH",
    "WINDOW_BOOST",
    "TimeHint",
    "has_temporal_expression",
    "rerank",
    "time_hint",
]

RERANK_DEPTH = 100
"""How many BM25 candidates a query with time hints re-ranks."""
WINDOW_BOOST = 0.5
"""Added to the normalised score of a message inside a named-period window."""
EVENT_BOOST = 0.5
"""Added for a message whose resolved event window overlaps the query's period."""
INTENT_BOOST = 0.15
"""Added for a message with a temporal expression when the query asks "when"."""
REPORT_LAG_DAYS = 14
"""Days after a named period that still count (events are reported after the fact)."""

_DAY = 86400.0
_INTENT = re.compile(
    r"\b(when|how long|how many (?:days|weeks|months|years)|what (?:year|month|date|day|time)"
    r"|which (?:year|month|date|day))\b",
    re.I,
)
_TEMPORAL_WORDS = (
    r"yesterday|today|tomorrow|tonight|ago|recently|lately|last|next|earlier|later|since"
    r"|weekend|week|weeks|month|months|year|years|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday"
)
# Matched against lower-cased text: ``re.I`` makes this search ~3.5x slower, and the
# re-ranker runs it over 100 candidates per query.
_TEMPORAL = re.compile(
    rf"\b(?:{_TEMPORAL_WORDS}|{'|'.join(MONTHS)}|(?:19|20)\d\d)\b|\d{{1,2}}[/.]\d{{1,2}}"
)


@dataclass(frozen=True)
class TimeHint:
    """What a query says about time.

    ``windows``: message-time windows (epoch seconds), each named period widened by one
    day before and :data:`REPORT_LAG_DAYS` after; ``events``: the named periods themselves,
    matched against the event windows resolved from stored messages; ``intent``: the
    query asks "when"; ``only_time``: nothing but time words and question filler is left
    once the expressions are taken out ("what did we talk about last Tuesday?").
    """

    windows: tuple[tuple[float, float], ...]
    intent: bool
    events: tuple[tuple[float, float], ...] = ()
    only_time: bool = False

    def __bool__(self) -> bool:
        return bool(self.windows) or self.intent


_FILLER = re.compile(
    r"\b(?:what|which|did|do|does|we|i|you|us|me|my|our|talk|talked|talking|chat|chatted|say"
    r"|said|discuss|discussed|speak|spoke|about|on|in|at|the|a|an|of|during|from|back|were|was"
    r"|is|have|has|had|tell|show|remind|conversation|conversations|session|sessions|happened"
    r"|anything|something|stuff|things?|go|over|went|and|or|that|there|again|please|can"
    r"|could|would)\b|[^\w\s]",
    re.I,
)


def time_hint(query: str, anchor: float | None = None) -> TimeHint:
    """Parse the time expressions and the temporal intent of ``query`` (never raises).

    ``anchor`` is the store's latest message time: relative expressions ("last Tuesday",
    "in May") resolve against it. Without one, only expressions that name their year
    count ("the week before 16 Nov 2023", "May 2023").
    """
    try:
        found = resolve(query, time.time() if anchor is None else anchor)
    except ValueError:
        found = []
    if anchor is None:
        found = [e for e in found if e.absolute]
    events = tuple((e.start, e.end) for e in found)
    windows = tuple((lo - _DAY, hi + REPORT_LAG_DAYS * _DAY) for lo, hi in events)
    rest = query
    for e in reversed(found):
        rest = rest[: e.span[0]] + " " + rest[e.span[1] :]
    only_time = bool(found) and not _FILLER.sub(" ", rest).strip()
    return TimeHint(windows, _INTENT.search(query) is not None, events, only_time)


def has_temporal_expression(text: str) -> bool:
    """True when ``text`` mentions a time ("last week", "yesterday", "May", "2022", ...)."""
    return _TEMPORAL.search(text.lower()) is not None


def rerank(
    candidates: Sequence[tuple[int, float, float, str]],
    hint: TimeHint,
    events: Mapping[int, Sequence[tuple[float, float]]] | None = None,
) -> list[tuple[int, float]]:
    """Re-order ``(id, bm25, timestamp, text)`` candidates (best first) by ``hint``.

    ``events`` maps a message id to the event windows resolved from its words. Returns
    ``(id, score)`` pairs, best first; ties keep the BM25 order.
    """
    if not candidates:
        return []
    best = max(c[1] for c in candidates) or 1.0
    events = events or {}
    scored = []
    for position, (message_id, score, timestamp, text) in enumerate(candidates):
        value = score / best if best > 0 else 0.0
        if any(lo <= timestamp < hi for lo, hi in hint.windows):
            value += WINDOW_BOOST
        if hint.events and any(
            lo < e_hi and e_lo < hi
            for e_lo, e_hi in events.get(message_id, ())
            for lo, hi in hint.events
        ):
            value += EVENT_BOOST
        if hint.intent and has_temporal_expression(text):
            value += INTENT_BOOST
        scored.append((-value, position, message_id))
    scored.sort()
    return [(message_id, -neg) for neg, _, message_id in scored]


EventRow = tuple[int, float, float, str, str]
"""A ``message_events`` row: ``(message_id, start_at, end_at, precision, words)``."""


def event_rows(message_id: int, content: str | None, timestamp: float) -> list[EventRow]:
    """The event windows resolved from a message's words against its own timestamp.

    Never raises: a message whose timestamp cannot anchor a date has no events.
    """
    if not content:
        return []
    try:
        found = resolve(content, timestamp)
    except ValueError:
        return []
    return [(message_id, e.start, e.end, e.precision, e.words) for e in found]
