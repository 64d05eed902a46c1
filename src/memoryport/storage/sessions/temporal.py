"""Time hints in search queries and the context signals that re-rank the top BM25
candidates (no model, no LLM).

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

**Context** (:func:`context_rerank`, natural-language queries of two or more terms).
Conversations answer across messages ("Did you go?" / "Yes, to Paris last week"), so the
top :data:`CONTEXT_DEPTH` matches are scored on these signals, each divided by its best
value over the candidates (0..1), multiplied by its weight in :data:`WEIGHTS` and summed:

* ``main``: the message's own BM25;
* ``prev`` / ``next``: the BM25 of the message before and after it in its session (0 when
  that one does not match); a neighbour adds to a match's score, it never becomes a hit;
* ``session``: the summed BM25 of the session's messages among the :data:`SESSION_SCAN`
  best matches (what the whole conversation was about);
* ``window`` / ``event`` / ``intent``: the time hints above, as 0/1 signals;
* ``speaker``: 1 when the query names the message's author ("What did Caroline ..."):
  ``metadata["speaker"]``, else ``metadata["name"]``, else its role.

The same signals as the bundled turn index (:mod:`memoryport.storage.turns.rank`). The
weights were fitted on conversations 0-3 of the LoCoMo dev file and checked on 4-6
(``benchmarks/locomo_retrieval.py --backend sessions``; docs/sessions.md).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from memoryport.storage.timeexpr import MONTHS, resolve

__all__ = [
    "CONTEXT_DEPTH",
    "EVENT_BOOST",
    "INTENT_BOOST",
    "REPORT_LAG_DAYS",
    "RERANK_DEPTH",
    "SESSION_SCAN",
    "TIME_ONLY",
    "WEIGHTS",
    "WINDOW_BOOST",
    "ContextRow",
    "ContextWeights",
    "TimeHint",
    "context_rerank",
    "has_temporal_expression",
    "rerank",
    "session_totals",
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
# The same test for ASCII text without the regex (~5x cheaper: the re-ranker asks it of
# every context candidate, the turn index of every turn written). In ASCII, ``\w`` is
# ``[A-Za-z0-9_]``, so ``\b(?:word|year)\b`` matches exactly when a maximal run of word
# characters is one of the words or a year 1900-2099, and ``\d{1,2}[/.]\d{1,2}`` exactly when
# a digit, a slash or dot and a digit are adjacent. One ``bytes.translate`` lower-cases the
# letters and blanks every other non-word byte (the runs are then ``split()``); another
# maps digits to ``0`` and blanks all but ``/`` and ``.``. Other text keeps the regex.
_TEMPORAL_TOKENS = frozenset(
    word.encode("ascii")
    for word in (*_TEMPORAL_WORDS.split("|"), *MONTHS, *map(str, range(1900, 2100)))
)
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")
_TO_TOKENS = bytes(
    c + 32 if 65 <= c <= 90 else c if c in _WORD_BYTES else 32 for c in range(256)
)
_TO_SEPARATORS = bytes(48 if 48 <= c <= 57 else c if c in b"/." else 32 for c in range(256))


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
    if not text.isascii():
        return _TEMPORAL.search(text.lower()) is not None
    raw = text.encode("ascii")
    if not _TEMPORAL_TOKENS.isdisjoint(raw.translate(_TO_TOKENS).split()):
        return True
    digits = raw.translate(_TO_SEPARATORS)
    return b"0/0" in digits or b"0.0" in digits


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


CONTEXT_DEPTH = 100
"""How many best BM25 matches the context signals re-order."""
SESSION_SCAN = 300
"""How many best BM25 matches add up into their sessions' ``session`` signal."""


@dataclass(frozen=True)
class ContextWeights:
    """The weight of each context signal (see the module docstring)."""

    main: float = 1.0
    prev: float = 0.5
    next: float = 0.3
    session: float = 0.2
    window: float = 0.6
    event: float = 0.5
    intent: float = 0.5
    speaker: float = 0.75

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 100:
                raise ValueError(f"weight {f.name} must be a number from 0 to 100, got {value!r}")


WEIGHTS = ContextWeights()
"""The weights of natural-language relevance searches (fitted on LoCoMo dev 0-3)."""
TIME_ONLY = ContextWeights(
    prev=0, next=0, session=0, speaker=0, window=WINDOW_BOOST, event=EVENT_BOOST,
    intent=INTENT_BOOST,
)
"""The weights of other relevance searches with time hints: :func:`rerank`'s boosts."""

ContextRow = tuple[int, str, float, str, "int | None", "int | None", str]
"""A candidate: ``(id, session_id, timestamp, text, previous id, next id, speaker)``."""
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def session_totals(
    best: Sequence[tuple[int, float]], session_of: Mapping[int, str]
) -> dict[str, float]:
    """The summed score of each session's messages among ``best`` (``(id, bm25)``)."""
    out: dict[str, float] = {}
    for message_id, score in best:
        session = session_of.get(message_id)
        if session is not None:
            out[session] = out.get(session, 0.0) + score
    return out


def _signals(
    row: ContextRow,
    named: float,
    scores: Mapping[int, float],
    sessions: Mapping[str, float],
    hint: TimeHint,
    events: Mapping[int, Sequence[tuple[float, float]]],
) -> tuple[float, ...]:
    message_id, session, stamp, text, prev, nxt, _ = row
    in_window = any(lo <= stamp < hi for lo, hi in hint.windows)
    periods = hint.events
    in_event = bool(periods) and any(
        lo < e_hi and e_lo < hi for e_lo, e_hi in events.get(message_id, ()) for lo, hi in periods
    )
    return (
        scores.get(message_id, 0.0),
        0.0 if prev is None else scores.get(prev, 0.0),
        0.0 if nxt is None else scores.get(nxt, 0.0),
        sessions.get(session, 0.0),
        1.0 if in_window else 0.0,
        1.0 if in_event else 0.0,
        1.0 if hint.intent and has_temporal_expression(text) else 0.0,
        named,
    )


def context_rerank(
    rows: Sequence[ContextRow],
    scores: Mapping[int, float],
    hint: TimeHint,
    *,
    query: str,
    sessions: Mapping[str, float] | None = None,
    events: Mapping[int, Sequence[tuple[float, float]]] | None = None,
    weights: ContextWeights = WEIGHTS,
) -> list[tuple[int, float]]:
    """Re-order candidate ``rows`` (in BM25 order) by the weighted context signals.

    ``scores`` maps message ids (candidates and their neighbours) to their BM25;
    ``sessions`` a session id to its :func:`session_totals`; ``events`` a message id to
    its resolved event windows. Returns ``(id, score)`` pairs, best first; ties keep the
    BM25 order.
    """
    words = set(_WORD.findall(query.casefold()))
    named: dict[str, float] = {}
    signals = []
    for row in rows:
        speaker = row[6] if isinstance(row[6], str) else ""
        if speaker not in named:
            own = set(_WORD.findall(speaker.casefold()))
            named[speaker] = float(bool(own) and own <= words)
        signals.append(_signals(row, named[speaker], scores, sessions or {}, hint, events or {}))
    totals = [0.0] * len(rows)
    for f, column in zip(fields(weights), zip(*signals, strict=True), strict=False):
        best, weight = max(column), getattr(weights, f.name)
        if best > 0 and weight:
            totals = [t + weight * v / best for t, v in zip(totals, column, strict=True)]
    order = sorted(range(len(rows)), key=lambda n: (-totals[n], n))
    return [(rows[n][0], round(totals[n], 6)) for n in order]
