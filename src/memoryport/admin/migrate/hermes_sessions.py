"""The session half of ``memoryport migrate hermes``: every session and message of a
Hermes ``state.db`` into the session store, fast and in bounded memory.

* Sessions already stored with as many messages as Hermes has are found first (one read
  each) and never read from Hermes again, so a re-run costs little.
* The rest are read (:class:`.hermes_db.HermesDB`, row tuples straight to
  ``MessageInput``) in batches of whole sessions of about :data:`BATCH_MESSAGES`
  messages, each written by ``SessionStore.sync_sessions`` in one transaction.
* Reading runs in a thread one batch ahead of the writer (:func:`prefetch`): SQLite
  releases the GIL while it inserts and indexes, so the next batch is read and converted
  meanwhile. Memory stays at about three batches (one queued, one being read, one being
  written) plus the largest single session, whatever the size of the database.

A failure stops both sides; every committed batch is whole (sessions with all their
messages, indexed), so running the import again finishes the job.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from dataclasses import astuple, fields
from typing import TypeVar

from memoryport.admin.migrate.hermes_db import HermesDB, session_record
from memoryport.admin.sessions import Progress, SessionStore
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.records import MessageInput, SessionRecord, SyncReport

__all__ = ["BATCH_MESSAGES", "import_sessions", "prefetch"]

BATCH_MESSAGES = 10_000
"""Messages per write transaction (whole sessions: a larger session is a batch alone)."""

T = TypeVar("T")
Entry = tuple[SessionRecord, list[MessageInput]]
_RECORD_FIELDS = frozenset(f.name for f in fields(SessionRecord))


def prefetch(items: Iterable[T], depth: int = 1) -> Generator[T, None, None]:
    """``items``, produced by a thread that keeps up to ``depth`` of them ready.

    An exception in the producer is raised here; closing the iterator early (or an
    exception in the consumer) stops the producer before this returns.
    """
    ready: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(kind: str, value: object) -> bool:
        while not stop.is_set():
            try:
                ready.put((kind, value), timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put("item", item):
                    return
            put("end", None)
        except BaseException as exc:  # handed to the consumer, raised there
            put("error", exc)

    thread = threading.Thread(target=produce, name="hermes-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = ready.get()
            if kind == "end":
                return
            if kind == "error":
                assert isinstance(value, BaseException)
                raise value
            yield value  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()


def _stored_count(store: SessionStore, session_id: str) -> int | None:
    try:
        return store.get_session(session_id).message_count
    except SessionNotFound:
        return None


def _record(
    db: HermesDB, session_id: str, parent: str | None, messages: list[MessageInput]
) -> SessionRecord:
    """One Hermes session as a ``SessionRecord`` (:func:`.hermes_db.session_record`);
    its tool call count is Hermes' own, or counted from the messages when the table has
    no such column."""
    newest = max((m.timestamp or 0.0 for m in messages), default=0.0)
    record = session_record(db.session_row(session_id), parent, len(messages), newest)
    if "tool_call_count" not in db.session_columns:
        record["tool_call_count"] = sum(len(m.tool_calls or []) for m in messages)
    return SessionRecord(**{k: v for k, v in record.items() if k in _RECORD_FIELDS})


def _batches(db: HermesDB, todo: list[tuple[str, str | None]]) -> Iterator[list[Entry]]:
    batch: list[Entry] = []
    pending = 0
    for session_id, parent in todo:
        messages = db.message_inputs(session_id)
        batch.append((_record(db, session_id, parent, messages), messages))
        pending += len(messages)
        if pending >= BATCH_MESSAGES:
            yield batch
            batch, pending = [], 0
    if batch:
        yield batch


def import_sessions(
    db: HermesDB, store: SessionStore, order: list[tuple[str, str | None]],
    sizes: dict[str, int], progress: Progress | None = None,
) -> SyncReport:  # fmt: skip
    """Every session of ``order`` (parents first; ``sizes`` = Hermes' message count per
    session) into ``store``; ``progress`` gets ``("importing", messages done, total)``
    after each batch (sessions found unchanged count as done)."""
    total = sum(sizes.values())
    todo: list[tuple[str, str | None]] = []
    unchanged = done = 0
    for session_id, parent in order:
        stored = _stored_count(store, session_id)
        if stored is not None and stored >= sizes.get(session_id, 0):
            unchanged += 1
            done += sizes.get(session_id, 0)
        else:
            todo.append((session_id, parent))
    counts = [0, 0, unchanged, 0, 0]
    if progress is not None:
        progress("importing", done, total)
    with closing(prefetch(_batches(db, todo))) as batches:
        for batch in batches:
            for i, value in enumerate(astuple(store.sync_sessions(batch))):
                counts[i] += value
            done += sum(len(messages) for _, messages in batch)
            if progress is not None:
                progress("importing", done, total)
    return SyncReport(*counts)
