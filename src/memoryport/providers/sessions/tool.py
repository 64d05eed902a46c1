"""The ``session_search`` tool: one schema, mode inferred from the arguments.

* **scroll** (``session_id`` + ``around_message_id``): a window of real messages around a
  known message; refuses the current session's lineage (already live context) and
  re-binds to a child session of the same lineage with a ``warning``.
* **read** (``session_id`` only): the session's first 20 and last 10 messages.
* **discover** (``query``): message-level full-text search, deduplicated by session
  lineage, each hit with its anchored window and the session's bookends.
* **browse** (no arguments): recent sessions, one per lineage, with a preview. A query
  that names only a period ("what did we talk about last Tuesday?", resolved against the
  store's latest activity) browses the sessions active in that period instead.

Results are stored messages, never summaries. Functions here raise typed errors; the
provider turns them into JSON.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from typing import Any

from memoryport.errors import StoreError, ToolArgumentError
from memoryport.storage.sessions.base import SessionStore, clamp
from memoryport.storage.sessions.query import parse_query
from memoryport.storage.sessions.records import (
    SORT_ORDERS,
    MessageRecord,
    MessageWindow,
    SearchHit,
    SessionRecord,
    check_sort,
)
from memoryport.storage.sessions.render import readable_snippet as _readable_snippet
from memoryport.storage.sessions.temporal import time_hint
from memoryport.storage.timeexpr import has_time_words
from memoryport.types import ToolSchema

__all__ = ["SESSION_SEARCH_SCHEMA", "ToolContext", "session_search", "unquote_title"]

DISCOVER_SCAN_LIMIT = 300
"""At most this many matching messages are examined to fill the requested sessions."""
_MAX_INT = 2**62  # larger integers cannot be bound as SQL integers
DEMOTED_SOURCES = frozenset({"cron"})
"""Sources whose sessions discover ranks below every interactive session it finds
(scheduled runs repeat the same words and would crowd out real conversations)."""

SESSION_SEARCH_SCHEMA: ToolSchema = {
    "name": "session_search",
    "description": (
        "Search or read past conversations (real stored messages, not summaries). "
        "No arguments: browse recent sessions. query: find sessions mentioning something "
        '(keywords, "exact phrases", AND/OR/NOT, prefix*; CJK works). session_id + '
        "around_message_id: scroll a window of messages around a hit. session_id alone: "
        "read the start and end of a session."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "description": "Sessions to return (default 3, max 10).",
            },
            "sort": {
                "type": "string",
                "enum": list(SORT_ORDERS),
                "description": "Order of discover results (default relevance).",
            },
            "session_id": {"type": "string", "description": "A session to scroll or read."},
            "around_message_id": {
                "type": "integer",
                "description": "Message id to centre a scroll window on.",
            },
            "window": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "Messages on each side of the anchor (default 5, 1-20).",
            },
            "role_filter": {
                "type": "string",
                "description": "Comma-separated roles to match (default user,assistant).",
            },
        },
        "required": [],
    },
}


class ToolContext:
    """Who is calling: the live session (excluded from recall) and the user scope."""

    def __init__(self, current_session_id: str = "", user_id: str | None = None) -> None:
        self.current_session_id = current_session_id
        self.user_id = user_id or None


def format_when(timestamp: float) -> str:
    """Human date like ``March 04, 2026 at 09:15 PM`` (local time)."""
    return time.strftime("%B %d, %Y at %I:%M %p", time.localtime(timestamp))


def shape_message(message: MessageRecord, *, anchor: bool = False) -> dict[str, Any]:
    """The JSON shape of one message in tool results."""
    data: dict[str, Any] = {
        "id": message.id,
        "role": message.role,
        "content": message.content,
        "timestamp": message.timestamp,
    }
    for key in ("tool_name", "tool_calls", "tool_call_id"):
        value = getattr(message, key)
        if value:
            data[key] = value
    if anchor:
        data["anchor"] = True
    return data


def _int_arg(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ToolArgumentError(f"{key} must be an integer, not {value!r}") from exc
    if abs(number) > _MAX_INT:
        raise ToolArgumentError(f"{key} is out of range: {value!r}")
    return number


class _Seen:
    """The lineage roots a listing has shown, starting with the current conversation's.

    The current session's root is read with the first lineage lookup that has other
    sessions to resolve (one store call, one round trip on PostgreSQL, instead of a call
    of its own first); a listing with nothing to resolve never needs it.
    """

    def __init__(self, ctx: ToolContext) -> None:
        self.roots: set[str] = set()
        self._current = ctx.current_session_id

    def lineage(self, store: SessionStore, session_ids: Iterable[str]) -> dict[str, str]:
        """``store.lineage_roots(session_ids)``; the current session's root, when still
        unread and ``session_ids`` is not empty, is read by the same call into ``roots``."""
        wanted = set(session_ids)
        current, self._current = (self._current, "") if wanted else ("", self._current)
        roots = store.lineage_roots(wanted | {current} if current else wanted)
        if current in roots:
            self.roots.add(roots[current])
        return roots


def session_search(
    store: SessionStore, args: Mapping[str, Any], ctx: ToolContext
) -> dict[str, Any]:
    """Run the tool with already-decoded arguments; return the JSON-ready result.

    Raises ``ToolArgumentError``, ``SessionNotFound`` or ``StoreError``.
    """
    unknown = set(args) - set(SESSION_SEARCH_SCHEMA["parameters"]["properties"])
    if unknown:
        raise ToolArgumentError(f"unknown argument(s): {', '.join(sorted(unknown))}")
    session_id = str(args.get("session_id") or "").strip()
    query = str(args.get("query") or "").strip()
    if args.get("around_message_id") not in (None, ""):
        if not session_id:
            raise ToolArgumentError("around_message_id needs session_id (scroll mode)")
        return scroll(
            store,
            session_id,
            _int_arg(args, "around_message_id", 0),
            _int_arg(args, "window", 5),
            ctx,
        )
    if session_id:
        return read(store, session_id, ctx)
    if query:
        period = only_time_period(store, query, ctx)
        if period is not None:
            limit = clamp(_int_arg(args, "limit", 3), 1, 10)
            return browse_period(store, query, period, limit, ctx)
        return discover(store, query, args, ctx)
    return browse(store, clamp(_int_arg(args, "limit", 10), 1, 50), ctx)


def _session_meta(session: SessionRecord) -> dict[str, Any]:
    return {
        "when": format_when(session.started_at),
        "source": session.source,
        "model": session.model,
        "title": session.title,
    }


def scroll(
    store: SessionStore, session_id: str, around: int, window: int, ctx: ToolContext
) -> dict[str, Any]:
    """A window of messages around ``around`` in ``session_id`` (or a lineage child)."""
    session = store.get_session(session_id, user_id=ctx.user_id)
    try:
        anchor = store.get_message(around)
    except StoreError as exc:
        raise ToolArgumentError(f"no message with id {around}") from exc
    warning = ""
    roots = store.lineage_roots({session_id, anchor.session_id, ctx.current_session_id} - {""})
    if anchor.session_id != session_id:
        if roots.get(anchor.session_id) != roots.get(session_id):
            raise ToolArgumentError(f"message {around} is not in session {session_id}")
        session = store.get_session(anchor.session_id, user_id=ctx.user_id)
        warning = (
            f"message {around} lives in {anchor.session_id}, a continuation of "
            f"{session_id}; showing that session"
        )
    if ctx.current_session_id and roots.get(ctx.current_session_id) == roots.get(session.id):
        raise ToolArgumentError(
            "that session is part of the current conversation; it is already in your context"
        )
    size = clamp(window, 1, 20)
    view = store.window(around, window=size, bookend=0)
    result: dict[str, Any] = {
        "success": True,
        "mode": "scroll",
        "session_id": session.id,
        "around_message_id": around,
        "session_meta": _session_meta(session),
        "window": size,
        "messages": [shape_message(m, anchor=m.id == around) for m in view.messages],
        "messages_before": view.messages_before,
        "messages_after": view.messages_after,
    }
    if warning:
        result["warning"] = warning
    return result


def read(store: SessionStore, session_id: str, ctx: ToolContext) -> dict[str, Any]:
    """The start (20) and end (10) of a session."""
    session = store.get_session(session_id, user_id=ctx.user_id)
    seen = _Seen(ctx)
    roots = seen.lineage(store, [session.id])  # one call for both sessions' roots
    if session.id in roots and roots[session.id] in seen.roots:
        raise ToolArgumentError(
            "that session is part of the current conversation; it is already in your context"
        )
    head = store.get_messages(session.id, limit=20)
    total = session.message_count
    tail = (
        store.get_messages(session.id, limit=10, offset=max(20, total - 10)) if total > 20 else []
    )
    return {
        "success": True,
        "mode": "read",
        "session_id": session.id,
        "session_meta": _session_meta(session),
        "message_count": total,
        "truncated": total > len(head) + len(tail),
        "messages": [shape_message(m) for m in [*head, *tail]],
    }


def browse(store: SessionStore, limit: int, ctx: ToolContext) -> dict[str, Any]:
    """Recent sessions, one per lineage, excluding the current conversation."""
    rows = store.list_sessions(user_id=ctx.user_id, limit=limit * 3 + 5)
    seen = _Seen(ctx)
    roots = seen.lineage(store, [r.session.id for r in rows])
    skip = seen.roots
    results = []
    for row in rows:
        root = roots.get(row.session.id, row.session.id)
        if root in skip:
            continue
        skip.add(root)
        s = row.session
        results.append(
            {
                "session_id": s.id,
                "title": s.title,
                "source": s.source,
                "started_at": s.started_at,
                "last_active": s.last_active_at,
                "when": format_when(s.last_active_at),
                "message_count": s.message_count,
                "preview": row.preview,
            }
        )
        if len(results) >= limit:
            break
    message = "" if results else "no past sessions yet"
    return {
        "success": True,
        "mode": "browse",
        "results": results,
        "count": len(results),
        "message": message,
    }


PERIOD_SCAN_LIMIT = 2000
"""At most this many sessions (most recently active first) are checked by a period browse."""


def only_time_period(
    store: SessionStore, query: str, ctx: ToolContext
) -> tuple[float, float] | None:
    """The period a purely temporal query names ("what did we talk about last Tuesday?"),
    resolved against the store's latest activity (not the wall clock); else None."""
    if not has_time_words(query):
        return None
    latest = store.list_sessions(user_id=ctx.user_id, limit=1)
    if not latest:
        return None
    hint = time_hint(query, latest[0].session.last_active_at)
    if not hint.only_time:
        return None
    return min(lo for lo, _ in hint.events), max(hi for _, hi in hint.events)


