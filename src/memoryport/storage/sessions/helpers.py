"""SQL-free helpers shared by every session store backend.

* user scoping (:func:`resolve_user`), source visibility (:func:`visible_sources`);
* input coercion (:func:`coerce_message`) and session-field validation;
* lineage walking over a parent map (:func:`walk_to_root`);
* window shaping (:func:`shape_window`);
* JSONL export/import line shapes (:func:`export_line`, :func:`parse_export_line`,
  :func:`group_export_lines`);
* the column lists and row conversions both backends select with
  (:data:`MESSAGE_COLUMNS`, :func:`message_from_row`, ...), so each backend keeps only
  its SQL and its text encoding.

Re-exported by :mod:`memoryport.storage.sessions.base`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from memoryport.errors import StoreError, ToolArgumentError
from memoryport.storage.sessions.portable import Progress, read_export
from memoryport.storage.sessions.records import (
    DEFAULT_HIDDEN_SOURCES,
    SESSION_UPDATABLE_FIELDS,
    MessageInput,
    MessageRecord,
    MessageWindow,
    SessionRecord,
)
from memoryport.types import flatten_content

__all__ = [
    "MESSAGE_COLUMNS",
    "MESSAGE_INSERT_COLUMNS",
    "SESSION_COLUMNS",
    "check_session_fields",
    "clamp",
    "coerce_message",
    "dump_json",
    "export_line",
    "flatten_content",
    "group_export_lines",
    "message_from_row",
    "message_values",
    "new_session_id",
    "parse_export_line",
    "resolve_user",
    "session_from_row",
    "session_values",
    "shape_window",
    "visible_sources",
    "walk_to_root",
]

TextCodec = Callable[[str | None], str | None]
"""How a backend stores free text (identity for SQLite, a NUL escape for PostgreSQL)."""

MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.role, m.content, m.timestamp, m.tool_name, m.tool_calls, "
    "m.tool_call_id, m.reasoning, m.metadata"
)
"""Select list matching :func:`message_from_row` (``messages`` aliased ``m``)."""

MESSAGE_INSERT_COLUMNS = MESSAGE_COLUMNS.replace("m.", "").replace("id, ", "", 1)
"""Column list matching :func:`message_values` (``MESSAGE_COLUMNS`` without ``id``)."""

SESSION_COLUMNS = (
    "s.id, s.source, s.user_id, s.model, s.title, s.parent_session_id, s.started_at, "
    "s.ended_at, s.end_reason, s.last_active_at, s.message_count, s.tool_call_count, "
    "s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens, "
    "s.reasoning_tokens, s.estimated_cost_usd, s.actual_cost_usd, s.metadata"
)
"""Select list matching :func:`session_from_row` (``sessions`` aliased ``s``)."""


def _same(value: str | None) -> str | None:
    return value


def dump_json(value: Any) -> str | None:
    """JSON text for a column, or NULL for an empty value (saves space)."""
    if value in (None, {}, []):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message_from_row(row: Sequence[Any], decode: TextCodec = _same) -> MessageRecord:
    """Build a ``MessageRecord`` from a row selected with ``MESSAGE_COLUMNS``."""
    return MessageRecord(
        id=int(row[0]),
        session_id=row[1],
        role=row[2],
        content=decode(row[3]) or "",
        timestamp=row[4],
        tool_name=row[5],
        tool_calls=json.loads(row[6]) if row[6] else None,
        tool_call_id=row[7],
        reasoning=decode(row[8]),
        metadata=json.loads(row[9]) if row[9] else {},
    )


def session_from_row(row: Sequence[Any], decode: TextCodec = _same) -> SessionRecord:
    """Build a ``SessionRecord`` from a row selected with ``SESSION_COLUMNS``."""
    values = list(row)
    values[4] = decode(values[4]) or ""
    values[-1] = json.loads(values[-1]) if values[-1] else {}
    return SessionRecord(*values)


def message_values(
    session_id: str, message: MessageInput | MessageRecord, now: float, encode: TextCodec = _same
) -> tuple[Any, ...]:
    """Insert values for ``MESSAGE_COLUMNS`` minus ``id`` (``timestamp`` defaults to ``now``)."""
    return (
        session_id,
        message.role,
        encode(message.content),
        now if message.timestamp is None else message.timestamp,
        message.tool_name,
        dump_json(message.tool_calls),
        message.tool_call_id,
        encode(message.reasoning),
        dump_json(message.metadata),
    )


def group_export_lines(
    lines: Iterable[str | bytes], progress: Progress | None = None
) -> list[tuple[SessionRecord, list[MessageRecord]]]:
    """Parse an export (version 1 or 2) into (session, messages) pairs in first-seen order.

    A malformed line raises ``ToolArgumentError`` naming its (1-based) line number; see
    :func:`memoryport.storage.sessions.portable.read_export`.
    """
    return read_export(lines, progress)


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
    """One version-1 export line: ``{"session": {...}, "message": {...} | null}``.

    Exports are written in version 2 today (:class:`~.portable.ExportWriter`); version-1
    lines still import.
    """
    payload = {"session": session.to_dict(), "message": message.to_dict() if message else None}
    return json.dumps(payload, ensure_ascii=False, sort_keys=True)


def parse_export_line(line: str) -> tuple[SessionRecord, MessageRecord | None]:
    """Parse one version-1 export line; raises ``ToolArgumentError`` if malformed."""
    entries = read_export([line])
    if len(entries) != 1 or len(entries[0][1]) > 1:
        raise ToolArgumentError('expected one {"session": ..., "message": ...} line')
    session, messages = entries[0]
    return session, (messages[0] if messages else None)


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


def session_values(session: SessionRecord, encode: TextCodec = _same) -> list[Any]:
    """Column values of ``session`` in ``SESSION_COLUMNS`` order, ready to insert."""
    values = list(session.to_dict().values())
    values[4] = encode(values[4])
    values[-1] = dump_json(values[-1])
    return values
