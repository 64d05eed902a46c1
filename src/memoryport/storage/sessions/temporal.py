"""Time hints in search queries, used to re-rank the top BM25 candidates (no LLM).

Two hints, both computed from the query text alone and shared by every backend:

* **Named dates.** "on July 24, 2023", "24 Jul 2023", "2023-07-24", "in May 2023" become
  a time window. Conversations report events after the fact ("yesterday I went..."), so
  the window is widened by :data:`REPORT_LAG_DAYS` after the named period (and one day
  before). Messages whose ``timestamp`` falls inside get :data:`WINDOW_BOOST`.
* **Temporal intent.** "When did...", "How long...", "What year..." ask for a time, so
  messages that carry a temporal expression ("last week", "yesterday", a date, a
  weekday) get :data:`INTENT_BOOST`.

Scores are BM25 normalised to the best candidate (1.0), so the boosts are fractions of
the top score. Only the top :data:`RERANK_DEPTH` candidates are re-ordered; a query
without hints is left in plain BM25 order.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "INTENT_BOOST",
    "REPORT_LAG_DAYS",
    "RERANK_DEPTH",
    "WINDOW_BOOST",
    "TimeHint",
    "rerank",
    "time_hint",
]

RERANK_DEPTH = 100
"""How many BM25 candidates a query with time hints re-ranks."""
WINDOW_BOOST = 0.5
"""Added to the normalised score of a message inside a named-date window."""
INTENT_BOOST = 0.15
"""Added for a message with a temporal expression when the query asks "when"."""
REPORT_LAG_DAYS = 14
"""Days after a named period that still count (events are reported after the fact)."""

_DAY = 86400.0
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<{g}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_NUM = r"(?P<{g}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{g}>(?:19|20)\d\d)"
_DATE_PATTERNS = [
    re.compile(
        rf"\b{_MONTH.format(g='m')}\s+{_DAY_NUM.format(g='d')},?\s+{_YEAR.format(g='y')}\b", re.I
    ),
    re.compile(
        rf"\b{_DAY_NUM.format(g='d')}\s+(?:of\s+)?{_MONTH.format(g='m')},?\s+{_YEAR.format(g='y')}\b",
        re.I,
    ),
    re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<mn>[01]\d)-(?P<d>[0-3]\d)\b"),
    re.compile(rf"\b{_MONTH.format(g='m')},?\s+(?:of\s+)?{_YEAR.format(g='y')}\b", re.I),
]
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
    rf"\b(?:{_TEMPORAL_WORDS}|{'|'.join(_MONTHS)}|(?:19|20)\d\d)\b|\d{{1,2}}[/.]\d{{1,2}}"
)


@dataclass(frozen=True)
class TimeHint:
    """What a query says about time: boosted ``windows`` (epoch seconds) and ``intent``."""

    windows: tuple[tuple[float, float], ...]
    intent: bool

    def __bool__(self) -> bool:
        return bool(self.windows) or self.intent


def _epoch(year: int, month: int, day: int) -> float | None:
    try:
        return time.mktime((year, month, day, 0, 0, 0, 0, 0, -1))
    except (OverflowError, ValueError):
        return None


def _month_end(year: int, month: int) -> float | None:
    return _epoch(year + month // 12, month % 12 + 1, 1)


def _window(match: re.Match[str]) -> tuple[float, float] | None:
    groups = match.groupdict()
    year = int(groups["y"])
    month = int(groups["mn"]) if groups.get("mn") else _MONTHS[groups["m"].lower()]
    if not 1 <= month <= 12:
        return None
    if groups.get("d"):
        start = _epoch(year, month, int(groups["d"]))
        end = None if start is None else start + _DAY
    else:
        start, end = _epoch(year, month, 1), _month_end(year, month)
    if start is None or end is None or end <= start:
        return None
    return start - _DAY, end + REPORT_LAG_DAYS * _DAY


def time_hint(query: str) -> TimeHint:
    """Parse the named dates and the temporal intent of ``query`` (never raises)."""
    windows: list[tuple[float, float]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(query):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            window = _window(match)
            if window is not None:
                taken.append(match.span())
                windows.append(window)
    return TimeHint(tuple(windows), _INTENT.search(query) is not None)


def has_temporal_expression(text: str) -> bool:
    """True when ``text`` mentions a time ("last week", "yesterday", "May", "2022", ...)."""
    return _TEMPORAL.search(text.lower()) is not None


def rerank(
    candidates: Sequence[tuple[int, float, float, str]], hint: TimeHint
) -> list[tuple[int, float]]:
    """Re-order ``(id, bm25, timestamp, text)`` candidates (best first) by ``hint``.

    Returns ``(id, score)`` pairs, best first; ties keep the BM25 order.
    """
    if not candidates:
        return []
    best = max(c[1] for c in candidates) or 1.0
    scored = []
    for position, (message_id, score, timestamp, text) in enumerate(candidates):
        value = score / best if best > 0 else 0.0
        if any(lo <= timestamp < hi for lo, hi in hint.windows):
            value += WINDOW_BOOST
        if hint.intent and has_temporal_expression(text):
            value += INTENT_BOOST
        scored.append((-value, position, message_id))
    scored.sort()
    return [(message_id, -neg) for neg, _, message_id in scored]
