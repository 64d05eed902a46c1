"""``§``-delimited Markdown entry files (``MEMORY.md``, ``USER.md``): parse, render, lock, write.

One :class:`MarkdownFile` object owns one file. It knows the on-disk format and how to change
the file safely; it knows nothing about targets, prompts, tools or content scanning.

Format: entries are separated by :data:`ENTRY_DELIMITER` (``"\\n§\\n"``, a line holding only
``§``). Entries may span several lines, and a ``§`` inside an entry does not split it.

Safety properties of :meth:`MarkdownFile.mutate`:

- an exclusive ``filelock`` on ``<file>.lock`` is held around reload, drift check, mutation
  and write, so concurrent writers (threads or processes) never lose each other's entries;
- the new content is written to a temporary file in the same directory, flushed and fsynced,
  moved over the old file with ``os.replace`` and the directory is fsynced, so a reader (which
  takes no lock) or a crash sees either the old complete file or the new complete file;
- before any mutation the file is checked for *drift* (content another program wrote that
  would not survive a parse/render round trip, or a single entry larger than the whole
  budget); a drifted file is copied to ``<file>.bak.<timestamp>`` and the mutation refused;
- with a :class:`~memoryport.storage.history.HistoryLog`, every write is first logged (and
  fdatasynced) as a revision, then the file is replaced; see that module for crash safety.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import filelock

from memoryport._fs import ensure_private_dir
from memoryport.errors import DriftError, MemoryStoreError
from memoryport.storage.history import HistoryLog, Provenance

__all__ = [
    "ENTRY_DELIMITER",
    "FileState",
    "MarkdownFile",
    "RevisionNote",
    "drift_reason",
    "entry_problem",
    "parse_entries",
    "render_entries",
]

ENTRY_DELIMITER = "\n§\n"
"""The separator between entries: a line that holds only ``§``."""

_TEMP_SUFFIX = ".tmp"
_T = TypeVar("_T")


def parse_entries(raw: str) -> list[str]:
    """Split file text into entries: split on the delimiter, strip, drop empties, dedupe.

    Deduplication keeps the first occurrence and the original order. A missing or empty
    file parses to ``[]``.
    """
    return list(dict.fromkeys(filter(None, map(str.strip, raw.split(ENTRY_DELIMITER)))))


def render_entries(entries: Sequence[str]) -> str:
    """Join entries with the delimiter: the exact text written to disk (no trailing newline)."""
    return ENTRY_DELIMITER.join(entries)


def drift_reason(raw: str, char_limit: int, entries: Sequence[str] | None = None) -> str | None:
    """Why stored text ``raw`` would lose data if rewritten from its parsed entries, or
    None if it is clean: it does not round-trip through the entry format, or one "entry"
    is larger than the whole ``char_limit`` (text appended without a separator). The file
    and PostgreSQL backends both guard writes with it. ``entries`` may pass
    ``parse_entries(raw)`` when the caller already has it."""
    if entries is None:
        entries = parse_entries(raw)
    if render_entries(entries) != raw.strip():
        return (
            "its content does not round-trip through the entry format (text outside the "
            "'§' separators, a malformed separator, or a duplicated entry)"
        )
    longest = max(map(len, entries), default=0)
    if longest > char_limit:
        return (
            f"one entry is {longest:,} chars, larger than the whole budget of "
            f"{char_limit:,} chars (text appended without a '§' separator?)"
        )
    return None


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` cannot be stored as one entry, or None when it can.

    The round trip ``parse_entries(render_entries(entries)) == entries`` holds exactly for
    lists of distinct entries for which this returns None: non-empty, already stripped, not
    containing the delimiter line and not ending in a line that holds only ``§`` (which would
    merge with the delimiter that follows it).
    """
    if not entry:
        return "the entry is empty"
    if entry != entry.strip():
        return "the entry has leading or trailing whitespace"
    if ENTRY_DELIMITER in entry:
        return "the entry contains a line holding only '§', which is the entry separator"
    if entry.endswith("\n§"):
        return "the entry ends with a line holding only '§', which is the entry separator"
    return None


@dataclass(frozen=True)
class FileState:
    """What :meth:`MarkdownFile.mutate` read under the lock: the raw text and its entries."""

    raw: str
    entries: list[str]
    drift_backup: Path | str | None = None
    """Set when the file had drifted and the mutation was allowed anyway (``allow_drift``):
    where the drifted text was saved first (a path, or a database backend's description)."""


@dataclass(frozen=True)
class RevisionNote:
    """What the history records about one mutation besides the before/after text."""

    action: str
    provenance: Provenance
    changes: tuple[dict[str, str], ...] = ()
    restored_from: int | None = None


