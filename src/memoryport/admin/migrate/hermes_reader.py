"""The reading side of the Hermes session import: batches of plain session and message
fields from a Hermes ``state.db`` (:func:`plain_batches`), read inline or in a separate
Python process that stays one batch ahead of the writer (:func:`read_in_process`: a plain
``python -c`` child, so it never re-runs the caller's main module the way
``multiprocessing`` would).

Why a process: reading and converting a row, and deriving what the store computes from its
words (the event windows, the CJK flag, tool calls as JSON text: ``rows.derive``), cost
about as much as writing it, all of it Python holding the interpreter lock, and the writer
releases and retakes that lock for every row it inserts. A reader thread therefore mostly
delays the writer; a reader process runs on the other core and hands over each batch as
one pickled message of ``PreparedMessage`` fields.

Batches hold whole sessions; a session longer than a batch comes in slices of at most a
batch (:func:`plain_batches`), each with the same record (the session's totals are read
first) and the count of messages before it, so memory holds one slice of it at a time.
"""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
from collections.abc import Generator, Iterator
from contextlib import suppress
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

from memoryport.admin.migrate.hermes_db import HermesDB, MessageFields, session_record
from memoryport.errors import StoreError
from memoryport.storage.sessions.records import SessionRecord
from memoryport.storage.sessions.rows import derive

__all__ = ["PlainEntry", "Todo", "plain_batches", "read_in_process", "reader_main"]

Todo = tuple[str, "str | None", int, int]
"""A session to read: id, checked parent, messages already stored, messages in Hermes."""
PlainEntry = tuple[dict[str, Any], list[MessageFields], int]
"""One batch entry: the ``SessionRecord`` fields, message fields, and how many of the
session's messages come before them (0, or the start of a slice of a long session). The
reader process adds to each message's fields what the store derives from them
(``rows.derive``): ``PreparedMessage(*fields)``."""
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


def reader_main() -> None:
    """The reader process (started by :func:`read_in_process`): reads
    ``(path, todo, size)`` pickled on stdin, writes each batch pickled on stdout, then
    ``end`` (or ``error`` with the exception)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the importer decides when to stop
    out = sys.stdout.buffer
    path, todo, size = pickle.load(sys.stdin.buffer)
    try:
        with HermesDB(Path(path)) as db:
            for batch in plain_batches(db, todo, size):
                derived = [(record, [(*m, derive(m[1], m[6], m[3])) for m in messages],
                            before) for record, messages, before in batch]  # fmt: skip
                pickle.dump(("batch", derived), out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
        pickle.dump(("end", None), out)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            return  # the importer stopped reading (finished early, failed or was killed)
        _report(out, exc)
    except BaseException as exc:
        _report(out, exc)
    out.flush()


def _report(out: IO[bytes], exc: BaseException) -> None:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        exc = StoreError(f"reading the Hermes database failed: {type(exc).__name__}: {exc}")
    with suppress(OSError):
        pickle.dump(("error", exc), out)


def read_in_process(
    db: HermesDB, todo: list[Todo], size: int
) -> Generator[list[PlainEntry], None, None]:
    """:func:`plain_batches` of ``db`` read by a separate Python process (opening the same
    file), one batch ahead (the pipe holds about one); read inline when no process can be
    started here. An error in the reader is raised here; closing the iterator early (or
    an error in the consumer) stops the reader before this returns."""
    root = str(Path(__file__).resolve().parents[3])  # where this memoryport was imported from
    code = (f"import sys; sys.path.append({root!r}); "  # last: only if not found otherwise
            f"from {__name__} import reader_main; reader_main()")  # fmt: skip
    try:
        if not sys.executable:
            raise OSError("no Python executable to start")
        reader = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
    except OSError:  # an embedded interpreter, a sandbox without fork: read inline
        yield from plain_batches(db, todo, size)
        return
    assert reader.stdin is not None and reader.stdout is not None
    finished = False
    try:
        with suppress(BrokenPipeError), reader.stdin:  # a reader that died says so below
            pickle.dump((str(db.path), todo, size), reader.stdin)
        while True:
            try:
                kind, value = pickle.load(reader.stdout)
            except EOFError:
                raise StoreError(
                    f"the Hermes reader process ended unexpectedly (exit code "
                    f"{reader.wait()}); what was committed before stays: run the import "
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
        reader.stdout.close()
        if not finished:  # stopped early: the reader only reads, so stop it now
            reader.kill()
        reader.wait()

