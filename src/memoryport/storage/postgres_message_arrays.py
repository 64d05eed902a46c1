"""Session messages as column arrays, for the PostgreSQL session store's batched inserts.

:mod:`memoryport.storage.sessions.postgres.bulk` appends and syncs a batch of messages
with one array parameter per column (see its "batched appends" notes). Here are those
columns (:data:`COLUMNS`), the ``INSERT`` texts that ``unnest`` them
(:func:`insert_select`, :func:`rows_statement`), the arrays themselves in PostgreSQL's
binary format (:func:`column_arrays`) and the arrays of the messages' event windows
(:func:`event_arrays`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from memoryport.storage.postgres_wire import BinaryArray, float8_array, text_array
from memoryport.storage.search_lexemes import documents_of_rows
from memoryport.storage.sessions.temporal import event_rows

__all__ = [
    "COLUMNS",
    "TIMESTAMP",
    "column_arrays",
    "event_arrays",
    "insert_select",
    "rows_statement",
]

COLUMNS = (("role", "text"), ("content", "text"), ("timestamp", "float8"), ("tool_name", "text"),
           ("tool_calls", "text"), ("tool_call_id", "text"), ("reasoning", "text"),
           ("metadata", "text"), ("tsv", "text"))  # fmt: skip
"""The message columns after ``session_id`` (``MESSAGE_INSERT_COLUMNS`` order, then the
``tsvector`` literal of :func:`memoryport.storage.search_lexemes.document`)."""

TIMESTAMP = 3
"""The ``timestamp`` column's index in a ``message_values`` row (the others are text)."""


def insert_select(source: str) -> str:
    """``INSERT`` of the message columns from ``unnest`` arrays, the session id taken
    from ``source`` (a relation ``s`` with column ``id``)."""
    names = ", ".join(name for name, _ in COLUMNS)
    arrays = ", ".join(f"%b::{kind}[]" for _, kind in COLUMNS)
    picked = ", ".join(f"r.{name}" for name, _ in COLUMNS[:-1])
    return (
        f"INSERT INTO {{s}}.messages (session_id, {names})"
        f" SELECT s.id, {picked}, r.tsv::tsvector FROM {source}, unnest({arrays})"
        f" WITH ORDINALITY AS r({names}, ord) ORDER BY r.ord RETURNING id"
    )


def rows_statement(schema: sql.Identifier) -> sql.Composed:
    """``INSERT`` of message rows given as column arrays (``session_id`` first)."""
    names = ", ".join(name for name, _ in COLUMNS)
    picked = ", ".join(name for name, _ in COLUMNS[:-1])
    arrays = ", ".join(f"%b::{kind}[]" for _, kind in (("session_id", "text"), *COLUMNS))
    return sql.SQL(
        f"INSERT INTO {{s}}.messages (session_id, {names})"
        f" SELECT session_id, {picked}, tsv::tsvector FROM unnest({arrays}) WITH ORDINALITY"
        f" AS r(session_id, {names}, ord) ORDER BY r.ord"
    ).format(s=schema)


def column_arrays(rows: Sequence[tuple[Any, ...]], skip: int, encoding: str, timed: list[bool]
                  ) -> list[BinaryArray]:  # fmt: skip
    """Binary column arrays of ``message_values`` rows (the first ``skip`` columns left
    out), then the rows' ``tsvector`` literals; ``timed`` gets each row's time flag
    (``search_lexemes.documents_of_rows``).

    Built here rather than by psycopg's list dumpers, which pick and call a dumper for
    every element (~3 us a message); here a column of NULLs is one multiplication and a
    text element one ``encode`` and one length (``memoryport.storage.postgres_wire``)."""
    columns = list(zip(*rows, strict=True))[skip:]
    arrays: list[BinaryArray] = [
        float8_array(c) if i == TIMESTAMP - skip else text_array(c, encoding)
        for i, c in enumerate(columns)
    ]
    literals, flags = documents_of_rows(rows)
    timed.extend(flags)
    arrays.append(text_array(literals, encoding))
    return arrays


def event_arrays(rows: Sequence[tuple[Any, ...]], timed: Sequence[bool]) -> list[list[Any]]:
    """The five event arrays (1-based position, start, end, precision, words) of the
    positional events statement of :mod:`memoryport.storage.sessions.postgres.bulk` for
    ``rows`` (rows not ``timed`` hold no expression), ``[]`` when they have none."""
    events = [e for pos, (r, t) in enumerate(zip(rows, timed, strict=True), 1) if t
              for e in event_rows(pos, r[2], r[3])]  # fmt: skip
    return [list(c) for c in zip(*events, strict=True)]
