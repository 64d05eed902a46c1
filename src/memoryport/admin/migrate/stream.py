"""Streaming sessions into a session store in bounded memory, through its bulk import.

A whole export or a large Hermes ``state.db`` never fits in memory at once, and
``SessionStore.import_jsonl`` reads everything it is given before writing. So sessions
are fed to it in chunks of about :data:`CHUNK_MESSAGES` messages (whole sessions only):
each chunk is a small version-2 export (header, each session line, its message lines),
checked and written in one transaction by the store's own import. Memory use is one
chunk (plus the largest single session), whatever the size of the source; a session's
message lines past :data:`SPILL_LINES` wait in a temporary file (:class:`Lines`), so a
huge session is held once, parsed by the store's import, not also as its text.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from memoryport.admin.sessions import OnConflict, Progress, SessionStore
from memoryport.errors import ToolArgumentError
from memoryport.storage.sessions.portable import EXPORT_FORMAT, EXPORT_VERSION, header_line

__all__ = [
    "CHUNK_MESSAGES",
    "SPILL_LINES",
    "Group",
    "Lines",
    "Totals",
    "dump",
    "import_groups",
    "read_groups",
]

CHUNK_MESSAGES = 5_000
"""Messages per import transaction (whole sessions: a chunk may hold more)."""
SPILL_LINES = 1_000
"""Message lines of one session kept in memory; the rest wait in a temporary file."""


class Lines:
    """One session's message lines, in order: the first :data:`SPILL_LINES` in memory, the
    rest in an unlinked temporary file (private to the process), read back as they are
    iterated. ``close`` drops the file."""

    def __init__(self, lines: Iterable[str] = ()) -> None:
        self._held: list[str] = []
        self._file: Any = None
        self._count = 0
        for line in lines:
            self.append(line)

    def append(self, line: str) -> None:
        """Add one line (without its newline)."""
        self._count += 1
        if self._file is None and len(self._held) < SPILL_LINES:
            self._held.append(line)
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by close)
        self._file.write(line + "\n")

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        yield from self._held
        if self._file is not None:
            self._file.flush()
            self._file.seek(0)
            for line in self._file:
                yield line[:-1] if line.endswith("\n") else line

    def close(self) -> None:
        """Drop the temporary file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._held = []


Group = tuple[str, Lines]
"""One session as export lines: its ``{"session": ...}`` line and its message lines."""


def dump(kind: str, record: dict[str, Any]) -> str:
    """One export line, ``{"session": {...}}`` or ``{"message": {...}}``, as the store
    writes it."""
    return json.dumps({kind: record}, ensure_ascii=False, sort_keys=True)


@dataclass
class Totals:
    """Sessions and messages written (or skipped) by a streamed import."""

    sessions_imported: int = 0
    sessions_skipped: int = 0
    messages_imported: int = 0


class _Chunks:
    def __init__(
        self, store: SessionStore, on_conflict: OnConflict, total: int, progress: Progress | None
    ) -> None:
        self.store, self.on_conflict = store, on_conflict
        self.total, self.progress = total, progress
        self.groups: list[Group] = []
        self.pending = 0
        self.totals = Totals()

    def add(self, group: Group, size: int) -> None:
        self.groups.append(group)
        self.pending += len(group[1])
        if self.pending >= size:
            self.flush()

    def _lines(self) -> Iterator[str]:
        yield header_line(len(self.groups), self.pending)
        for session_line, messages in self.groups:
            yield session_line
            yield from messages

    def flush(self) -> None:
        if not self.groups:
            return
        try:
            result = self.store.import_jsonl(self._lines(), on_conflict=self.on_conflict)
        finally:
            for _, messages in self.groups:
                messages.close()
        self.totals.sessions_imported += result.sessions_imported
        self.totals.sessions_skipped += result.sessions_skipped
        self.totals.messages_imported += result.messages_imported
        self.groups, self.pending = [], 0
        if self.progress is not None:
            self.progress("importing", self.totals.messages_imported, self.total)


def import_groups(
    store: SessionStore,
    groups: Iterable[Group],
    *,
    on_conflict: OnConflict = "skip",
    total_messages: int = 0,
    progress: Progress | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
) -> Totals:
    """Import ``groups`` in chunks (one transaction each); ``progress`` receives
    ``("importing", messages written, total_messages)`` after each chunk.

    A bad line raises ``ToolArgumentError`` (its chunk is not written; earlier chunks
    are, and importing again skips them).
    """
    chunks = _Chunks(store, on_conflict, total_messages, progress)
    for group in groups:
        chunks.add(group, chunk_messages)
    chunks.flush()
    return chunks.totals


def read_groups(lines: Iterable[str]) -> tuple[dict[str, Any], Iterator[Group]]:
    """The header of a version-2 sessions export and its sessions as groups, read lazily.

    ``ToolArgumentError`` when the first line is not a version-2 header; the groups
    check the header's counts once they are exhausted.
    """
    iterator = iter(lines)
    first = next(iterator, "")
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT or header.get(
        "version"
    ) != EXPORT_VERSION:
        raise ToolArgumentError(
            f"line 1: not a version-{EXPORT_VERSION} memoryport sessions export header"
        )
    return header, _groups(iterator, header)


def _groups(lines: Iterator[str], header: dict[str, Any]) -> Iterator[Group]:
    current: Group | None = None
    sessions = messages = 0
    for number, raw in enumerate(lines, start=2):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        if line.startswith('{"session":'):
            if current is not None:
                yield current
            current, sessions = (line, Lines()), sessions + 1
        elif line.startswith('{"message":') and current is not None:
            current[1].append(line)
            messages += 1
        else:
            raise ToolArgumentError(f"line {number}: expected a session or message line")
    if current is not None:
        yield current
    if (sessions, messages) != (header.get("sessions"), header.get("messages")):
        raise ToolArgumentError(
            f"the header promises {header.get('sessions')} sessions and "
            f"{header.get('messages')} messages but the file holds {sessions} and "
            f"{messages}: it is truncated or was edited"
        )