def browse_period(
    store: SessionStore, query: str, period: tuple[float, float], limit: int, ctx: ToolContext
) -> dict[str, Any]:
    """Sessions active during ``period``, most recent first, one per lineage."""
    start, end = period
    seen = _Seen(ctx)
    skip = seen.roots
    results: list[dict[str, Any]] = []
    offset, page = 0, 100
    while len(results) < limit and offset < PERIOD_SCAN_LIMIT:
        rows = store.list_sessions(user_id=ctx.user_id, limit=page, offset=offset)
        roots = seen.lineage(store, [r.session.id for r in rows])
        for row in rows:
            s = row.session
            root = roots.get(s.id, s.id)
            if s.started_at >= end or root in skip or s.last_active_at < start:
                continue
            skip.add(root)
            results.append(_period_entry(row.session, row.preview))
            if len(results) >= limit:
                break
        if len(rows) < page or rows[-1].session.last_active_at < start:
            break  # newest-active first: every later session ended before the period
        offset += page
    return {
        "success": True,
        "mode": "browse",
        "query": query,
        "period": {"start": format_when(start), "end": format_when(end)},
        "results": results,
        "count": len(results),
        "message": "" if results else "no past session was active in that period",
    }


def _period_entry(s: SessionRecord, preview: str) -> dict[str, Any]:
    return {
        "session_id": s.id,
        "title": s.title,
        "source": s.source,
        "started_at": s.started_at,
        "last_active": s.last_active_at,
        "when": format_when(s.started_at),
        "message_count": s.message_count,
        "preview": preview,
    }


