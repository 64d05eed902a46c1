"""How memoryport's PostgreSQL writes go on the wire (see docs/postgres.md, ingest).

* Columns of a batch go as one-dimensional arrays in PostgreSQL's binary format, built
  here (:func:`text_array`, :func:`float8_array`): psycopg's list dumpers pick and call a
  dumper for every element (~3 us a message for the session store's nine columns), these
  cost ~0.8 us; each array carries its type's oid (:class:`_ArrayDumper`), so prepared
  statements see ``text[]`` and ``float8[]``.
* Statement texts are rendered once per schema (:func:`rendered`).
* A write is one pipelined ``BEGIN`` ... ``COMMIT`` (:func:`pipelined`): one round trip;
  on an autocommit connection the session store's appends and syncs send neither
  (:func:`pipelined_implicit`: the statements up to the pipeline's Sync are one
  transaction).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from struct import Struct
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format, TransactionStatus

__all__ = [
    "BinaryArray",
    "float8_array",
    "pipelined",
    "pipelined_implicit",
    "rendered",
    "text_array",
]

Cursor = psycopg.Cursor[Any]
T = TypeVar("T")


class BinaryArray(bytes):
    """A one-dimensional array already in PostgreSQL's binary format (``array_send``'s):
    psycopg sends it as it is, with the array type's oid (:class:`_ArrayDumper`)."""

    oid: ClassVar[int] = 0


class _TextArray(BinaryArray):
    oid = 1009  # text[]


class _Float8Array(BinaryArray):
    oid = 1022  # float8[]


class _ArrayDumper(Dumper):
    """Dumps a :class:`BinaryArray` unchanged (the bytes are the wire format)."""

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


def text_array(values: Sequence[str | None], encoding: str) -> _TextArray:
    """``values`` as a binary ``text[]`` (``None``: NULL), encoded for the connection."""
    count = len(values)
    if values.count(None) == count:  # most optional columns
        return _TextArray(_HEAD(1, 1, 25, count, 1) + _NULL * count)
    items = [_NULL if v is None else _SIZE(len(b := v.encode(encoding))) + b for v in values]
    return _TextArray(_HEAD(1, None in values, 25, count, 1) + b"".join(items))


def float8_array(values: Sequence[float]) -> _Float8Array:
    """``values`` as a binary ``float8[]``."""
    items = b"".join([_FLOAT8(8, float(v)) for v in values])
    return _Float8Array(_HEAD(1, 0, 701, len(values), 1) + items)


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


_OPEN = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


def _roll_back_open(conn: psycopg.Connection[Any]) -> None:
    """Roll back the transaction a failed pipeline left open (a broken connection: the
    pool drops it)."""
    if conn.info.transaction_status in _OPEN:
        with contextlib.suppress(psycopg.Error):
            conn.rollback()


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
            _roll_back_open(conn)
            raise
        return finish()


def pipelined_implicit(conn: psycopg.Connection[Any], fn: Callable[[Cursor], Callable[[], T]]) -> T:
    """:func:`pipelined` without ``BEGIN`` and ``COMMIT``, for an autocommit connection:
    the statements ``fn`` queues run in the implicit transaction that the server keeps
    open until the pipeline's Sync and commits there (PostgreSQL's extended protocol
    commits at Sync, not after each Execute), so the write stays all or nothing with
    two statements fewer to send, parse and answer.

    A failed statement makes the server skip the rest and roll the whole block back at
    the Sync. An exception in ``fn`` after some statements were sent would let psycopg's
    Sync commit them, so ``ROLLBACK`` is queued first: inside an implicit transaction it
    aborts every statement since the last Sync (with a warning that no explicit
    transaction is open)."""
    if not conn.autocommit:
        return pipelined(conn, fn)
    with conn.cursor() as cur:
        try:
            with conn.pipeline():
                try:
                    finish = fn(cur)
                except BaseException:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute(b"ROLLBACK")
                    raise
        except BaseException:
            _roll_back_open(conn)
            raise
        return finish()
