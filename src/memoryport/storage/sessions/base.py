"""The ``SessionStore`` interface and the logic every backend shares.

Every backend (SQLite in :mod:`.sqlite`, PostgreSQL in :mod:`.postgres`) implements
:class:`SessionStore` and returns the frozen records of :mod:`.records`. Logic that needs
no SQL lives here as concrete methods of the interface (query parsing and the search
fallback, user scoping, lineage walking) or in :mod:`.rows`, :mod:`.query`,
:mod:`.temporal` and :mod:`.portable`, so that a backend keeps only its SQL.

Timestamps are Unix seconds (float). Message ids are integers assigned by the store and
increase with insertion order, so "newest" means "highest id" within a store.
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import IO, Any, Literal

from memoryport.errors import SessionNotFound, StoreError, ToolArgumentError
from memoryport.storage.sessions.portable import Progress, read_export
from memoryport.storage.sessions.query import ParsedQuery, parse_query
from memoryport.storage.sessions.records import (
    DEFAULT_HIDDEN_SOURCES,
    SESSION_UPDATABLE_FIELDS,
    ImportReport,
    MatchMode,
    MessageInput,
    MessageRecord,
    MessageWindow,
    SearchHit,
    SearchResult,
    SearchScope,
    SessionRecord,
    SessionSummary,
    SortOrder,
    SyncReport,
    check_session_fields,
    check_sort,
    coerce_messages,
)
from memoryport.types import valid_text

__all__ = ["SessionStore", "clamp", "new_session_id", "resolve_user", "walk_to_root"]


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
    def schema_version(self) -> int:
        """Number of migrations applied (equals the number defined when up to date)."""
        return len(self.applied_migrations())

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

    # ------------------------------------------------------------------ scoping
    def _user(self, user_id: str | None) -> str | None:
        """The user a call is scoped to (see :func:`resolve_user`)."""
        return resolve_user(self.user_id, user_id)

    def _visible(
        self, sources: Sequence[str] | None, exclude: Sequence[str] | None
    ) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
        """``(include, exclude)`` sources; ``exclude=None`` means this store's hidden ones,
        minus any the caller explicitly included (pass ``()`` to hide nothing)."""
        include = tuple(sources) if sources else None
        if exclude is None:
            exclude = tuple(s for s in self.hidden_sources if not include or s not in include)
        return include, tuple(exclude)

    def _scope(
        self,
        user_id: str | None,
        sources: Sequence[str] | None = None,
        exclude_sources: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        session_ids: Sequence[str] | None = None,
    ) -> SearchScope:
        """Resolve a call's filters into a :class:`SearchScope`."""
        include, exclude = self._visible(sources, exclude_sources)
        return SearchScope(
            user_id=self._user(user_id),
            include=include,
            exclude=exclude,
            roles=tuple(roles) if roles else None,
            session_ids=tuple(session_ids) if session_ids else None,
        )

    # ------------------------------------------------------------------ sessions
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
        started = time.time() if started_at is None else started_at
        draft = SessionRecord(
            id=session_id or new_session_id(),
            source=source,
            user_id=self._user(user_id),
            model=model,
            title=title,
            parent_session_id=parent_session_id or None,
            started_at=started,
            last_active_at=started,
            metadata=dict(metadata or {}),
        )
        return self._insert_session(draft)

    @abstractmethod
    def _insert_session(self, draft: SessionRecord) -> SessionRecord:
        """Insert ``draft`` (its ``user_id`` falls back to the parent's); return it as stored.

        ``SessionNotFound`` for an unknown parent, ``StoreError`` if the id is taken.
        """

    def end_session(
        self, session_id: str, *, end_reason: str = "", ended_at: float | None = None
    ) -> SessionRecord:
        """Mark a session ended (``ended_at`` defaults to now) and return it."""
        when = time.time() if ended_at is None else ended_at
        return self.update_session(session_id, ended_at=when, end_reason=end_reason)

    def update_session(self, session_id: str, **values: Any) -> SessionRecord:
        """Set fields listed in ``SESSION_UPDATABLE_FIELDS``; return the updated session."""
        check_session_fields(values)
        if not values:
            return self.get_session(session_id)
        return self._update_session(valid_text(session_id), values)

    @abstractmethod
    def _update_session(self, session_id: str, values: Mapping[str, Any]) -> SessionRecord:
        """Set checked ``values`` on a session (``SessionNotFound`` if absent); return it."""

    def set_title(self, session_id: str, title: str) -> SessionRecord:
        """Set a session's title."""
        return self.update_session(session_id, title=title)

    def get_session(self, session_id: str, *, user_id: str | None = None) -> SessionRecord:
        """Return one session; ``SessionNotFound`` if absent or owned by another user."""
        user = self._user(user_id)
        session_id = valid_text(session_id)
        found = self._session(session_id)
        if found is None or (user is not None and found.user_id != user):
            raise SessionNotFound(f"unknown session {session_id!r}")
        return found

    @abstractmethod
    def _session(self, session_id: str) -> SessionRecord | None:
        """One session by id, whoever owns it (``None`` if absent)."""

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
        scope = self._scope(user_id, sources, exclude_sources)
        column = "last_active_at" if order == "last_active" else "started_at"
        return self._list_sessions(scope, column, limit=limit, offset=offset)

    @abstractmethod
    def _list_sessions(
        self, scope: SearchScope, column: str, *, limit: int, offset: int
    ) -> list[SessionSummary]:
        """Sessions in ``scope`` by ``column`` (a ``sessions`` column), newest first."""

    def sessions_titled(
        self,
        title: str,
        *,
        user_id: str | None = None,
        sources: Sequence[str] | None = None,
        exclude_sources: Sequence[str] | None = None,
        limit: int = 5,
    ) -> list[SessionRecord]:
        """Sessions whose title equals ``title`` (case-insensitive for ASCII letters,
        surrounding whitespace ignored), most recently active first.

        Served by an index, never a scan; scoping and ``exclude_sources`` work as in
        :meth:`list_sessions`. A blank ``title`` matches nothing.
        """
        wanted = title.strip()
        if not wanted:
            return []
        return self._sessions_titled(wanted, self._scope(user_id, sources, exclude_sources), limit)

    @abstractmethod
    def _sessions_titled(self, title: str, scope: SearchScope, limit: int) -> list[SessionRecord]:
        """Sessions in ``scope`` whose trimmed title equals ``title`` (see
        :meth:`sessions_titled`), through an index."""

    # ------------------------------------------------------------------ messages
    def append_messages(
        self, session_id: str, messages: Iterable[MessageInput | Mapping[str, Any]]
    ) -> list[int]:
        """Append messages in one transaction; return their ids in order.

        Updates ``message_count``, ``tool_call_count`` and ``last_active_at``.
        """
        items = coerce_messages(messages)
        if not items:
            return []
        now = time.time()
        return self._append(valid_text(session_id), items, now)

    @abstractmethod
    def _append(self, session_id: str, items: list[MessageInput], now: float) -> list[int]:
        """Append coerced messages (``timestamp`` defaults to ``now``) in one transaction;
        ``SessionNotFound`` if the session is absent."""

    def sync_sessions(
        self, entries: Sequence[tuple[SessionRecord, Sequence[MessageInput | Mapping[str, Any]]]]
    ) -> SyncReport:
        """Bring sessions up to date with a source that only appends (a re-runnable import).
        A session not stored is created from the record (with its messages), one stored with
        fewer messages gets the rest appended and its updatable fields set, others are left
        alone. A parent must be stored or earlier in ``entries`` (else ``SessionNotFound``)."""
        items = [(record, coerce_messages(messages)) for record, messages in entries]
        return self._sync(items, time.time())

    def _sync(self, entries: list[tuple[SessionRecord, list[MessageInput]]], now: float
              ) -> SyncReport:  # fmt: skip
        """One session at a time through the other hooks (backends override: one write)."""
        n, fields = [0, 0, 0, 0, 0], sorted(SESSION_UPDATABLE_FIELDS)  # see SyncReport
        for record, messages in entries:
            stored = self._session(record.id)
            have = 0 if stored is None else stored.message_count
            if stored is not None and have >= len(messages):
                n[2] += 1
                continue
            if stored is None:
                self._insert_session(replace(record, user_id=self._user(record.user_id),
                                             message_count=0, last_active_at=record.started_at))
            n[0 if stored is None else 1] += 1
            n[3 if stored is None else 4] += len(messages) - have
            if messages[have:]:
                self._append(record.id, messages[have:], now)
            self._update_session(record.id, {k: getattr(record, k) for k in fields})
        return SyncReport(*n)

    def append_message(self, session_id: str, message: MessageInput | Mapping[str, Any]) -> int:
        """Append one message (one transaction); return its id."""
        return self.append_messages(session_id, [message])[0]

    @abstractmethod
    def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Return a session's messages in id order (``SessionNotFound`` if absent)."""

    def get_message(self, message_id: int) -> MessageRecord:
        """Return one message; ``StoreError`` if it does not exist."""
        found = self._message(message_id)
        if found is None:
            raise StoreError(f"no message with id {message_id}")
        return found

    @abstractmethod
    def _message(self, message_id: int) -> MessageRecord | None:
        """One message by id (``None`` if absent)."""

    # ------------------------------------------------------------------ search
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
        snippets: bool = True,
    ) -> SearchResult:
        """Message-level full-text search.

        The query is parsed by :func:`memoryport.storage.sessions.query.parse_query`
        (never raises on odd input). A backend error is re-tried once with the plain
        terms and reported in ``warnings``; if that fails too, ``StoreError`` is raised.
        ``snippets=False`` skips computing snippets (every ``SearchHit.snippet`` is ``""``)
        for callers that show only a few hits; see :meth:`snippets_for`.
        """
        sort = check_sort(sort)
        scope = self._scope(user_id, sources, exclude_sources, roles, session_ids)
        combine = "all" if match == "all" or (match == "auto" and sort != "relevance") else "any"
        parsed = parse_query(query, combine=combine)
        warnings = list(parsed.warnings)
        if parsed.root is None:
            warnings.append("the query has no searchable words")

        def run(p: ParsedQuery) -> tuple[list[SearchHit], str]:
            return self._run_search(
                p, scope, sort=sort, limit=limit, offset=offset, snippets=snippets
            )

        try:
            hits, compiled = run(parsed)
            if not hits and combine == "all" and match == "auto" and len(parsed.terms) > 1:
                hits, compiled = run(parsed.plain("any"))
                if hits:
                    parsed = parsed.plain("any")
                    warnings.append("no message has every word; showing messages with any")
        except StoreError as first:
            if not self._query_failed(first):
                raise  # the database is unavailable: not a query problem
            plain = parsed.plain("any")
            warnings.append(f"search failed ({first.__cause__}); retried with the plain terms")
            try:
                hits, compiled = run(plain)
            except StoreError as second:
                raise StoreError(f"search failed for {query!r}: {second.__cause__}") from second
            parsed = plain
        return SearchResult(hits, parsed.plan(), query, compiled, warnings)

    def snippets_for(self, query: str, message_ids: Sequence[int]) -> dict[int, str]:
        """Snippets (matches marked ``>>>``/``<<<``) for messages a query found.

        Pairs with ``search_messages(..., snippets=False)``: rank cheaply, then pay for
        snippets only for the hits shown. Ids the query does not match are absent.
        """
        parsed = parse_query(query, combine="any")
        if parsed.root is None or not message_ids:
            return {}
        return self._snippets(parsed, list(dict.fromkeys(message_ids)))

    @abstractmethod
    def _run_search(
        self,
        parsed: ParsedQuery,
        scope: SearchScope,
        *,
        sort: SortOrder,
        limit: int,
        offset: int,
        snippets: bool,
    ) -> tuple[list[SearchHit], str]:
        """Run one parsed query; return the hits and the compiled engine expression.

        Raise ``StoreError`` with the engine error as ``__cause__`` when the query fails.
        """

    @abstractmethod
    def _snippets(self, parsed: ParsedQuery, message_ids: list[int]) -> dict[int, str]:
        """Snippets of ``message_ids`` for ``parsed`` (see :meth:`snippets_for`)."""

    def _query_failed(self, error: StoreError) -> bool:
        """True when ``error`` came from the query (worth a plain-terms retry)."""
        return error.__cause__ is not None

    # ------------------------------------------------------------------ windows
    def windows(
        self, anchors: Sequence[int], *, window: int = 5, bookend: int = 3
    ) -> dict[int, MessageWindow]:
        """Windows around several anchor message ids in a few queries (no N+1).

        ``window`` messages on each side of the anchor within its own session, plus up
        to ``bookend`` first/last messages of the session outside the window. Unknown
        anchors are absent from the result.
        """
        return self._windows(list(anchors), max(0, window), max(0, bookend))

    @abstractmethod
    def _windows(self, anchors: list[int], window: int, bookend: int) -> dict[int, MessageWindow]:
        """Windows around ``anchors`` (counts already at least 0), see :meth:`windows`."""

    def window(self, around_message_id: int, *, window: int = 5, bookend: int = 0) -> MessageWindow:
        """The window around one message; ``StoreError`` if the message does not exist."""
        found = self.windows([around_message_id], window=window, bookend=bookend)
        if around_message_id not in found:
            raise StoreError(f"no message with id {around_message_id}")
        return found[around_message_id]

    # ------------------------------------------------------------------ lineage
    def lineage_roots(self, session_ids: Iterable[str]) -> dict[str, str]:
        """Map each known session id to the root of its lineage (batched)."""
        wanted = list(dict.fromkeys(session_ids))
        parents = self._parent_map(wanted)
        return {sid: walk_to_root(sid, parents) for sid in wanted if sid in parents}

    @abstractmethod
    def _parent_map(self, session_ids: list[str]) -> dict[str, str | None]:
        """``id -> parent id`` for ``session_ids`` and all their ancestors (one query)."""

    def lineage_root(self, session_id: str) -> str:
        """The root of one session's lineage (``SessionNotFound`` if absent)."""
        roots = self.lineage_roots([session_id])
        if session_id not in roots:
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

    def forget_user(self, user_id: str) -> int:
        """Delete every session and message of a user; return messages deleted.

        A store bound to another user refuses (``StoreError``).
        """
        self._user(user_id)
        return self._forget_user(user_id)

    @abstractmethod
    def _forget_user(self, user_id: str) -> int:
        """Delete every session and message of ``user_id``; return messages deleted."""

    # ------------------------------------------------------------------ portability
    def export_jsonl(
        self,
        out: IO[str],
        *,
        session_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Write sessions as a version-2 JSONL export (see :mod:`.portable`); return lines.

        Each session once, oldest first, then its messages, from one consistent snapshot.
        An export of nothing is the header line alone. ``progress`` receives
        ``("exporting", messages written, messages in the export)``.
        """
        return self._export(out, session_ids, self._user(user_id), progress)

    @abstractmethod
    def _export(
        self,
        out: IO[str],
        session_ids: Sequence[str] | None,
        user_id: str | None,
        progress: Progress | None,
    ) -> int:
        """Write the export of :meth:`export_jsonl` for a resolved user; return lines."""

    def import_jsonl(
        self,
        lines: Iterable[str | bytes],
        *,
        on_conflict: Literal["skip", "replace", "error"] = "skip",
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import an export (version 1 or 2); ids, timestamps and metadata are kept exactly.

        All or nothing: every line is parsed and checked first (``ToolArgumentError``
        naming the line), then everything is written in one transaction, so the report
        counts exactly what was stored. Every session must belong to this store's user
        (``StoreError`` otherwise). ``progress`` receives ``("reading", ...)`` then
        ``("importing", messages written, messages to write)``.
        """
        entries = read_export(lines, progress)
        for session, _ in entries:
            resolve_user(self.user_id, session.user_id)
        return self._import_entries(entries, on_conflict, progress)

    @abstractmethod
    def _import_entries(
        self,
        entries: list[tuple[SessionRecord, list[MessageRecord]]],
        on_conflict: str,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Write parsed export entries in one transaction (see :meth:`import_jsonl`)."""

    def prune_empty_sessions(
        self, *, older_than: float, dry_run: bool = False, user_id: str | None = None
    ) -> list[SessionRecord]:
        """Delete sessions that have no messages and were last active more than
        ``older_than`` seconds ago; return them (``dry_run`` only lists them).

        Sessions that are the parent of another session are kept (lineage stays whole).
        """
        if older_than < 0:
            raise ToolArgumentError(f"older_than must be 0 or more seconds, not {older_than}")
        return self._prune_empty(self._user(user_id), time.time() - older_than, dry_run)

    @abstractmethod
    def _prune_empty(
        self, user_id: str | None, cutoff: float, dry_run: bool
    ) -> list[SessionRecord]:
        """Empty, childless sessions last active before ``cutoff`` (deleted unless dry run)."""

    # ------------------------------------------------------------------ maintenance
    @abstractmethod
    def rebuild_index(self, progress: Progress | None = None) -> None:
        """Rebuild the full-text indexes from the messages table.

        ``progress`` receives ``(step, done, total)`` as the rebuild goes.
        """

    @abstractmethod
    def check_index(self) -> None:
        """Verify the full-text indexes; ``StoreError`` if they are inconsistent."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """Read a key/value metadata entry."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Write a key/value metadata entry."""
