"""Batched appends for the PostgreSQL session store: one statement, one round trip.

``append_messages`` sends a whole batch as column arrays to one prepared statement:

* the session's counters are updated (``UPDATE ... RETURNING`` in a CTE; no row, no
  insert, so an unknown session leaves nothing behind);
* the messages are inserted from ``unnest(...) WITH ORDINALITY`` in input order, so
  their identity ids ascend in that order (``RETURNING`` gives them back);
* the event windows resolved from the messages' words (computed client-side, keyed by
  position in the batch) are inserted by joining the positions to the new ids.

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

__all__ = ["append_batch", "append_statement"]

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
        f" AS r({names}, ord) ORDER BY r.ord RETURNING id),"
        " n AS (SELECT id, row_number() OVER (ORDER BY id) AS ord FROM m),"
        " e AS (INSERT INTO {s}.message_events"
        " SELECT n.id, ev.start_at, ev.end_at, ev.precision, ev.words"
        " FROM unnest(%s::int8[], %s::float8[], %s::float8[], %s::text[], %s::text[])"
        " AS ev(ord, start_at, end_at, precision, words) JOIN n USING (ord))"
        " SELECT id FROM n ORDER BY ord"
    ).format(s=schema)


def append_batch(
    cur: Cursor, statement: sql.Composed, session_id: str, items: Sequence[MessageInput], now: float
) -> list[int]:
    """Append ``items`` to ``session_id`` in the caller's transaction; their ids in order.

    Returns ``[]`` when the session does not exist (nothing was written).
    """
    rows = [message_values(session_id, m, now) for m in items]
    columns: list[list[Any]] = [list(c) for c in zip(*(r[1:] for r in rows), strict=True)]
    events = [e for i, r in enumerate(rows, 1) for e in event_rows(i, r[2], r[3])]
    event_columns: list[list[Any]] = [list(c) for c in zip(*events, strict=True)] or [[]] * 5
    tool_calls = sum(len(m.tool_calls or []) for m in items)
    last = max(float(r[3]) for r in rows)
    params = [len(rows), tool_calls, last, session_id, *columns, *event_columns]
    return [int(row[0]) for row in cur.execute(statement, params, prepare=True).fetchall()]