class MarkdownFile:
    """One ``§``-delimited entry file with a character budget, a lock file and drift guard.

    Args:
        path: the file, e.g. ``<home>/memories/MEMORY.md``. Its directory is created on the
            first write; reading a missing file gives no entries.
        char_limit: the whole-file budget in characters of ``render_entries(entries)``; used
            by the drift check (an entry longer than the whole budget is drift).
        lock_timeout: seconds to wait for the lock before failing with ``MemoryStoreError``.
        history: the revision log every write is recorded in first (None: no history).
    """

    def __init__(
        self,
        path: Path,
        *,
        char_limit: int,
        lock_timeout: float = 10.0,
        drift_hint: str = "",
        history: HistoryLog | None = None,
    ) -> None:
        self.path = Path(path)
        self.history = history
        self.char_limit = char_limit
        self.lock_timeout = lock_timeout
        self.drift_hint = drift_hint
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._lock = filelock.FileLock(str(self.lock_path))
        self._swept = False

    def __repr__(self) -> str:
        return f"MarkdownFile({str(self.path)!r}, char_limit={self.char_limit})"

    # ------------------------------------------------------------------ reading
    def read_raw(self) -> str:
        """The file's text, or ``""`` when it does not exist. Takes no lock."""
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as exc:
            raise MemoryStoreError(f"Cannot read {self.path}: {exc}") from exc

    def read_entries(self) -> list[str]:
        """The parsed entries (``[]`` for a missing file). Takes no lock."""
        return parse_entries(self.read_raw())

    def drift_reason(self, raw: str, entries: Sequence[str] | None = None) -> str | None:
        """Why ``raw`` would lose data if rewritten by this class, or None if it is clean.

        ``entries`` may pass ``parse_entries(raw)`` when the caller already has it.
        """
        return drift_reason(raw, self.char_limit, entries)

    # ------------------------------------------------------------------ writing
    def mutate(
        self,
        change: Callable[[FileState], tuple[list[str] | None, _T]],
        *,
        allow_drift: bool = False,
        describe: Callable[[_T], RevisionNote] | None = None,
    ) -> _T:
        """Run ``change`` under the lock on freshly re-read entries and persist its result.

        ``change(state)`` returns ``(new_entries, value)``; ``new_entries`` of None means
        "nothing to write". ``value`` is returned. An exception raised by ``change`` aborts
        the mutation with nothing written. When the file on disk has drifted, a backup is
        written (one per drifted content: a retry reuses it) and ``DriftError`` is raised,
        unless ``allow_drift`` (used for removals, which must always work): then ``change``
        runs on the parsed entries with ``state.drift_backup`` set. ``MemoryStoreError``
        when the lock cannot be taken or the write fails (the file is then unchanged).
        With a history log, ``describe(value)`` says what to record; the revision is logged
        before the file is replaced (and cut back if the replace fails).
        """
        with self._locked():
            self._sweep_temp_files()
            raw = self.read_raw()
            entries = parse_entries(raw)
            reason = self.drift_reason(raw, entries)
            backup: Path | None = None
            if reason is not None:
                if not allow_drift:
                    raise self._drift_error(raw, reason)
                backup = self._backup_once(raw)
            state = FileState(raw=raw, entries=list(entries), drift_backup=backup)
            new_entries, value = change(state)
            if new_entries is not None:
                # Entries of a drift-free file are valid already; check only the new ones.
                good = frozenset(entries) if reason is None else frozenset()
                data = self._render(new_entries, known_good=good)
                note = describe(value) if describe else RevisionNote("write", Provenance())
                self._record_and_write(raw, data, note)
            return value

    def write_entries(self, entries: Sequence[str]) -> None:
        """Atomically replace the file with ``entries`` (callers should hold the lock).

        Temp file in the same directory, flush, fsync, ``os.replace``, fsync of the directory.
        A symlinked file keeps its link: the link's target is replaced. Raises
        ``MemoryStoreError`` (the old file intact) when any step fails.
        """
        self._store(self._render(entries, known_good=frozenset()))

    def _record_and_write(self, raw: str, data: bytes, note: RevisionNote) -> None:
        """Log the revision (fdatasynced) first, then replace the file; undo the log line
        if the replace fails, so a refused write leaves no trace."""
        if self.history is None:
            self._store(data)
            return
        _, size = self.history.append(
            raw,
            data.decode("utf-8"),
            action=note.action,
            provenance=note.provenance,
            changes=note.changes,
            restored_from=note.restored_from,
        )
        try:
            self._store(data)
        except MemoryStoreError:
            self.history.undo_append(size)
            raise

    def _render(self, entries: Sequence[str], *, known_good: frozenset[str]) -> bytes:
        for entry in entries:
            if entry in known_good:
                continue
            problem = entry_problem(entry)
            if problem is not None:
                raise MemoryStoreError(f"Refusing to write {self.path.name}: {problem}.")
        try:
            return render_entries(entries).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryStoreError(
                f"Refusing to write {self.path.name}: an entry is not valid UTF-8 text ({exc})."
            ) from exc

    def _store(self, data: bytes) -> None:
        target = self.path.resolve() if self.path.is_symlink() else self.path
        try:
            ensure_private_dir(target.parent)
            _atomic_write(target, data)
        except OSError as exc:
            raise MemoryStoreError(
                f"Failed to write memory file {target}: {exc}. The previous file is unchanged."
            ) from exc

    # ------------------------------------------------------------------ internals
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            ensure_private_dir(self.path.parent)
            self._lock.acquire(timeout=self.lock_timeout, poll_interval=0.001)
        except filelock.Timeout as exc:
            raise MemoryStoreError(
                f"Could not lock {self.lock_path} within {self.lock_timeout:g}s: another "
                "writer holds it. Nothing was written; retry shortly."
            ) from exc
        except OSError as exc:
            raise MemoryStoreError(
                f"Cannot take the write lock {self.lock_path}: {exc}. Nothing was written; "
                "check that the directory exists and is writable."
            ) from exc
        try:
            yield
        finally:
            self._lock.release()

    def _sweep_temp_files(self) -> None:
        """Remove temp files a killed writer left behind (safe: we hold the lock)."""
        if self._swept:
            return
        self._swept = True
        prefix = f".{self.path.name}."
        with contextlib.suppress(OSError):
            for leftover in self.path.parent.iterdir():
                if leftover.name.startswith(prefix) and leftover.name.endswith(_TEMP_SUFFIX):
                    with contextlib.suppress(OSError):
                        leftover.unlink()

    def _drift_error(self, raw: str, reason: str) -> DriftError:
        backup: str
        try:
            backup = str(self._backup_once(raw))
            kept = f"A copy of the file is saved at {backup}."
        except MemoryStoreError as exc:
            backup = f"(BACKUP FAILED: {exc.__cause__}; the file is unchanged on disk)"
            kept = f"The backup copy could not be written ({exc.__cause__}); the file is unchanged."
        remediation = self.drift_hint or (
            f"Open {self.path} in an editor, split the text into entries of at most "
            f"{self.char_limit:,} chars each and remove duplicates; or restore the backup. "
            "Removing an entry always works."
        )
        message = (
            f"Refusing to write {self.path.name}: the file on disk was changed by another "
            f"program and {reason}. Writing now would lose that text. {kept}"
        )
        return DriftError(message, drift_backup=backup, remediation=remediation)

    def _backup_once(self, raw: str) -> Path:
        """The backup holding exactly ``raw``: an existing one, else a new one.

        One drift event (one drifted content) gets one backup however often writes are
        retried. Raises ``MemoryStoreError`` when no backup can be written.
        """
        data = raw.encode("utf-8")
        prefix = self.path.name + ".bak."
        try:
            for candidate in sorted(self.path.parent.iterdir()):
                if candidate.name.startswith(prefix) and _same_bytes(candidate, data):
                    return candidate
            return self._write_backup(data)
        except OSError as exc:
            raise MemoryStoreError(
                f"Cannot back up {self.path} before changing it: {exc}. Nothing was written."
            ) from exc

    def _write_backup(self, data: bytes) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%S") + f"{time.time_ns() % 1_000_000_000:09d}"
        for attempt in range(1000):
            suffix = f".bak.{stamp}" + (f"-{attempt}" if attempt else "")
            candidate = self.path.with_name(self.path.name + suffix)
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError:
                with contextlib.suppress(OSError):
                    candidate.unlink()
                raise
            return candidate
        raise OSError(errno.EEXIST, "no free backup name", str(self.path))


def _same_bytes(path: Path, data: bytes) -> bool:
    """True when ``path`` is a regular file holding exactly ``data``."""
    try:
        if not path.is_file() or path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def _atomic_write(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` via temp file + fsync + ``os.replace`` + directory fsync.

    The temp file is flushed with ``fdatasync`` where available: it makes the data and the
    file size durable, which is all the rename needs; timestamps are not worth a journal
    commit on every write.
    """
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=_TEMP_SUFFIX
    )
    try:
        try:
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = None
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            _sync_data(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_directory(target.parent)


def _sync_data(fd: int) -> None:
    """``fdatasync`` where the platform has it, ``fsync`` otherwise."""
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable; platforms that cannot open directories skip this."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
