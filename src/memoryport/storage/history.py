"""Revision history of one entry file: an append-only JSON-lines log beside it.

``<dir>/.history/<file name>.jsonl`` holds one JSON object per line, one line per write:
revision number, time, action, provenance (source, session id, tool call id, user id), the
entries changed and the whole file text before and after. Nothing here knows about targets
or tools; :class:`~memoryport.storage.markdown.MarkdownFile` appends under its file lock.

The log is the commit point of a write: the revision is appended and fdatasynced (the one
sync of a write) *before* the live file is replaced, and a write is acknowledged only after
both. The live file is derived from the log: a writer killed (or a machine that lost power)
between the two leaves a file older than the last revision, and
:class:`~memoryport.storage.markdown.MarkdownFile` rolls it forward to that revision's
``after`` text on the next open or write (see its docstring for how a stale file is told
from a hand edit). A line torn by a kill mid-append has no trailing newline; readers skip
it and the next writer truncates it away. A file edited by hand between two writes is
recorded by the next writer as an ``external`` revision (before = the last recorded text,
after = the text it found), so the trail has no gaps. :func:`mark_applied` still reports a
revision whose text never reached the file (a log written by an older version, or a file
put back by hand to the text before it) as ``applied: false``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryport._fs import ensure_private_dir, fsync_directory
from memoryport.errors import MemoryStoreError

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MAX_REVISIONS",
    "HistoryLog",
    "Provenance",
    "Revision",
    "mark_applied",
]

DEFAULT_MAX_AGE_DAYS = 90
"""Every revision younger than this many days is kept."""
DEFAULT_MAX_REVISIONS = 1000
"""The last this many revisions are kept whatever their age."""

_PRUNE_EVERY = 100
_FIRST_BLOCK = 16384
_TAIL_BLOCK = 65536


@dataclass(frozen=True)
class Provenance:
    """Where a write came from.

    ``source``: ``memory_tool`` (the model), ``cli``, ``background_review``, ``migration``,
    ``import``, ``api`` (``CuratedMemory`` called directly) or any label a caller passes.
    """

    source: str = "api"
    session_id: str = ""
    tool_call_id: str = ""
    user_id: str = ""


@dataclass(frozen=True)
class Revision:
    """One recorded write of one file.

    ``action`` is ``add``/``replace``/``remove`` (one operation), ``batch``, ``edit`` (a
    whole-file save), ``restore`` (``restored_from`` names the revision) or ``external``
    (the file changed outside memoryport). ``changes`` lists ``{"action", "content",
    "previous"}`` per entry; ``before``/``after`` are the whole file texts.
    """

    rev: int
    at: str
    ts: float
    action: str
    provenance: Provenance
    before: str
    after: str
    changes: tuple[dict[str, str], ...] = ()
    restored_from: int | None = None
    applied: bool = field(default=True, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``provenance`` flattened into the top level)."""
        origin = self.provenance
        return {
            "rev": self.rev, "at": self.at, "ts": self.ts, "action": self.action,
            "before": self.before, "after": self.after,
            "changes": [dict(change) for change in self.changes],
            "restored_from": self.restored_from, "applied": self.applied,
            "source": origin.source, "session_id": origin.session_id,
            "tool_call_id": origin.tool_call_id, "user_id": origin.user_id,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Revision:
        """Read one log line's object (``KeyError``/``TypeError``/``ValueError`` if malformed)."""
        provenance = Provenance(
            source=str(data.get("source", "")),
            session_id=str(data.get("session_id", "")),
            tool_call_id=str(data.get("tool_call_id", "")),
            user_id=str(data.get("user_id", "")),
        )
        restored = data.get("restored_from")
        return cls(
            rev=int(data["rev"]),
            at=str(data["at"]),
            ts=float(data["ts"]),
            action=str(data["action"]),
            provenance=provenance,
            before=str(data["before"]),
            after=str(data["after"]),
            changes=tuple(dict(change) for change in data.get("changes", ())),
            restored_from=None if restored is None else int(restored),
        )


def mark_applied(revisions: Sequence[Revision], live: str) -> list[Revision]:
    """``revisions`` (in log order) with ``applied`` set: False for a revision whose file
    write never happened (its writer was killed after logging it).

    A revision was not applied when the next revision's writer (or, for the last one, the
    live file ``live``) still found that revision's ``before`` text.
    """
    marked: list[Revision] = []
    for index, revision in enumerate(revisions):
        found = revisions[index + 1].before if index + 1 < len(revisions) else live
        applied = revision.before == revision.after or found.strip() != revision.before.strip()
        marked.append(_with_applied(revision, applied))
    return marked


def _with_applied(revision: Revision, applied: bool) -> Revision:
    data = {**revision.__dict__, "applied": applied}
    return Revision(**data)


class HistoryLog:
    """The revision log of one file (``<dir>/.history/<name>.jsonl``).

    Args:
        path: the log file.
        max_age_days: revisions younger than this are always kept.
        max_revisions: the last this many are kept whatever their age (at least 1).

    :meth:`append` must run under the live file's lock; reads take no lock.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_age_days: float = DEFAULT_MAX_AGE_DAYS,
        max_revisions: int = DEFAULT_MAX_REVISIONS,
    ) -> None:
        if max_revisions < 1:
            raise ValueError(f"max_revisions must be at least 1, got {max_revisions}")
        if max_age_days < 0:
            raise ValueError(f"max_age_days cannot be negative, got {max_age_days}")
        self.path = Path(path)
        self.max_age_days = max_age_days
        self.max_revisions = max_revisions
        self._cached: tuple[tuple[int, ...], int, Revision | None] | None = None
        self._young_until = 0.0

    @classmethod
    def beside(cls, live_file: Path, **retention: Any) -> HistoryLog:
        """The log of ``live_file``: ``<its dir>/.history/<its name>.jsonl``."""
        return cls(live_file.parent / ".history" / (live_file.name + ".jsonl"), **retention)

    def __repr__(self) -> str:
        return f"HistoryLog({str(self.path)!r})"

    # ------------------------------------------------------------------ reading
    def revisions(self) -> list[Revision]:
        """Every complete, well-formed revision in log order (``[]`` without a log)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise MemoryStoreError(f"Cannot read the history {self.path}: {exc}") from exc
        return list(_parse_lines(data.split(b"\n")[:-1]))

    def latest_rev(self) -> int | None:
        """The number of the last complete revision (see :meth:`last`); None without a log."""
        last = self.last()
        return None if last is None else last.rev

    def last(self) -> Revision | None:
        """The last complete, well-formed revision, read from the log's tail only (cheap
        whatever the log's size; free when the log is unchanged since this object last
        read or wrote it); None without a log."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise MemoryStoreError(f"Cannot read the history {self.path}: {exc}") from exc
        try:
            return self._tail(fd)[2]
        except OSError as exc:
            raise MemoryStoreError(f"Cannot read the history {self.path}: {exc}") from exc
        finally:
            os.close(fd)

    def _tail(self, fd: int) -> tuple[int, int, Revision | None]:
        """``(size, size of the complete lines, last revision)`` of the open log ``fd``,
        from this object's cache when the file is unchanged (same inode, size and times)."""
        key = _stamp(os.fstat(fd))
        cached = self._cached
        if cached is not None and cached[0] == key:
            return key[1], cached[1], cached[2]
        complete, last = _scan_tail(fd, key[1])
        self._cached = (key, complete, last)
        return key[1], complete, last

    def get(self, rev: int) -> Revision:
        """Revision ``rev``; ``MemoryStoreError`` naming the range kept when it is unknown."""
        revisions = self.revisions()
        for revision in revisions:
            if revision.rev == rev:
                return revision
        kept = f"revisions {revisions[0].rev}-{revisions[-1].rev}" if revisions else "none"
        raise MemoryStoreError(
            f"No revision {rev} in the history of {self.path.name.removesuffix('.jsonl')} "
            f"(kept: {kept}); nothing was changed. "
            "List them with `memoryport memory history`."
        )

    # ------------------------------------------------------------------ writing
    def append(
        self,
        before: str,
        after: str,
        *,
        action: str,
        provenance: Provenance,
        changes: Iterable[dict[str, str]] = (),
        restored_from: int | None = None,
        external: bool | None = None,
    ) -> tuple[Revision, int]:
        """Log one write (before the live file is replaced) and fdatasync the log: the
        write's commit point.

        Returns the revision and the log size before it, for :meth:`undo_append` when the
        live write then fails. Caller holds the live file's lock. A hand edit since the
        last revision (``before`` is not the text the last revision left; ``external``,
        when given, says whether the caller found one) is logged first as an ``external``
        revision.
        """
        try:
            fd = _open_log(self.path)
        except OSError as exc:
            raise MemoryStoreError(
                f"Failed to write memory file history {self.path}: {exc}. Nothing was "
                "written; the previous file is unchanged."
            ) from exc
        try:
            size, complete, last = self._tail(fd)
            if complete != size:  # a writer was killed mid-line: drop the fragment
                os.ftruncate(fd, complete)
                size = complete
            now = time.time()
            lines: list[Revision] = []
            number = last.rev + 1 if last is not None else 1
            if external is None:
                external = last is not None and _hand_edited(last, before)
            if last is not None and external:
                lines.append(_new(number, now, "external", Provenance(source="external"),
                                  last.after, before))  # fmt: skip
                number += 1
            revision = _new(number, now, action, provenance, before, after, changes, restored_from)
            lines.append(revision)
            _write_all(fd, b"".join(_encode(line) for line in lines), size)
            if size == 0:  # a new log: its directory entry must be durable too
                fsync_directory(self.path.parent)
            self._cached = (_stamp(os.fstat(fd)), os.lseek(fd, 0, os.SEEK_END), revision)
        except OSError as exc:
            self._cached = None
            raise MemoryStoreError(
                f"Failed to write memory file history {self.path}: {exc}. Nothing was "
                "written; the previous file is unchanged."
            ) from exc
        finally:
            os.close(fd)
        if revision.rev % _PRUNE_EVERY == 0:
            with contextlib.suppress(OSError, MemoryStoreError):
                self.prune(now)
        return revision, size

    def undo_append(self, size: int) -> None:
        """Best effort: cut the log back to ``size`` bytes (the live write failed)."""
        self._cached = None
        with contextlib.suppress(OSError):
            os.truncate(self.path, size)

    def prune(self, now: float | None = None) -> int:
        """Apply the retention: drop revisions older than ``max_age_days`` that are not
        among the last ``max_revisions``. Returns how many were dropped. Caller holds the
        live file's lock (or nothing else writes)."""
        now = time.time() if now is None else now
        if now < self._young_until:  # the oldest line past the last N was young then
            return 0
        try:
            raw_lines = self.path.read_bytes().split(b"\n")[:-1]
        except FileNotFoundError:
            return 0
        keep_from = max(0, len(raw_lines) - self.max_revisions)
        age = self.max_age_days * 86400
        kept: list[bytes] = []
        oldest = now
        for index, line in enumerate(raw_lines):
            if index >= keep_from:
                kept.extend(raw_lines[index:])
                break
            ts = _line_ts(line)
            if ts is not None and ts >= now - age:
                kept.append(line)
                oldest = min(oldest, ts)
        # Until the oldest line kept for its age gets old, nothing can be dropped (later
        # lines are younger): the next prunes in this process read nothing.
        self._young_until = oldest + age if len(kept) > len(raw_lines) - keep_from else 0.0
        dropped = len(raw_lines) - len(kept)
        if dropped:
            self._cached = None
            _replace_file(self.path, b"".join(line + b"\n" for line in kept))
        return dropped


def _new(
    number: int,
    now: float,
    action: str,
    provenance: Provenance,
    before: str,
    after: str,
    changes: Iterable[dict[str, str]] = (),
    restored_from: int | None = None,
) -> Revision:
    at = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return Revision(number, at, now, action, provenance, before, after,
                    tuple(changes), restored_from)  # fmt: skip


def _write_all(fd: int, payload: bytes, size: int) -> None:
    """Append all of ``payload`` and fdatasync; on any failure cut the log back to ``size``
    (a short write, e.g. at a file-size limit, must not leave half a line behind)."""
    try:
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        getattr(os, "fdatasync", os.fsync)(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise


def _hand_edited(last: Revision, found: str) -> bool:
    """True when the file holds neither what ``last`` wrote nor what it found (a lost
    write leaves ``last.before`` in place): someone edited it by hand."""
    text = found.strip()
    return last.after.strip() != text and last.before.strip() != text


def _encode(revision: Revision) -> bytes:
    data = revision.to_dict()
    del data["applied"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _parse_lines(lines: Iterable[bytes]) -> Iterable[Revision]:
    for line in lines:
        try:
            yield Revision.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a damaged line is skipped, never fatal


_TS_HEAD = re.compile(rb'\{"rev":\d+,"at":"[^"]*","ts":(-?[0-9][0-9.eE+-]*)[,}]')


def _line_ts(line: bytes) -> float | None:
    """The ``ts`` of one log line, read from its head (every line this module writes starts
    ``{"rev":..,"at":..,"ts":..``): retention looks at every old line, and a full parse of
    thousands of lines, each holding two whole file texts, would take a write 100 ms."""
    found = _TS_HEAD.match(line, 0, 200)
    if found is not None:
        with contextlib.suppress(ValueError):
            return float(found.group(1))
    parsed = next(iter(_parse_lines([line])), None)
    return None if parsed is None else parsed.ts


def _scan_tail(fd: int, size: int) -> tuple[int, Revision | None]:
    """``(size of the complete lines, last well-formed revision)`` of a log of ``size``
    bytes: read backwards from the end, a small block first (a line is a few KB), skipping
    a torn last line (no newline) and damaged lines."""
    pos, buf, step = size, b"", _FIRST_BLOCK
    complete: int | None = None
    while pos > 0:
        step = min(step, pos)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        step = _TAIL_BLOCK
        if complete is None:
            end = buf.rfind(b"\n")
            if end == -1:
                continue
            complete, buf = pos + end + 1, buf[: end + 1]
        lines = buf.split(b"\n")[:-1]
        for line in reversed(lines[1:] if pos else lines):  # lines[0] may be partial
            found = next(iter(_parse_lines([line])), None)
            if found is not None:
                return complete, found
        if pos:
            buf = lines[0] + b"\n"
    return complete or 0, None


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    """What identifies one state of a log file: inode, size, mtime and ctime."""
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _open_log(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:
        ensure_private_dir(path.parent)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)




def _replace_file(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(path.parent)
