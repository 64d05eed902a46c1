"""The reading side of the Hermes session import: batches of plain session and message
fields from a Hermes ``state.db`` (:func:`plain_batches`), read inline or in a separate
process that stays one batch ahead of the writer (:func:`read_in_process`).

Why a process: reading and converting a row costs about a third of writing it, all of it
Python holding the interpreter lock, and the writer releases and retakes that lock for
every row it inserts. A reader thread therefore mostly delays the writer; a reader
process runs on the other core and hands over each batch as one pickled message.

Batches hold whole sessions; a session longer than a batch comes in slices of at most a
batch (:func:`plain_batches`), each with the same record (the session's totals are read
first) and the count of messages before it, so memory holds one slice of it at a time.
"""

from __future__ import annotations

import multiprocessing
import pickle
import signal
from collections.abc import Generator, Iterator
from dataclasses import fields
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from memoryport.admin.migrate.hermes_db import HermesDB, MessageFields, session_record
from memoryport.errors import StoreError
from memoryport.storage.sessions.records import SessionRecord

__all__ = ["PlainEntry", "Todo", "plain_batches", "read_in_process"]

Todo = tuple[str, "str | None", int, int]
"""A session to read: id, checked parent, messages already stored, messages in Hermes."""
PlainEntry = tuple[dict[str, Any], list[MessageFields], int]
"""One batch entry: the ``SessionRecord`` fields, message fields, and how many of the
session's messages come before them (0, or the start of a slice of a long session)."""
_RECORD_FIELDS = frozenset(f.name for f in fields(SessionRecord))


def _record_of(
    db: HermesDB, session_id: str, parent: str | None, count: int, newest: float, calls: int
) -> dict[str, Any]:
    """``SessionRecord`` fields of one Hermes session (:func:`.hermes_db.session_record`)
    with the count, newest time and tool calls of all its messages; the tool call count is
    Hermes' own, or the counted one when the table has no such column."""
    record = session_record(db.session_row(session_id), parent, count, newest)
    if "tool_call_count" not in db.session_columns:
        record["tool_call_count"] = calls
    return {k: v for k, v in record.items() if k in _RECORD_FIELDS}


def _totals(parts: Iterator[list[MessageFields]] | list[list[MessageFields]]) -> tuple[
    int, float, int
]:  # fmt: skip
    count = calls = 0
    newest = 0.0
    for part in parts:
        count += len(part)
        newest = max(newest, max((m[6] for m in part), default=0.0))
        calls += sum(len(m[3] or []) for m in part)
    return count, newest, calls


def _session(db: HermesDB, todo: Todo, size: int) -> Iterator[PlainEntry]:
    """One session: whole when it fits a batch, else in slices after what is stored."""
    session_id, parent, stored, total = todo
    if total <= size:
        messages = db.message_fields(session_id)
        yield _record_of(db, session_id, parent, *_totals([messages])), messages, 0
        return
    record = _record_of(db, session_id, parent, *_totals(db.message_slices(session_id, 0, size)))
    before = stored
    for part in db.message_slices(session_id, stored, size):
        yield record, part, before
        before += len(part)


def plain_batches(
    db: HermesDB, todo: list[Todo], size: int
) -> Generator[list[PlainEntry], None, None]:
    """The sessions of ``todo`` in batches of about ``size`` messages."""
    batch: list[PlainEntry] = []
    pending = 0
    for item in todo:
        for entry in _session(db, item, size):
            batch.append(entry)
            pending += len(entry[1])
            if pending >= size:
                yield batch
                batch, pending = [], 0
    if batch:
        yield batch


def _send(out: Connection, kind: str, value: object) -> None:
    out.send_bytes(pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL))


def _reader_main(path: str, todo: list[Todo], size: int, out: Connection) -> None:
    """The reader process: send each batch, then ``end`` (or ``error``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the importer decides when to stop
    try:
        with HermesDB(Path(path)) as db:
            for batch in plain_batches(db, todo, size):
                _send(out, "batch", batch)
        _send(out, "end", None)
    except OSError:  # the importer closed its end (stopped or failed): nothing to say
        pass
    except BaseException as exc:  # handed to the importer, raised there
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            exc = StoreError(f"reading the Hermes database failed: {type(exc).__name__}: {exc}")
        try:
            _send(out, "error", exc)
        except OSError:
            pass
    finally:
        out.close()


def read_in_process(
    path: Path, todo: list[Todo], size: int
) -> Generator[list[PlainEntry], None, None]:
    """:func:`plain_batches` read by a separate process, one batch ahead (the pipe holds
    one). An error in the reader is raised here; closing the iterator early (or an error
    in the consumer) stops the reader before this returns."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    reader = context.Process(target=_reader_main, args=(str(path), todo, size, send),
                             name="hermes-reader", daemon=True)  # fmt: skip
    reader.start()
    send.close()
    finished = False
    try:
        while True:
            try:
                kind, value = pickle.loads(receive.recv_bytes())
            except EOFError:
                reader.join(timeout=5)
                raise StoreError(
                    f"the Hermes reader process ended unexpectedly (exit code "
                    f"{reader.exitcode}); what was committed before stays: run the import "
                    "again to finish it"
                ) from None
            if kind == "end":
                finished = True
                return
            if kind == "error":
                assert isinstance(value, BaseException)
                raise value
            yield value
    finally:
        receive.close()
        if not finished:  # stopped early: the reader only reads, so stop it now
            reader.terminate()
        reader.join()
