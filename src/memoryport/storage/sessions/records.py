"""The frozen records every session store returns, the type aliases of its interface,
and the checks its input goes through (:func:`coerce_message`, :func:`valid_values`, ...).

This is the one place to import them from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypeAlias, cast, get_args

from memoryport.errors import ToolArgumentError
from memoryport.types import flatten_content, valid_text

__all__ = [
    "DEFAULT_HIDDEN_SOURCES",
    "KNOWN_SOURCES",
    "SESSION_UPDATABLE_FIELDS",
    "SORT_ORDERS",
    "ImportReport",
    "MatchMode",
    "MessageInput",
    "MessageRecord",
    "MessageWindow",
    "SearchHit",
    "SearchResult",
    "SearchScope",
    "SessionRecord",
    "SessionSummary",
    "SortOrder",
    "SyncReport",
    "check_session_fields",
    "check_sort",
    "coerce_message",
    "coerce_messages",
    "valid_values",
]


def valid_values(values: Iterable[Any]) -> list[Any]:
    """``values`` with every string passed through :func:`memoryport.types.valid_text`
    (row parameters)."""
    return [valid_text(v) if isinstance(v, str) else v for v in values]


SortOrder: TypeAlias = Literal["relevance", "newest", "oldest"]
"""How ``search_messages`` orders hits: BM25 rank, or message time either way."""

SORT_ORDERS: tuple[str, ...] = get_args(SortOrder)
"""The values of :data:`SortOrder`, in that order (for choices and schemas)."""


def check_sort(sort: str) -> SortOrder:
    """``sort`` as a :data:`SortOrder`; ``ToolArgumentError`` naming the choices if not one."""
    if sort not in SORT_ORDERS:
        raise ToolArgumentError(f"sort must be relevance, newest or oldest, not {sort!r}")
    return cast(SortOrder, sort)


MatchMode: TypeAlias = Literal["auto", "all", "any"]
"""How plain terms combine: ``all`` (AND), ``any`` (OR, ranked by BM25), or ``auto``.

``auto``: explicit syntax (quotes, AND/OR/NOT, ``foo*``) is honoured as written; plain
natural-language terms are ORed (stopwords dropped) for ``sort="relevance"`` and ANDed
for chronological sorts, falling back to OR when AND finds nothing.
"""

KNOWN_SOURCES: tuple[str, ...] = (
    "cli",
    "api",
    "mcp",
    "telegram",
    "discord",
    "slack",
    "web",
    "tool",
    "cron",
    "subagent",
    "import",
)
"""Source tags memoryport knows about. Other strings are accepted as-is."""

DEFAULT_HIDDEN_SOURCES: tuple[str, ...] = ("tool", "subagent")
"""Sources hidden from search and browse unless a caller asks for them explicitly."""

SESSION_UPDATABLE_FIELDS: frozenset[str] = frozenset(
    {
        "title",
        "model",
        "ended_at",
        "end_reason",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "tool_call_count",
        "estimated_cost_usd",
        "actual_cost_usd",
        "metadata",
    }
)
"""Fields ``SessionStore.update_session`` accepts."""


@dataclass(frozen=True)
class SessionRecord:
    """One conversation session as stored.

    ``parent_session_id`` links compression continuations, branches and resumes into a
    lineage tree; ``last_active_at`` is the timestamp of the newest message (or the start).
    """

    id: str
    source: str
    user_id: str | None = None
    model: str = ""
    title: str = ""
    parent_session_id: str | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    end_reason: str = ""
    last_active_at: float = 0.0
    message_count: int = 0
    tool_call_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated_cost_usd: float | None = None
    actual_cost_usd: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of every field."""
        return asdict(self)


@dataclass(frozen=True)
class MessageRecord:
    """One stored message: a real transcript line, never a summary."""

    id: int
    session_id: str
    role: str
    content: str
    timestamp: float
    tool_name: str | None = None
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, compact: bool = False) -> dict[str, Any]:
        """Return a JSON-ready dict; ``compact`` drops empty optional fields."""
        data = asdict(self)
        if compact:
            data = {k: v for k, v in data.items() if v not in (None, {}, [])}
        return data


@dataclass(frozen=True)
class MessageInput:
    """A message to append. ``timestamp`` defaults to now; ``tool_calls`` is any JSON list."""

    role: str
    content: str = ""
    tool_name: str | None = None
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    timestamp: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionSummary:
    """A browse row: the session plus a short preview of its first user message."""

    session: SessionRecord
    preview: str = ""


@dataclass(frozen=True)
class SearchHit:
    """One ranked message from ``search_messages``.

    ``score`` is larger-is-better within one result: the context re-rank's total (its
    signals, each scaled to the query's best) for the hits it ordered, negated BM25 for
    other FTS hits, 0 for LIKE; compare scores within one result only. ``snippet`` marks
    matches with ``>>>``/``<<<``.
    """

    message: MessageRecord
    snippet: str
    score: float
    source: str
    model: str
    session_started: float
    session_title: str = ""
    parent_session_id: str | None = None


