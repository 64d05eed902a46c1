"""``§``-delimited Markdown entry files (``MEMORY.md``, ``USER.md``): parse, render, lock, write.

One :class:`MarkdownFile` object owns one file. It knows the on-disk format and how to change
the file safely; it knows nothing about targets, prompts, tools or content scanning.

Format: entries are separated by :data:`ENTRY_DELIMITER` (``"\\n§\\n"``, a line holding only
``§``). Entries may span several lines, and a ``§`` inside an entry does not split it.

Safety properties of :meth:`MarkdownFile.mutate`:

- an exclusive lock on ``<file>.lock`` (a thread lock, then ``flock``: the lock ``filelock``
  takes, so writers using that library exclude these and the other way round) is held
  around reload, drift check, mutation and write, so concurrent writers (threads or
  processes) never lose each other's entries;
- the new content is written to a temporary file in the same directory and moved over the
  old file with ``os.replace``, so a reader (which takes no lock) sees either the old
  complete file or the new complete file;
- before any mutation the file is checked for *drift* (content another program wrote that
  would not survive a parse/render round trip, or a single entry larger than the whole
  budget); a drifted file is copied to ``<file>.bak.<timestamp>`` and the mutation refused;
- with a :class:`~memoryport.storage.history.HistoryLog` the log is the commit point: the
  temporary file is written, the revision appended and fdatasynced (the write's one sync),
  then the file is replaced; the file is derived from the log. A crash between the two (a
  killed writer, or lost power before the unsynced file reached the disk) leaves the file
  holding the last revision's ``before`` text, or empty, and not modified since that
  revision was logged; the next open (or write) rolls it forward to the revision's
  ``after`` text, durably. Any other difference from the last revision is a hand edit (the
  next revision records it as ``external``). So a new file is first created empty
  (durably), and a file deleted by hand is a hand edit, not a lost write;
- without a history every write is durable by itself: the temporary file is fdatasynced
  before the rename and the directory fsynced after it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memoryport._fs import ensure_private_dir, fsync_directory
from memoryport.errors import DriftError, MemoryStoreError
from memoryport.storage.history import HistoryLog, Provenance, Revision
from memoryport.storage.write_lock import LockTimeout, WriteLock

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

log = logging.getLogger(__name__)


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
        self._lock = WriteLock(self.lock_path)
        self._swept = False
        if history is not None:
            self._recover()

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
            raw, external = self._settled()
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
                self._record_and_write(raw, data, note, external)
            return value

    def write_entries(self, entries: Sequence[str]) -> None:
        """Atomically replace the file with ``entries`` (callers should hold the lock).

        Temp file in the same directory, flush, fsync, ``os.replace``, fsync of the directory.
        A symlinked file keeps its link: the link's target is replaced. Raises
        ``MemoryStoreError`` (the old file intact) when any step fails.
        """
        self._store(self._render(entries, known_good=frozenset()))

    def _record_and_write(
        self, raw: str, data: bytes, note: RevisionNote, external: bool | None
    ) -> None:
        """Without a history: one durable replace. With one: write the temporary file,
        commit the revision (the one fdatasync), replace the file; a failed replace cuts
        the revision back out, so a refused write leaves no trace."""
        if self.history is None:
            self._store(data)
            return
        target = self._target()
        try:
            if not os.path.lexists(target):
                ensure_private_dir(target.parent)
                _create_durably(target)  # so that a crash leaves an empty file, not none
            tmp = _write_temp(target, data, sync=False)
        except OSError as exc:
            raise self._write_error(target, exc) from exc
        try:
            _, size = self.history.append(
                raw, data.decode("utf-8"), action=note.action, provenance=note.provenance,
                changes=note.changes, restored_from=note.restored_from, external=external,
            )  # fmt: skip
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        try:
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self.history.undo_append(size)
            raise self._write_error(target, exc) from exc

    def _target(self) -> Path:
        """The file written: a symlink's target (the link is kept)."""
        return self.path.resolve() if self.path.is_symlink() else self.path

    def _write_error(self, target: Path, exc: OSError) -> MemoryStoreError:
        return MemoryStoreError(
            f"Failed to write memory file {target}: {exc}. The previous file is unchanged."
        )

    # ------------------------------------------------------------------ crash recovery
    def _recover(self) -> None:
        """At open: roll a file a crash left stale forward to its last revision. Best
        effort (a write does it under its lock anyway); takes the lock only when needed."""
        assert self.history is not None
        try:
            last = self.history.last()
            if last is None or not self._stale(self.read_raw(), last):
                return
            with self._locked():
                self._settled()
        except MemoryStoreError as exc:
            log.warning("curated memory: could not repair %s from its history: %s",
                        self.path, exc)  # fmt: skip

    def _settled(self) -> tuple[str, bool | None]:
        """Under the lock: the file's text, rolled forward first when a crash left it
        stale; and whether it differs from the last revision (a hand edit; None without
        a history)."""
        raw = self.read_raw()
        last = self.history.last() if self.history is not None else None
        if last is None:
            return raw, None
        if self._stale(raw, last):
            self._store(last.after.encode("utf-8"))
            log.warning(
                "curated memory: %s was rolled forward to revision %d of its history (a "
                "writer stopped before replacing it)", self.path, last.rev,
            )  # fmt: skip
            return last.after, False
        return raw, raw.strip() != last.after.strip()

    def _stale(self, raw: str, last: Revision) -> bool:
        """True when ``raw`` is what a crash after logging ``last`` leaves: the text before
        it (or nothing, when the new file's data was lost), in a file not modified since
        the revision was logged (a file edited by hand since then is not stale)."""
        text = raw.strip()
        if text == last.after.strip() or (text and text != last.before.strip()):
            return False
        try:
            modified = os.stat(self.path).st_mtime_ns
        except OSError:
            return False  # deleted: a hand edit (every write creates the file first)
        return modified <= int(last.ts * 1e9)

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
        """One durable replace: temporary file, fdatasync, rename, directory fsync."""
        target = self._target()
        try:
            ensure_private_dir(target.parent)
            _atomic_write(target, data)
        except OSError as exc:
            raise self._write_error(target, exc) from exc

    # ------------------------------------------------------------------ internals
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self._lock.acquire(self.lock_timeout)
        except LockTimeout:
            raise MemoryStoreError(
                f"Could not lock {self.lock_path} within {self.lock_timeout:g}s: another "
                "writer holds it. Nothing was written; retry shortly."
            ) from None
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
    """Write ``data`` to ``target`` durably: temp file + fdatasync + ``os.replace`` +
    directory fsync."""
    tmp_name = _write_temp(target, data, sync=True)
    try:
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    fsync_directory(target.parent)


def _write_temp(target: Path, data: bytes, *, sync: bool) -> str:
    """A temporary file beside ``target`` holding ``data`` with ``target``'s mode (0600
    for a new file), flushed with ``fdatasync`` when ``sync`` (the data and size: all a
    rename needs; timestamps are not worth a journal commit); its name."""
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=_TEMP_SUFFIX
    )
    try:
        try:
            mode = os.stat(target).st_mode & 0o777
        except FileNotFoundError:
            mode = None
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None and mode != 0o600:
                os.fchmod(handle.fileno(), mode)
            if sync:
                _sync_data(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return tmp_name


def _create_durably(target: Path) -> None:
    """Create ``target`` empty (0600) and make its directory entry durable."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    fsync_directory(target.parent)


def _sync_data(fd: int) -> None:
    """``fdatasync`` where the platform has it, ``fsync`` otherwise."""
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