_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb"}


def unquote_title(query: str) -> str:
    """``query`` without the quotes a model puts around a title it cites: backticks
    (also triple), single, double, typographic and guillemet quotes, nested too."""
    text = query.strip()
    while len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def _title_match(
    store: SessionStore, query: str, ctx: ToolContext, seen: _Seen
) -> tuple[SessionRecord, str] | None:
    """The most recently active session titled exactly ``query`` (or ``query`` without
    surrounding quotes or backticks, see :func:`unquote_title`) outside ``seen``.

    Served by the store's title index (user scoping and hidden sources apply); its
    lineage root is added to ``seen`` so message hits do not repeat that conversation.
    """
    titled = []
    for candidate in dict.fromkeys((query, unquote_title(query))):
        titled = store.sessions_titled(candidate, user_id=ctx.user_id, limit=5)
        if titled:
            break
    roots = seen.lineage(store, (s.id for s in titled))
    for session in titled:
        root = roots.get(session.id, session.id)
        if root not in seen.roots:
            seen.roots.add(root)
            return session, root
    return None


def _collect_hits(
    store: SessionStore,
    query: str,
    args: Mapping[str, Any],
    ctx: ToolContext,
    limit: int,
    seen: _Seen,
) -> tuple[list[tuple[SearchHit, str]], int, Any]:
    roles = [r.strip() for r in str(args.get("role_filter") or "user,assistant").split(",")]
    sort = check_sort(str(args.get("sort") or "relevance"))
    chosen: list[tuple[SearchHit, str]] = []
    scheduled: list[tuple[SearchHit, str]] = []  # cron sessions rank below interactive ones
    scanned, offset, last = 0, 0, None
    page = max(limit * 4, 12)  # small first page: most queries need no second one
    while limit > 0 and len(chosen) < limit and offset < DISCOVER_SCAN_LIMIT:
        page = min(page, DISCOVER_SCAN_LIMIT - offset)
        last = store.search_messages(
            query,
            user_id=ctx.user_id,
            roles=[r for r in roles if r],
            sort=sort,
            limit=page,
            offset=offset,
            snippets=False,  # computed below for the few hits discover returns
        )
        scanned += len(last.hits)
        roots = seen.lineage(store, {h.message.session_id for h in last.hits})
        for hit in last.hits:
            root = roots.get(hit.message.session_id, hit.message.session_id)
            if root not in seen.roots:
                seen.roots.add(root)
                (scheduled if hit.source in DEMOTED_SOURCES else chosen).append((hit, root))
                if len(chosen) >= limit:
                    break
        if len(last.hits) < page:
            break
        offset += page
        page *= 4
    picked = (chosen + scheduled)[:limit]
    snippets = store.snippets_for(query, [h.message.id for h, _ in picked]) if picked else {}
    picked = [
        (dataclasses.replace(h, snippet=_readable(h, snippets.get(h.message.id, ""), query)), r)
        for h, r in picked
    ]
    return picked, scanned, last


