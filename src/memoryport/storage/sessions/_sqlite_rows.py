"""Row <-> record conversion and filter SQL shared by the SQLite store modules."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from memoryport.storage.sessions.base import MessageRecord, SessionRecord

__all__ = [
    "MESSAGE_COLUMNS",
    "SESSION_COLUMNS",
    "dump_json",
    "message_from_row",
    "scope_sql",
    "session_from_row",
]

MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.role, m.content, m.timestamp, m.tool_name, m.tool_calls, "
    "m.tool_call_id, m.reasoning, m.metadata"
)
"""Select list matching :func:`message_from_row` (``messages`` aliased ``m``)."""

SESSION_COLUMNS = (
    "s.id, s.source, s.user_id, s.model, s.title, s.parent_session_id, s.started_at, "
    "s.ended_at, s.end_reason, s.last_active_at, s.message_count, s.tool_call_count, "
    "s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens, "
    "s.reasoning_tokens, s.estimated_cost_usd, s.actual_cost_usd, s.metadata"
)
"""Select list matching :func:`session_from_row` (``sessions`` aliased ``s``)."""


def dump_json(value: Any) -> str | None:
    """JSON text for a column, or NULL for an empty value (saves space)."""
    if value in (None, {}, []):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message_from_row(row: Sequence[Any]) -> MessageRecord:
    """Build a ``MessageRecord`` from a row selected with ``MESSAGE_COLUMNS``."""
    return MessageRecord(
        id=row[0],
        session_id=row[1],
        role=row[2],
        content=row[3],
        timestamp=row[4],
        tool_name=row[5],
        tool_calls=json.loads(row[6]) if row[6] else None,
        tool_call_id=row[7],
        reasoning=row[8],
        metadata=json.loads(row[9]) if row[9] else {},
    )


def session_from_row(row: Sequence[Any]) -> SessionRecord:
    """Build a ``SessionRecord`` from a row selected with ``SESSION_COLUMNS``."""
    values = list(row)
    values[-1] = json.loads(values[-1]) if values[-1] else {}
    return SessionRecord(*values)


def scope_sql(
    *,
    user_id: str | None,
    include: Sequence[str] | None,
    exclude: Sequence[str],
    roles: Sequence[str] | None = None,
    session_ids: Sequence[str] | None = None,
) -> tuple[str, list[Any]]:
    """``AND ...`` conditions on ``s`` (sessions) and ``m`` (messages) plus parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        parts.append("s.user_id = ?")
        params.append(user_id)
    if include:
        parts.append("s.source IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(include)))
    if exclude:
        parts.append("s.source NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(exclude)))
    if roles:
        parts.append("m.role IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(roles)))
    if session_ids:
        parts.append("m.session_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(session_ids)))
    return "".join(f" AND {p}" for p in parts), params


def is_busy(exc: sqlite3.Error) -> bool:
    """True for the transient "database is locked/busy" errors worth retrying."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text
