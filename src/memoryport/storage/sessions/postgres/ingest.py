"""Batched appends for the PostgreSQL session store: one statement per batch.

``append_messages`` sends a whole batch as column arrays to one prepared statement:

* the session's counters are updated (``UPDATE ... RETURNING`` in a CTE; no row, no
  insert, so an unknown session leaves nothing behind);
* the messages are inserted from ``unnest(...) WITH ORDINALITY`` in input order, so
  their identity ids ascend in that order (``RETURNING`` gives them back).

The event windows resolved from the messages' words (computed client-side) follow in a
second array statement when there are any; it cannot be a CTE of the first, because
the row-level security check on ``message_events`` must see the new messages.

``COPY`` cannot return the generated ids, which callers need; array parameters give the
same single round trip with a fixed statement text, which psycopg prepares once per
connection (``prepare=True``), so the server plans it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.sessions.postgres.dialect import message_values
from memoryport.storage.sessions.records import MessageInput
from memoryport.storage.sessions.temporal import event_rows

__all__ = ["append_batch", "append_statement", "events_statement"]

Cursor = psycopg.Cursor[Any]

_COLUMNS = (
    ("role", "text"),
    ("content", "text"),
    ("timestamp", "float8"),
    ("tool_name", "text"),
    ("tool_calls", "text"),
    ("tool_call_id", "text"),
    ("reasoning", "text"),
    ("metadata", "text"),
)
"""The message columns after ``session_id`` (``MESSAGE_INSERT_COLUMNS`` order)."""


def append_statement(schema: sql.Identifier) -> sql.Composed:
    """The one-round-trip append for ``schema`` (parameters: see :func:`append_batch`)."""
    names = ", ".join(name for name, _ in _COLUMNS)
    arrays = ", ".join(f"%s::{kind}[]" for _, kind in _COLUMNS)
    picked = ", ".join(f"r.{name}" for name, _ in _COLUMNS)
    return sql.SQL(
        "WITH s AS (UPDATE {s}.sessions SET message_count = message_count + %s,"
        " tool_call_count = tool_call_count + %s,"
        " last_active_at = greatest(last_active_at, %s) WHERE id = %s RETURNING id),"
        f" m AS (INSERT INTO {{s}}.messages (session_id, {names})"
        f" SELECT s.id, {picked} FROM s, unnest({arrays}) WITH ORDINALITY"
        f" AS r({names}, ord) ORDER BY r.ord RETURNING id)"
        " SELECT id FROM m ORDER BY id"
    ).format(s=schema)


def events_statement(schema: sql.Identifier) -> sql.Composed:
    """Insert event windows from five arrays (message id, start, end, precision, words)."""
    return sql.SQL(
        "INSERT INTO {s}.message_events"
        " SELECT * FROM unnest(%s::int8[], %s::float8[], %s::float8[], %s::text[], %s::text[])"
    ).format(s=schema)


def append_batch(
    cur: Cursor, schema: sql.Identifier, session_id: str, items: Sequence[MessageInput], now: float
) -> list[int]:
    """Append ``items`` to ``session_id`` in the caller's transaction; their ids in order.

    Returns ``[]`` when the session does not exist (nothing was written).
    """
    rows = [message_values(session_id, m, now) for m in items]
    columns: list[list[Any]] = [list(c) for c in zip(*(r[1:] for r in rows), strict=True)]
    tool_calls = sum(len(m.tool_calls or []) for m in items)
    last = max(float(r[3]) for r in rows)
    params = [len(rows), tool_calls, last, session_id, *columns]
    found = cur.execute(append_statement(schema), params, prepare=True).fetchall()
    ids = [int(row[0]) for row in found]
    events = [e for i, r in zip(ids, rows, strict=False) for e in event_rows(i, r[2], r[3])]
    if events:
        event_columns = [list(c) for c in zip(*events, strict=True)]
        cur.execute(events_statement(schema), event_columns, prepare=True)
    return ids
