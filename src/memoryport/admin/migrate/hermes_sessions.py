"""The session half of ``memoryport migrate hermes``: every session and message of a
Hermes ``state.db`` into the session store, fast and in bounded memory.

* Sessions already stored with as many messages as Hermes has are found first (one read
  each) and never read from Hermes again, so a re-run costs little; a long session
  stored in part (an import that was stopped) is read on from where it stopped.
* The rest are read (:mod:`.hermes_reader`: row tuples straight to message fields) in
  batches of about :data:`BATCH_MESSAGES` messages, each written by
  ``SessionStore.sync_sessions`` in one transaction. A session longer than a batch is
  read and written in slices of at most a batch, so memory never holds all of it.
* A large import (over :data:`INLINE_MESSAGES` messages to read) reads in a separate
  process one batch ahead of the writer; a small one reads inline. Memory stays at about
  three batches (one being read, one in the pipe, one being written), whatever the size
  of the database.

A failure stops both sides; every committed batch is whole (sessions, or slices of long
ones, with their messages, indexed), so running the import again finishes the job.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import astuple

from memoryport.admin.migrate.hermes_db import HermesDB
from memoryport.admin.migrate.hermes_reader import (
    PlainEntry,
    Todo,
    plain_batches,
    read_in_process,
)
from memoryport.admin.sessions import Progress, SessionStore
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.records import MessageInput, SessionRecord, SyncReport
from memoryport.storage.sessions.rows import PreparedMessage

__all__ = ["BATCH_MESSAGES", "INLINE_MESSAGES", "import_sessions"]

BATCH_MESSAGES = 10_000
"""Messages per write transaction (whole sessions; a longer session is sliced)."""
INLINE_MESSAGES = 20_000
"""Imports with at most this many messages to read read them inline (no reader process:
starting one costs about as much as reading this many)."""

Entry = tuple[SessionRecord, list[MessageInput]]
_STAND_IN = MessageInput("user")
"""Stands for the messages of a sliced session that earlier slices stored: never read,
``sync_sessions`` appends only what comes after the stored count."""


def _stored_count(store: SessionStore, session_id: str) -> int | None:
    try:
        return store.get_session(session_id).message_count
    except SessionNotFound:
        return None


def _entries(batch: list[PlainEntry]) -> list[Entry]:
    """Sync entries: each slice of a long session after stand-ins for those before it."""
    out = []
    for record, messages, before in batch:
        items: list[MessageInput] = [PreparedMessage(*m) for m in messages]
        out.append((SessionRecord(**record), [_STAND_IN] * before + items if before else items))
    return out


class _Counts:
    """The import's ``SyncReport``, a sliced session counted once: ``sync_sessions``
    reports each later slice as growth of the session an earlier slice wrote."""

    def __init__(self, unchanged: int, long: set[str], new: set[str]) -> None:
        self.totals = [0, 0, unchanged, 0, 0]
        self.long, self.new = long, new
        self.seen: set[str] = set()

    def add(self, batch: list[PlainEntry], report: SyncReport) -> None:
        values = list(astuple(report))
        for record, messages, _ in batch:
            session_id = record["id"]
            if session_id not in self.long:
                continue
            if session_id in self.seen:
                values[1] -= 1
                if session_id in self.new:
                    values[3] += len(messages)
                    values[4] -= len(messages)
            self.seen.add(session_id)
        for i, value in enumerate(values):
            self.totals[i] += value

    def report(self) -> SyncReport:
        return SyncReport(*self.totals)


def import_sessions(
    db: HermesDB, store: SessionStore, order: list[tuple[str, str | None]],
    sizes: dict[str, int], progress: Progress | None = None,
) -> SyncReport:  # fmt: skip
    """Every session of ``order`` (parents first; ``sizes`` = Hermes' message count per
    session) into ``store``; ``progress`` gets ``("importing", messages done, total)``
    after each batch (messages found stored count as done)."""
    size = BATCH_MESSAGES
    total = sum(sizes.values())
    todo: list[Todo] = []
    unchanged = done = 0
    for session_id, parent in order:
        stored, count = _stored_count(store, session_id), sizes.get(session_id, 0)
        if stored is not None and stored >= count:
            unchanged += 1
            done += count
            continue
        todo.append((session_id, parent, stored or 0, count))
        if count > size:  # a long session is read on after what is stored
            done += stored or 0
    long = {t[0] for t in todo if t[3] > size}
    counts = _Counts(unchanged, long, {t[0] for t in todo if t[0] in long and t[2] == 0})
    if progress is not None:
        progress("importing", done, total)
    wanted = sum(t[3] - t[2] for t in todo)
    read = plain_batches if wanted <= INLINE_MESSAGES else read_in_process
    reader = read(db, todo, size)
    with closing(reader) as batches:
        for batch in batches:
            counts.add(batch, store.sync_sessions(_entries(batch)))
            done += sum(len(messages) for _, messages, _ in batch)
            if progress is not None:
                progress("importing", done, total)
    return counts.report()
