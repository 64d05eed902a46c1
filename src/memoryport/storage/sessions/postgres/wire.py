"""What the PostgreSQL session store's writes send, and how (see docs/postgres.md, ingest).

* Message columns go as one-dimensional arrays in PostgreSQL's binary format, built here
  (:func:`columns`): psycopg's list dumpers pick and call a dumper for every element
  (~3 us a message), these cost ~0.8 us; the arrays carry their type's oid
  (:class:`_ArrayDumper`), so the prepared statements see ``text[]`` and ``float8[]``.
* Statement texts are rendered once per schema (:func:`rendered`).
* ``create_session``'s row is built without ``asdict`` (:func:`session_row`).
* A write is one pipelined ``BEGIN`` ... ``COMMIT`` (:func:`pipelined`): one round trip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import fields
from struct import Struct
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format, TransactionStatus

from memoryport.storage.search_lexemes import document_of_row
from memoryport.storage.sessions.postgres.dialect import encode_text, session_values
from memoryport.storage.sessions.records import SessionRecord, valid_values
from memoryport.storage.sessions.rows import SESSION_COLUMNS

__all__ = ["columns", "pipelined", "rendered", "session_insert", "session_row"]

Cursor = psycopg.Cursor[Any]
T = TypeVar("T")


class _BinaryArray(bytes):
    """A one-dimensional array already in PostgreSQL's binary format (``array_send``'s):
    psycopg sends it as it is, with the array type's oid (:class:`_ArrayDumper`)."""

    oid: ClassVar[int] = 0


class _TextArray(_BinaryArray):
    oid = 1009  # text[]


class _Float8Array(_BinaryArray):
    oid = 1022  # float8[]


class _ArrayDumper(Dumper):
    """Dumps a :class:`_BinaryArray` unchanged (the bytes are the wire format)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer | None:
        """The array's bytes."""
        return bytes(obj)


class _TextArrayDumper(_ArrayDumper):
    oid = _TextArray.oid


class _Float8ArrayDumper(_ArrayDumper):
    oid = _Float8Array.oid


psycopg.adapters.register_dumper(_TextArray, _TextArrayDumper)  # private types only
psycopg.adapters.register_dumper(_Float8Array, _Float8ArrayDumper)

_HEAD = Struct(">iiiii").pack  # dimensions, has nulls, element oid, length, lower bound
_SIZE = Struct(">i").pack
_FLOAT8 = Struct(">id").pack  # size 8, value
_NULL = _SIZE(-1)


def _text_array(values: Sequence[str | None], encoding: str) -> _TextArray:
    """``values`` as a binary ``text[]`` (``None``: NULL), encoded for the connection."""
    count = len(values)
    if values.count(None) == count:  # most optional columns
        return _TextArray(_HEAD(1, 1, 25, count, 1) + _NULL * count)
    items = [_NULL if v is None else _SIZE(len(b := v.encode(encoding))) + b for v in values]
    return _TextArray(_HEAD(1, None in values, 25, count, 1) + b"".join(items))


def _float8_array(values: Sequence[float]) -> _Float8Array:
    """``values`` as a binary ``float8[]``."""
    items = b"".join([_FLOAT8(8, float(v)) for v in values])
    return _Float8Array(_HEAD(1, 0, 701, len(values), 1) + items)


def columns(rows: Sequence[tuple[Any, ...]], skip: int, encoding: str) -> list[_BinaryArray]:
    """Binary column arrays of ``message_values`` rows (the first ``skip`` columns left
    out), then the rows' ``tsvector`` literals.

    Built here rather than by psycopg's list dumpers, which pick and call a dumper for
    every element (~3 us a message); here a column of NULLs is one multiplication and a
    text element one ``encode`` and one length."""
    columns = list(zip(*rows, strict=True))[skip:]
    arrays: list[_BinaryArray] = [
        _float8_array(c) if i == _TIMESTAMP - skip else _text_array(c, encoding)
        for i, c in enumerate(columns)
    ]
    arrays.append(_text_array([document_of_row(r) for r in rows], encoding))
    return arrays


_TIMESTAMP = 3
"""The ``timestamp`` column's index in a ``message_values`` row (the others are text)."""


_RENDERED: dict[tuple[str, Callable[[sql.Identifier], sql.Composed]], bytes] = {}


def rendered(
    cur: Cursor, schema: sql.Identifier, statement: Callable[[sql.Identifier], sql.Composed]
) -> bytes:
    """``statement(schema)`` as bytes, rendered once per schema (building and quoting the
    composed statement cost ~50 us a call)."""
    key = (schema.as_string(cur), statement)
    text = _RENDERED.get(key)
    if text is None:
        text = _RENDERED[key] = statement(schema).as_bytes(cur)
    return text


_SESSION_FIELDS = tuple(f.name for f in fields(SessionRecord))


def session_row(session: SessionRecord) -> list[Any]:
    """``session_values(session)`` for a new session, without ``asdict``'s deep copy
    (a quarter of ``create_session``'s client time); a session with metadata goes the
    general way (``asdict`` also turns dataclasses inside it into dicts)."""
    if session.metadata:
        return session_values(session)
    values = [getattr(session, name) for name in _SESSION_FIELDS]
    values[4] = encode_text(values[4])  # title
    values[-1] = None  # empty metadata is stored as NULL (dump_json)
    return valid_values(values)


def _session_insert(schema: sql.Identifier) -> sql.Composed:
    """``create_session``'s insert (parameters: ``session_row``), returning the row."""
    return sql.SQL(
        f"INSERT INTO {{s}}.sessions ({', '.join(_NAMES)})"
        f" VALUES ({', '.join(['%s'] * len(_NAMES))})"
        f" ON CONFLICT (id) DO NOTHING RETURNING {', '.join(_NAMES)}"
    ).format(s=schema)


def session_insert(cur: Cursor, schema: sql.Identifier) -> bytes:
    """:func:`_session_insert` rendered once per schema."""
    return rendered(cur, schema, _session_insert)


_NAMES = SESSION_COLUMNS.replace("s.", "").split(", ")
_OPEN = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


def pipelined(conn: psycopg.Connection[Any], fn: Callable[[Cursor], Callable[[], T]]) -> T:
    """``fn``'s statements between ``BEGIN`` and ``COMMIT`` in one pipeline: one round
    trip (``conn.transaction()`` in a pipeline syncs after ``BEGIN``, before and after
    ``COMMIT``: four round trips, each a wake-up of both sides). A failed statement makes
    the server skip the rest, ``COMMIT`` included, and an exception in ``fn`` leaves the
    ``COMMIT`` unsent: either way the transaction is rolled back here."""
    with conn.cursor() as cur:
        try:
            with conn.pipeline():
                conn.execute(b"BEGIN")
                finish = fn(cur)
                conn.execute(b"COMMIT")
        except BaseException:
            if conn.info.transaction_status in _OPEN:
                with contextlib.suppress(psycopg.Error):  # a broken one: the pool drops it
                    conn.rollback()
            raise
        return finish()