def _readable(hit: SearchHit, snippet: str, query: str) -> str:
    """Tool calls as ``name(args)`` instead of a cut of their JSON (see ``render``)."""
    return _readable_snippet(hit.message, snippet, query)


def _title_hit(store: SessionStore, session: SessionRecord) -> SearchHit:
    """A pseudo-hit for a session whose title matched: anchored on its first message
    (a session without messages gets an anchor with id 0, shown as no messages)."""
    first = store.get_messages(session.id, limit=1)
    anchor = first[0] if first else MessageRecord(0, session.id, "", "", session.started_at)
    return SearchHit(
        message=anchor,
        snippet=f">>>{session.title}<<<",
        score=0.0,
        source=session.source,
        model=session.model,
        session_started=session.started_at,
        session_title=session.title,
        parent_session_id=session.parent_session_id,
    )


def _discover_entry(
    hit: SearchHit, root: str, view: MessageWindow | None, *, title: bool
) -> dict[str, Any]:
    """One discover result: the hit, its anchored window and the session's bookends."""
    shown = view.messages if view else ([hit.message] if hit.message.id else [])
    entry: dict[str, Any] = {
        "session_id": hit.message.session_id,
        "title": hit.session_title,
        "when": format_when(hit.session_started),
        "source": hit.source,
        "model": hit.model,
        "matched_role": "session_title" if title else hit.message.role,
        "match_message_id": hit.message.id or None,
        "snippet": hit.snippet,
        "bookend_start": [shape_message(m) for m in view.bookend_start] if view else [],
        "messages": [shape_message(m, anchor=m.id == hit.message.id) for m in shown],
        "bookend_end": [shape_message(m) for m in view.bookend_end] if view else [],
        "messages_before": view.messages_before if view else 0,
        "messages_after": view.messages_after if view else 0,
    }
    if hit.parent_session_id:
        entry["parent_session_id"] = hit.parent_session_id
        entry["lineage_root"] = root
    return entry


def discover(
    store: SessionStore, query: str, args: Mapping[str, Any], ctx: ToolContext
) -> dict[str, Any]:
    """Top sessions matching ``query``, each with the anchored window and bookends.

    A session titled exactly ``query`` (quotes or backticks around it are ignored) comes
    first (``matched_role: "session_title"``, anchored on its first message), then
    sessions whose messages match. ``query_read_as`` says how the query was read: the
    words searched and any punctuated text (``what?``, ``a/b``) whose literal matches
    rank first.
    """
    limit = clamp(_int_arg(args, "limit", 3), 1, 10)
    window = clamp(_int_arg(args, "window", 5), 1, 20)
    seen = _Seen(ctx)  # the current conversation is never a result
    titled = _title_match(store, query, ctx, seen)
    chosen, scanned, last = _collect_hits(store, query, args, ctx, limit - bool(titled), seen)
    if titled is not None:
        chosen.insert(0, (_title_hit(store, titled[0]), titled[1]))
    views = store.windows([h.message.id for h, _ in chosen], window=window, bookend=3)
    results = [
        _discover_entry(hit, root, views.get(hit.message.id), title=titled is not None and i == 0)
        for i, (hit, root) in enumerate(chosen)
    ]
    out: dict[str, Any] = {
        "success": True,
        "mode": "discover",
        "query": query,
        "results": results,
        "count": len(results),
        "messages_scanned": scanned,
        "search_plan": last.plan if last else "empty",
        "query_read_as": parse_query(query).read_as(),
    }
    if last is not None and last.warnings:
        out["warnings"] = last.warnings
    if not results:
        out["message"] = "no past session matches that query" + (
            " (it has no searchable words)" if last is not None and last.plan == "empty" else ""
        )
    return out
