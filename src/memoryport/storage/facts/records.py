"""Records of the fact store: what goes in (:class:`FactInput`, :class:`Provenance`) and
what comes out (:class:`Fact`, :class:`Revision`, :class:`Contradiction`)."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from memoryport.errors import ToolArgumentError

__all__ = [
    "CATEGORIES",
    "FACT_COLUMNS",
    "Contradiction",
    "Fact",
    "FactEvent",
    "FactInput",
    "Provenance",
    "Revision",
    "as_of_time",
    "fact_from_row",
]

CATEGORIES = ("user_pref", "project", "tool", "general")
"""Fact categories (the reference tool's enum)."""

FACT_COLUMNS = (
    "id, user_id, content, category, tags, subject, relation, qualifier, value, negated, "
    "trust_score, retrieval_count, helpful_count, unhelpful_count, valid_from, valid_to, "
    "recorded_at, updated_at, retired_at, retired_reason, superseded_by, session_id, "
    "message_id, source_kind, actor, speaker, source_text, event_start, event_end, "
    "event_precision, event_words, stated_at"
)
"""The ``facts`` columns every read selects, in :class:`Fact` field order."""


@dataclass(frozen=True)
class Provenance:
    """Where a write came from: the session, the message or tool call, the kind of source
    (``tool``, ``turn``, ``curated_mirror``, ``pre_compress``, ``session_end``, ``cli``,
    ``import``) and who made it (``actor``: ``model``, ``extractor``, ``user``, ...)."""

    session_id: str = ""
    message_id: str = ""
    source_kind: str = ""
    actor: str = ""


@dataclass(frozen=True)
class FactInput:
    """A fact to add. ``valid_from`` is when it became true (default: when recorded);
    ``speaker`` is who said it, whom "I"/"my" in ``content`` refers to; ``source_text``
    the message it was read from (kept for ``why``; at most 1,000 characters)."""

    content: str
    category: str = "general"
    tags: str = ""
    trust: float | None = None
    valid_from: float | None = None
    provenance: Provenance = field(default_factory=Provenance)
    speaker: str = "user"
    source_text: str = ""
    event: FactEvent | None = None
    stated_at: float | None = None  # when it was said (default: valid_from, else now)


@dataclass(frozen=True)
class FactEvent:
    """When the event a fact states happened, resolved at write time from the sentence's
    own words against the message's timestamp ("I moved to Berlin last year"): the window
    ``[start, end)`` in epoch seconds, its precision (``day``/``week``/``month``/``year``)
    and the original words."""

    start: float
    end: float
    precision: str
    words: str


@dataclass(frozen=True)
class Fact:
    """One stored fact (a retired one has ``retired_at`` and maybe ``superseded_by``)."""

    id: int
    user_id: str
    content: str
    category: str
    tags: str
    subject: str
    relation: str
    qualifier: str
    value: str
    negated: bool
    trust_score: float
    retrieval_count: int
    helpful_count: int
    unhelpful_count: int
    valid_from: float | None
    valid_to: float | None
    recorded_at: float
    updated_at: float
    retired_at: float | None
    retired_reason: str
    superseded_by: int | None
    session_id: str
    message_id: str
    source_kind: str
    actor: str
    speaker: str
    source_text: str = ""
    event_start: float | None = None
    event_end: float | None = None
    event_precision: str = ""
    event_words: str = ""
    stated_at: float | None = None
    score: float = 0.0
    entities: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        """True while not retired."""
        return self.retired_at is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``fact_id`` as in the reference tool, plus every column)."""
        data = asdict(self)
        data["fact_id"] = data.pop("id")
        data["entities"] = list(self.entities)
        data["score"] = round(self.score, 4)
        data["trust_score"] = round(self.trust_score, 4)
        return data


def as_of_time(value: Any) -> float:
    """Epoch seconds of an ``as_of`` argument: ``YYYY-MM-DD`` (the end of that day, UTC),
    an ISO date-time (UTC unless it says otherwise) or epoch seconds; anything else
    raises ``ToolArgumentError`` saying what is accepted."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            if len(text) == 10:
                day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
                return day.timestamp() + 86399.999
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    raise ToolArgumentError(
        f"as_of must be a date like 2024-03-01, an ISO date-time like 2024-03-01T12:00:00Z"
        f" or epoch seconds; got {value!r}"
    )


def fact_from_row(row: sqlite3.Row | tuple[Any, ...], *, score: float = 0.0) -> Fact:
    """A :class:`Fact` from a row selected with :data:`FACT_COLUMNS`."""
    values = dict(zip(_ROW_FIELDS, row, strict=False))
    values["negated"] = bool(values["negated"])
    return Fact(**values, score=score)


_ROW_FIELDS = tuple(f.name for f in fields(Fact))[:32]


@dataclass(frozen=True)
class Revision:
    """One entry of a fact's history: ``action`` (``add``, ``update``, ``retire``,
    ``remove``, ``feedback``, ``forget``), who and when, and the fact before and after."""

    id: int
    fact_id: int
    action: str
    actor: str
    at: float
    session_id: str
    tool_call_id: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class Contradiction:
    """A retired fact and the newer one that superseded it (``older`` -> ``newer``)."""

    older: Fact
    newer: Fact

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the shared subject and relation and both values."""
        return {
            "fact_a": self.older.to_dict(),
            "fact_b": self.newer.to_dict(),
            "subject": self.newer.subject,
            "relation": self.newer.relation,
            "qualifier": self.newer.qualifier or self.older.qualifier,
            "old_value": self.older.value,
            "new_value": self.newer.value,
            "retired_at": self.older.retired_at,
        }
