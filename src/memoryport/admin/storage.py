"""Move a home's session history between storage backends (``memoryport storage copy``).

``copy_sessions(home, dsn)`` streams the SQLite session store at ``<home>/state.db`` into
the PostgreSQL store at ``dsn``: sessions go over in chunks (each one export/import
transaction on the target), every lineage tree inside one chunk so a child never
arrives before its parent, a chunk ending once it holds :data:`CHUNK_MESSAGES` messages
(so a chunk of many long sessions is not held at once). Each chunk's export goes through
a temporary file, read back line by line by the target's import: the copy holds one
parsed chunk (the target's import parses a chunk whole before writing it), never its
export text besides. Ids, timestamps, counters, metadata and hidden sources are kept. A
chunk is all or nothing, so an interrupted copy can simply be run again: with
``on_conflict="skip"`` (the default) sessions already copied are skipped.

``memoryport storage copy`` also moves curated memory and the audit log
(:mod:`.storage_curated`) and the fact store and stored turns (:mod:`.storage_facts`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memoryport.errors import StoreError
from memoryport.storage.sessions.records import SessionRecord
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

__all__ = ["CHUNK_MESSAGES", "CHUNK_SESSIONS", "CopyReport", "copy_sessions", "describe_target"]

CHUNK_SESSIONS = 200
"""Sessions per chunk (a lineage tree is never split, so a chunk may hold more)."""
CHUNK_MESSAGES = 5_000
"""Messages after which a chunk ends (whole lineage trees: a chunk may hold more)."""

CopyProgress = Callable[[int, int], None]
"""``progress(messages copied, messages in total)``."""


@dataclass(frozen=True)
class CopyReport:
    """What a copy did: sessions and messages written, sessions skipped, the target."""

    sessions: int
    messages: int
    skipped: int
    target: str


def describe_target(dsn: str) -> str:
    """``dsn`` as messages show it: host and database, never the password."""
    from memoryport.storage.sessions.postgres.connect import describe_dsn

    return describe_dsn(dsn)


def _chunks(source: SQLiteSessionStore, size: int,
            messages: int = CHUNK_MESSAGES) -> Iterator[list[SessionRecord]]:
    """Every session, grouped by lineage tree (oldest tree first), in chunks of ~``size``
    sessions or ~``messages`` messages, whichever comes first."""
    sessions: list[SessionRecord] = []
    while page := source.list_sessions(limit=1000, offset=len(sessions)):
        sessions.extend(s.session for s in page)
    roots = source.lineage_roots([s.id for s in sessions])
    trees: dict[str, list[SessionRecord]] = {}
    for session in sorted(sessions, key=lambda s: (s.started_at, s.id)):
        trees.setdefault(roots.get(session.id, session.id), []).append(session)
    chunk: list[SessionRecord] = []
    held = 0
    for tree in trees.values():
        chunk.extend(tree)
        held += sum(s.message_count for s in tree)
        if len(chunk) >= size or held >= messages:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def copy_sessions(
    home: Path,
    dsn: str,
    *,
    on_conflict: Literal["skip", "replace", "error"] = "skip",
    progress: CopyProgress | None = None,
    chunk_sessions: int = CHUNK_SESSIONS,
) -> CopyReport:
    """Copy ``<home>/state.db`` into the PostgreSQL store at ``dsn`` (see the module).

    Raises ``StoreError`` when there is no SQLite store or the server cannot be used,
    ``ConfigError`` when the PostgreSQL extra is not installed.
    """
    path = home / "state.db"
    if not path.is_file():
        raise StoreError(f"no SQLite session store at {path}: there is nothing to copy")
    from memoryport.storage.sessions.postgres import PostgresSessionStore
    from memoryport.storage.sessions.postgres.connect import describe_dsn

    source = SQLiteSessionStore(path, hidden_sources=())
    try:
        target = PostgresSessionStore(dsn, hidden_sources=())
    except BaseException:
        source.close()
        raise
    copied = messages = skipped = 0
    try:
        chunks = list(_chunks(source, max(1, chunk_sessions)))
        total = sum(s.message_count for chunk in chunks for s in chunk)
        if progress is not None:
            progress(0, total)
        done = 0
        for chunk in chunks:
            with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as buf:
                source.export_jsonl(buf, session_ids=[s.id for s in chunk])
                buf.seek(0)
                report = target.import_jsonl(buf, on_conflict=on_conflict)
            copied += report.sessions_imported
            skipped += report.sessions_skipped
            messages += report.messages_imported
            done += sum(s.message_count for s in chunk)
            if progress is not None:
                progress(done, total)
    finally:
        source.close()
        target.close()
    return CopyReport(copied, messages, skipped, describe_dsn(dsn))
