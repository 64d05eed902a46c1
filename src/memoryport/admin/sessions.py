"""Session history for shells: open a home's store, page through it, move whole stores.

``open_store(home, user_id)`` opens the backend ``<home>/config.yaml`` selects (SQLite at
``<home>/state.db`` by default, or PostgreSQL), exactly as ``memoryport.open()`` does; a
SQLite file the user may not write opens read-only (reads work, writes raise
``StoreError``). The record types and aliases a shell needs to type its code are
re-exported here, so shells never import ``memoryport.storage``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias

from memoryport._wiring import open_session_store
from memoryport.config import Config, load_config
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.portable import Progress
from memoryport.storage.sessions.records import (
    SORT_ORDERS,
    ImportReport,
    MessageRecord,
    SearchHit,
    SearchResult,
    SessionRecord,
    SessionSummary,
    SortOrder,
)
from memoryport.storage.sessions.render import message_text, readable_snippet

__all__ = [
    "SORT_ORDERS",
    "ExportCounts",
    "ImportReport",
    "MessageRecord",
    "OnConflict",
    "Progress",
    "SearchHit",
    "SearchResult",
    "SessionRecord",
    "SessionStore",
    "SessionSummary",
    "SortOrder",
    "all_sessions",
    "export",
    "message_text",
    "open_store",
    "readable_snippet",
    "rebuild_and_verify",
    "session_exists",
]

OnConflict: TypeAlias = Literal["skip", "replace", "error"]
"""What an import does with a session id that already exists."""

PAGE_SIZE = 1_000
"""Rows per ``list_sessions`` call when ``all_sessions`` pages through a store."""


def open_store(
    home: Path, user_id: str | None = None, config: Config | None = None
) -> SessionStore:
    """The session store of ``home`` as its ``config.yaml`` configures it; the caller closes it.

    ``user_id`` scopes every read and write to that user's sessions (None: all users).
    Raises ``ConfigError`` for an invalid ``config.yaml`` or an empty PostgreSQL DSN and
    ``StoreError`` when the store cannot be opened.
    """
    settings = config if config is not None else load_config(home)
    return open_session_store(settings, home, user_id or None)


def all_sessions(store: SessionStore, **filters: Any) -> list[SessionSummary]:
    """Every session ``store.list_sessions(**filters)`` would list, read a page at a time."""
    rows: list[SessionSummary] = []
    while True:
        page = store.list_sessions(limit=PAGE_SIZE, offset=len(rows), **filters)
        rows.extend(page)
        if len(page) < PAGE_SIZE:
            return rows


def session_exists(store: SessionStore, session_id: str) -> bool:
    """True when ``session_id`` is stored (and visible to the store's user)."""
    try:
        store.get_session(session_id)
    except SessionNotFound:
        return False
    return True


@dataclass(frozen=True)
class ExportCounts:
    """What ``export`` wrote: whole sessions and their messages."""

    sessions: int
    messages: int


def export(
    store: SessionStore,
    out: IO[str],
    *,
    session_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ExportCounts:
    """Write ``store``'s sessions (or only ``session_ids``) to ``out`` as a JSONL export.

    ``progress`` receives ``("exporting", messages written, messages in the export)``.
    An export of nothing is the header line alone.
    """
    written = 0

    def count(phase: str, done: int, total: int) -> None:
        nonlocal written
        written = done
        if progress is not None:
            progress(phase, done, total)

    lines = store.export_jsonl(out, session_ids=session_ids or None, progress=count)
    return ExportCounts(sessions=lines - 1 - written, messages=written)


def rebuild_and_verify(store: SessionStore, progress: Progress | None = None) -> None:
    """Rebuild the full-text indexes from the stored messages, then verify them.

    ``progress`` sees the rebuild's phases, then ``("verifying", 0, 1)`` and
    ``("verifying", 1, 1)``. ``StoreError`` when the verification fails.
    """
    store.rebuild_index(progress=progress)
    if progress is not None:
        progress("verifying", 0, 1)
    store.check_index()
    if progress is not None:
        progress("verifying", 1, 1)
