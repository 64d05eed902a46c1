"""The ``SessionStore`` interface, the records it returns, and SQL-free helpers.

Every backend (SQLite, PostgreSQL) implements :class:`SessionStore` and returns the frozen
records defined here. Logic that does not need SQL lives here or in
:mod:`memoryport.storage.sessions.query` so that backends share it:

* user scoping (:func:`resolve_user`), source visibility (:func:`visible_sources`);
* input coercion (:func:`coerce_message`) and session-field validation;
* lineage walking over a parent map (:func:`walk_to_root`);
* JSONL export/import line shapes (:func:`export_line`, :func:`parse_export_line`).

Timestamps are Unix seconds (float). Message ids are integers assigned by the store and
increase with insertion order, so "newest" means "highest id" within a store.
"""

from __future__ import annotations

import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import IO, Any, Literal, TypeAlias

from memoryport.errors import StoreError, ToolArgumentError

__all__ = [
    "DEFAULT_HIDDEN_SOURCES",
    "KNOWN_SOURCES",
    "SESSION_UPDATABLE_FIELDS",
    "ImportReport",
    "MatchMode",
    "MessageInput",
    "MessageRecord",
    "MessageWindow",
    "SearchHit",
    "SearchResult",
    "SessionRecord",
    "SessionStore",
    "SessionSummary",
    "SortOrder",
    "clamp",
    "coerce_message",
    "export_line",
    "new_session_id",
    "parse_export_line",
    "resolve_user",
    "shape_window",
    "visible_sources",
    "walk_to_root",
]

SortOrder: TypeAlias = Literal["relevance", "newest", "oldest"]
"""How ``search_messages`` orders hits: BM25 rank, or message time either way."""

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

    ``score`` is larger-is-better within one result (negated BM25 for FTS plans, 0 for
    LIKE); ``snippet`` marks matches with ``>>>``/``<<<``.
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


# ---------------------------------------------------------------------------- helpers


def new_session_id() -> str:
    """Return a fresh, sortable-enough session id (``YYYYmmdd_HHMMSS_<hex8>``)."""
    return time.strftime("%Y%m%d_%H%M%S") + "_" + uuid.uuid4().hex[:8]


def clamp(value: int, low: int, high: int) -> int:
    """Clamp ``value`` into ``[low, high]``."""
    return max(low, min(high, value))


def resolve_user(store_user: str | None, call_user: str | None) -> str | None:
    """Return the user id a call is scoped to.

    A store bound to a user never serves another user: a different per-call user raises
    ``StoreError``. An unbound store uses the per-call user (``None`` means unscoped).
    """
    if store_user and call_user and call_user != store_user:
        raise StoreError(f"this store is bound to user {store_user!r}; refused user {call_user!r}")
    return store_user or call_user or None