@dataclass(frozen=True)
class SearchResult:
    """Hits plus how they were found.

    ``plan`` is one of ``fts`` (word index), ``trigram`` (substring/CJK index), ``like``
    (short CJK scan), ``empty`` (the query had no searchable terms). ``warnings`` says
    when the query was rewritten or fell back, so nothing degrades silently.
    """

    hits: list[SearchHit]
    plan: str
    query: str
    compiled: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MessageWindow:
    """Messages around an anchor plus the session's first and last messages.

    ``messages`` is in id order and contains the anchor; ``bookend_start``/``bookend_end``
    never overlap ``messages``; ``messages_before``/``messages_after`` count the messages
    of the session not shown on each side of the window.
    """

    session_id: str
    anchor_id: int
    messages: list[MessageRecord]
    bookend_start: list[MessageRecord] = field(default_factory=list)
    bookend_end: list[MessageRecord] = field(default_factory=list)
    messages_before: int = 0
    messages_after: int = 0


@dataclass(frozen=True)
class ImportReport:
    """What ``import_jsonl`` did: counts of sessions and messages written or skipped."""

    sessions_imported: int = 0
    sessions_skipped: int = 0
    messages_imported: int = 0


@dataclass(frozen=True)
class SyncReport:
    """What ``sync_sessions`` did: sessions created (with their messages), sessions that
    grew (their new messages appended), sessions left alone, and messages written."""

    sessions_created: int = 0
    sessions_grown: int = 0
    sessions_unchanged: int = 0
    messages_created: int = 0
    messages_appended: int = 0


@dataclass(frozen=True)
class SearchScope:
    """Who and what a search may see, resolved by the store before it runs any SQL.

    ``include`` is ``None`` for every source; ``exclude`` lists hidden sources.
    """

    user_id: str | None = None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    roles: tuple[str, ...] | None = None
    session_ids: tuple[str, ...] | None = None


_MESSAGE_KWARGS = frozenset(f.name for f in fields(MessageInput)) - {"role", "metadata"}


def coerce_message(message: MessageInput | Mapping[str, Any]) -> MessageInput:
    """Accept a ``MessageInput`` or an OpenAI-style dict and return a ``MessageInput``.

    Multimodal content (a list of parts) is flattened to its text parts. Unknown dict keys
    go to ``metadata``. Raises ``ToolArgumentError`` when ``role`` is missing.
    """
    if isinstance(message, MessageInput):
        return message
    data = dict(message)
    role = data.pop("role", None)
    if not isinstance(role, str) or not role:
        raise ToolArgumentError("a message needs a non-empty 'role'")
    kwargs: dict[str, Any] = {k: data.pop(k) for k in list(data) if k in _MESSAGE_KWARGS}
    kwargs["content"] = flatten_content(kwargs.get("content"))
    metadata = dict(data.pop("metadata", None) or {})
    metadata.update(data)
    return MessageInput(role=role, metadata=metadata, **kwargs)


_PLAIN_KEYS = _MESSAGE_KWARGS | {"role"}
_DEFAULTS = {f.name: f.default for f in fields(MessageInput) if f.name != "metadata"}
"""Every field but ``metadata`` with its default, in field order (``role`` is always set)."""


def coerce_messages(
    messages: Iterable[MessageInput | Mapping[str, Any]],
) -> list[MessageInput]:
    """:func:`coerce_message` of each message, in order.

    A plain dict of message fields only, with a text ``content`` and a valid ``role``
    (what a chat loop or an importer passes), is built without ``MessageInput``'s
    ``__init__``, which sets each field through ``object.__setattr__`` (frozen): its
    ``__dict__`` is filled in one update, the same fields and values, ~1.5 us less a
    message. Anything else goes through :func:`coerce_message`.
    """
    out: list[MessageInput] = []
    for message in messages:
        if (
            type(message) is dict
            and message.keys() <= _PLAIN_KEYS
            and isinstance(message.get("role"), str)
            and message["role"]
            and isinstance(message.get("content", ""), str)
        ):
            made = object.__new__(MessageInput)
            made.__dict__.update(_DEFAULTS, **message, metadata={})
            out.append(made)
        else:
            out.append(coerce_message(message))
    return out


def check_session_fields(values: Mapping[str, Any]) -> None:
    """Raise ``ToolArgumentError`` for any key ``update_session`` does not accept."""
    unknown = sorted(set(values) - SESSION_UPDATABLE_FIELDS)
    if unknown:
        allowed = ", ".join(sorted(SESSION_UPDATABLE_FIELDS))
        raise ToolArgumentError(f"unknown session field(s) {unknown}; allowed: {allowed}")
