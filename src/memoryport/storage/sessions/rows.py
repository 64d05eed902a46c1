"""SQL-free row shapes shared by every SQL session store backend.

* the column lists both backends select with (:data:`MESSAGE_COLUMNS`,
  :data:`SESSION_COLUMNS`, :data:`HIT_COLUMNS`) and the row conversions that match them
  (:func:`message_from_row`, :func:`session_from_row`, :func:`hit_from_row`,
  :func:`message_values`, :func:`session_values`);
* the scope filters (:func:`scope_where`), rendered with each backend's operators;
* window shaping (:func:`shape_window`);
* messages with what a store derives from them computed ahead (:class:`PreparedMessage`,
  :func:`derive`, in any thread or process), which a bulk write takes as they are.

A backend keeps only its SQL and its text encoding (:data:`TextCodec`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryport.storage.sessions.query import has_cjk
from memoryport.storage.sessions.records import (
    MessageInput,
    MessageRecord,
    MessageWindow,
    SearchHit,
    SearchScope,
    SessionRecord,
)
from memoryport.storage.sessions.temporal import event_rows

__all__ = [
    "HIT_COLUMNS",
    "MESSAGE_COLUMNS",
    "MESSAGE_INSERT_COLUMNS",
    "SESSION_COLUMNS",
    "Derived",
    "PreparedMessage",
    "TextCodec",
    "derive",
    "dump_json",
    "hit_from_row",
    "message_from_row",
    "message_values",
    "scope_where",
    "session_from_row",
    "session_values",
    "shape_window",
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

HIT_COLUMNS = f"{MESSAGE_COLUMNS}, s.source, s.model, s.started_at, s.title, s.parent_session_id"
"""Select list matching :func:`hit_from_row` (a message joined to its session)."""


def _same(value: str | None) -> str | None:
    return value


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dump_json(value: Any) -> str | None:
    """JSON text for a column, or NULL for an empty value (saves space)."""
    if value in (None, {}, []):
        return None
    return _encode(value)


Derived = tuple["str | None", int, tuple[tuple[float, float, str, str], ...]]
"""What a store derives from a message's words to write it: its tool calls as JSON text
(:func:`dump_json`), its CJK flag (1/0) and the event windows its words resolve to
against its timestamp (start, end, precision, words each; ``temporal.event_rows``)."""


@dataclass(frozen=True)
class PreparedMessage(MessageInput):
    """A ``MessageInput`` carrying its :data:`Derived`, computed ahead by :func:`derive` (in
    a reader thread or process), so the SQLite bulk write (``sync_sessions``) spends none
    of its transaction on it; any other store reads it as the plain message it is.
    ``derived`` must be ``derive`` of the same fields (None: not computed, the store
    derives it)."""

    derived: Derived | None = field(default=None, compare=False, repr=False)


def derive(content: str, timestamp: float, tool_calls: list[Any] | None) -> Derived:
    """:data:`Derived` of a message with these fields (its timestamp given)."""
    events = tuple(row[1:] for row in event_rows(0, content, timestamp)) if content else ()
    calls = None if tool_calls is None else dump_json(tool_calls)
    return calls, 1 if has_cjk(content) else 0, events


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


def hit_from_row(
    message: MessageRecord,
    row: Sequence[Any],
    snippet: str,
    score: float,
    decode: TextCodec = _same,
) -> SearchHit:
    """A ``SearchHit`` for ``message`` from a row selected with ``HIT_COLUMNS``."""
    return SearchHit(
        message=message,
        snippet=snippet,
        score=score,
        source=row[10],
        model=row[11],
        session_started=row[12],
        session_title=decode(row[13]) or "",
        parent_session_id=row[14],
    )


def scope_where(
    scope: SearchScope, operators: Mapping[str, str], pack: Callable[[list[str]], Any]
) -> tuple[str, list[Any]]:
    """``AND ...`` conditions of ``scope`` on ``s`` (sessions) and ``m`` (messages), and
    their parameters, in a backend's dialect.

    ``operators`` maps ``=``, ``in`` and ``not in`` to a condition template (``{}`` is the
    column, one parameter placeholder); ``pack`` turns a list of values into the one
    parameter an ``in``/``not in`` template takes.
    """
    conditions: list[tuple[str, str, Any]] = []
    if scope.user_id is not None:
        conditions.append(("s.user_id", "=", scope.user_id))
    for column, op, values in (
        ("s.source", "in", scope.include),
        ("s.source", "not in", scope.exclude),
        ("m.role", "in", scope.roles),
        ("m.session_id", "in", scope.session_ids),
    ):
        if values:
            conditions.append((column, op, pack(list(values))))
    where = "".join(" AND " + operators[op].format(column) for column, op, _ in conditions)
    return where, [value for _, _, value in conditions]


def session_values(session: SessionRecord, encode: TextCodec = _same) -> list[Any]:
    """Column values of ``session`` in ``SESSION_COLUMNS`` order, ready to insert."""
    values = list(session.to_dict().values())
    values[4] = encode(values[4])
    values[-1] = dump_json(values[-1])
    return values