def visible_sources(
    sources: Sequence[str] | None, exclude_sources: Sequence[str] | None
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """Resolve source filters to ``(include or None, exclude)``.

    ``exclude_sources=None`` means the default hidden sources, minus any the caller
    explicitly included; pass ``()`` to hide nothing.
    """
    include = tuple(sources) if sources else None
    if exclude_sources is None:
        exclude = tuple(s for s in DEFAULT_HIDDEN_SOURCES if not include or s not in include)
    else:
        exclude = tuple(exclude_sources)
    return include, exclude


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


def flatten_content(content: Any) -> str:
    """Turn message content (str, None, or a list of multimodal parts) into text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                parts.append(str(text) if text is not None else f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)


def check_session_fields(values: Mapping[str, Any]) -> None:
    """Raise ``ToolArgumentError`` for any key ``update_session`` does not accept."""
    unknown = sorted(set(values) - SESSION_UPDATABLE_FIELDS)
    if unknown:
        allowed = ", ".join(sorted(SESSION_UPDATABLE_FIELDS))
        raise ToolArgumentError(f"unknown session field(s) {unknown}; allowed: {allowed}")


def walk_to_root(session_id: str, parents: Mapping[str, str | None]) -> str:
    """Follow ``parents`` (id -> parent id) from ``session_id`` to the lineage root.

    Cycles and missing links stop the walk at the last known id.
    """
    seen = {session_id}
    current = session_id
    while True:
        parent = parents.get(current)
        if not parent or parent in seen:
            return current
        seen.add(parent)
        current = parent


def export_line(session: SessionRecord, message: MessageRecord | None) -> str:
    """One JSONL export line: ``{"session": {...}, "message": {...} | null}``."""
    payload = {"session": session.to_dict(), "message": message.to_dict() if message else None}
    return json.dumps(payload, ensure_ascii=False, sort_keys=True)


def parse_export_line(line: str) -> tuple[SessionRecord, MessageRecord | None]:
    """Parse one export line back into records; raises ``ToolArgumentError`` if malformed."""
    try:
        payload = json.loads(line)
        session = SessionRecord(**payload["session"])
        raw = payload.get("message")
        message = MessageRecord(**raw) if raw else None
    except (ValueError, KeyError, TypeError) as exc:
        raise ToolArgumentError(f"not a memoryport session export line: {exc}") from exc
    return session, message


def shape_window(
    anchor: MessageRecord,
    rows: Iterable[MessageRecord],
    *,
    count_before: int,
    count_after: int,
    window: int,
    bookend: int,
) -> MessageWindow:
    """Build a :class:`MessageWindow` from the rows a backend fetched for one anchor.

    ``rows`` must contain (in any order, duplicates allowed) the ``window`` messages on
    each side of the anchor and the first/last ``bookend`` messages of the session;
    ``count_before``/``count_after`` are the session's message counts on each side.
    """
    unique = {r.id: r for r in rows if r.session_id == anchor.session_id and r.id != anchor.id}
    before = [unique[i] for i in sorted(i for i in unique if i < anchor.id)]
    after = [unique[i] for i in sorted(i for i in unique if i > anchor.id)]
    win_before = before[-window:] if window else []
    win_after = after[:window]
    shown_before = {r.id for r in win_before}
    shown_after = {r.id for r in win_after}
    start = [r for r in before if r.id not in shown_before][:bookend] if bookend else []
    end = [r for r in after if r.id not in shown_after][-bookend:] if bookend else []
    return MessageWindow(
        session_id=anchor.session_id,
        anchor_id=anchor.id,
        messages=[*win_before, anchor, *win_after],
        bookend_start=start,
        bookend_end=end,
        messages_before=max(0, count_before - len(win_before) - len(start)),
        messages_after=max(0, count_after - len(win_after) - len(end)),
    )


# ---------------------------------------------------------------------------- interface


class SessionStore(ABC):
    """Persistent conversation history with full-text search.

    Scoping: ``user_id`` given to the constructor binds the store to one user; per-call
    ``user_id`` arguments narrow an unbound store (see :func:`resolve_user`). Search and
    browse only ever return the scoped user's sessions.

    Errors: every method raises ``StoreError`` (or a subclass: ``SessionNotFound``,
    ``MigrationError``) when the database fails; backend exceptions never escape.
    """

    user_id: str | None = None
    hidden_sources: tuple[str, ...] = DEFAULT_HIDDEN_SOURCES

    # ------------------------------------------------------------------ lifecycle
    @abstractmethod
    def schema_version(self) -> int:
        """Number of migrations applied (equals the number defined when up to date)."""

    @abstractmethod
    def applied_migrations(self) -> list[str]:
        """Names of the applied migrations, in order (``m001_initial``, ...)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ sessions
    @abstractmethod
    def create_session(
        self,
        session_id: str | None = None,
        *,
        source: str = "cli",
        user_id: str | None = None,
        model: str = "",
        title: str = "",
        parent_session_id: str | None = None,
        started_at: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Create a session (id generated when omitted) and return it.

        ``parent_session_id`` must name an existing session (``SessionNotFound``); the
        child inherits the parent's ``user_id`` when none is given.
        """

    @abstractmethod
    def end_session(
        self, session_id: str, *, end_reason: str = "", ended_at: float | None = None
    ) -> SessionRecord:
        """Mark a session ended (``ended_at`` defaults to now) and return it."""

    @abstractmethod
    def update_session(self, session_id: str, **values: Any) -> SessionRecord:
        """Set fields listed in ``SESSION_UPDATABLE_FIELDS``; return the updated session."""

    def set_title(self, session_id: str, title: str) -> SessionRecord:
        """Set a session's title."""
        return self.update_session(session_id, title=title)

    @abstractmethod
    def get_session(self, session_id: str, *, user_id: str | None = None) -> SessionRecord:
        """Return one session; ``SessionNotFound`` if absent or owned by another user."""

    @abstractmethod
    def list_sessions(
        self,
        *,
        user_id: str | None = None,
        sources: Sequence[str] | None = None,
        exclude_sources: Sequence[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        order: Literal["last_active", "started"] = "last_active",
    ) -> list[SessionSummary]:
        """Browse recent sessions, newest first, each with a preview.

        ``exclude_sources=None`` hides ``hidden_sources``.
        """

    # ------------------------------------------------------------------ messages
    @abstractmethod
    def append_messages(
        self, session_id: str, messages: Iterable[MessageInput | Mapping[str, Any]]
    ) -> list[int]:
        """Append messages in one transaction; return their ids in order.

        Updates ``message_count``, ``tool_call_count`` and ``last_active_at``.
        """

    def append_message(self, session_id: str, message: MessageInput | Mapping[str, Any]) -> int:
        """Append one message (one transaction); return its id."""
        return self.append_messages(session_id, [message])[0]

    @abstractmethod
    def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Return a session's messages in id order (``SessionNotFound`` if absent)."""

    @abstractmethod
    def get_message(self, message_id: int) -> MessageRecord:
        """Return one message; ``StoreError`` if it does not exist."""

    # ------------------------------------------------------------------ search
    @abstractmethod
    def search_messages(
        self,
        query: str,
        *,
        user_id: str | None = None,
        sources: Sequence[str] | None = None,
        exclude_sources: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        session_ids: Sequence[str] | None = None,
        sort: SortOrder = "relevance",
        match: MatchMode = "auto",
        limit: int = 20,
        offset: int = 0,
    ) -> SearchResult:
        """Message-level full-text search.

        The query is parsed by :func:`memoryport.storage.sessions.query.parse_query`
        (never raises on odd input). A backend error is re-tried once with the plain
        terms and reported in ``warnings``; if that fails too, ``StoreError`` is raised.
        """

    # ------------------------------------------------------------------ windows
    @abstractmethod
    def windows(
        self, anchors: Sequence[int], *, window: int = 5, bookend: int = 3
    ) -> dict[int, MessageWindow]:
        """Windows around several anchor message ids in a few queries (no N+1).

        ``window`` messages on each side of the anchor within its own session, plus up
        to ``bookend`` first/last messages of the session outside the window. Unknown
        anchors are absent from the result.
        """

    def window(self, around_message_id: int, *, window: int = 5, bookend: int = 0) -> MessageWindow:
        """The window around one message; ``StoreError`` if the message does not exist."""
        found = self.windows([around_message_id], window=window, bookend=bookend)
        if around_message_id not in found:
            raise StoreError(f"no message with id {around_message_id}")
        return found[around_message_id]

    # ------------------------------------------------------------------ lineage
    @abstractmethod
    def lineage_roots(self, session_ids: Iterable[str]) -> dict[str, str]:
        """Map each known session id to the root of its lineage (batched)."""

    def lineage_root(self, session_id: str) -> str:
        """The root of one session's lineage (``SessionNotFound`` if absent)."""
        roots = self.lineage_roots([session_id])
        if session_id not in roots:
            from memoryport.errors import SessionNotFound

            raise SessionNotFound(f"unknown session {session_id!r}")
        return roots[session_id]

    @abstractmethod
    def children(self, session_id: str) -> list[SessionRecord]:
        """Direct children of a session, oldest first."""

    @abstractmethod
    def lineage(self, session_id: str) -> list[str]:
        """Every session id in the lineage tree containing ``session_id``, root first."""

    # ------------------------------------------------------------------ forget
    @abstractmethod
    def forget_message(self, message_id: int) -> int:
        """Delete one message from the table and every index; return 1 or 0."""

    @abstractmethod
    def forget_session(self, session_id: str) -> int:
        """Delete a session and its messages (children are re-parented to its parent).

        Returns the number of messages deleted.
        """

    @abstractmethod
    def forget_user(self, user_id: str) -> int:
        """Delete every session and message of a user; return messages deleted."""

    # ------------------------------------------------------------------ portability
    @abstractmethod
    def export_jsonl(
        self,
        out: IO[str],
        *,
        session_ids: Sequence[str] | None = None,
        user_id: str | None = None,
    ) -> int:
        """Write sessions as JSONL (see :func:`export_line`); return lines written."""

    @abstractmethod
    def import_jsonl(
        self, lines: Iterable[str], *, on_conflict: Literal["skip", "replace", "error"] = "skip"
    ) -> ImportReport:
        """Import an export; ids, timestamps and metadata are kept exactly."""

    # ------------------------------------------------------------------ maintenance
    @abstractmethod
    def rebuild_index(self) -> None:
        """Rebuild the full-text indexes from the messages table."""

    @abstractmethod
    def check_index(self) -> None:
        """Verify the full-text indexes; ``StoreError`` if they are inconsistent."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """Read a key/value metadata entry."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Write a key/value metadata entry."""
