"""Move a home's curated memory and audit log into PostgreSQL (part of ``memoryport
storage copy``).

``copy_curated(home, dsn)`` stores every curated file under ``<home>/memories``
(``MEMORY.md``, ``USER.md``, ``users/<id>/...``) as the row ``storage.backend: postgres``
reads for this home's profile, with its revision history as it is (numbers, times,
provenance), so ``memory history``/``restore``/``why`` keep working after the switch.
A target the database already holds is skipped (a rerun copies nothing twice). The files
are left in place.

``copy_audit(home, dsn)`` copies ``<home>/audit.db`` (events, the retention setting and
turns held while writes are paused) into the profile's ``audit_*`` rows, unless the
database already has audit rows for this profile.

A per-user directory whose name is a hash (``<cleaned>.<sha256 prefix>``, for user ids
that are not safe directory names) is matched back to its user id through the user ids
its history records; when none matches, it is reported as skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memoryport.config import profile_name
from memoryport.providers.curated.store import safe_user_id
from memoryport.storage.audit import DB_NAME, AuditLog
from memoryport.storage.history import HistoryLog, Revision
from memoryport.storage.markdown import MarkdownFile

__all__ = ["CuratedCopyReport", "copy_audit", "copy_curated"]

_TARGETS = {"MEMORY.md": "memory", "USER.md": "user"}


@dataclass(frozen=True)
class CuratedCopyReport:
    """What ``copy_curated`` did: targets and revisions written, targets left alone."""

    targets: int = 0
    revisions: int = 0
    skipped: list[str] = field(default_factory=list)


def _owner(directory: str, revisions: list[Revision]) -> str | None:
    """The user id whose directory is ``directory`` (None when it cannot be told)."""
    for candidate in (directory, *(r.provenance.user_id for r in revisions)):
        if candidate and safe_user_id(candidate) == directory:
            return candidate
    return None


def _files(home: Path) -> list[tuple[Path, str | None]]:
    """``(file, owner)`` of every curated file (owner None: a directory not matched)."""
    root = home / "memories"
    found: list[tuple[Path, str | None]] = [
        (root / name, "") for name in _TARGETS if (root / name).is_file()
    ]
    users = root / "users"
    for folder in sorted(users.iterdir()) if users.is_dir() else []:
        for name in _TARGETS:
            path = folder / name
            if path.is_file():
                found.append((path, _owner(folder.name, HistoryLog.beside(path).revisions())))
    return found


def copy_curated(home: Path, dsn: str, *, schema: str = "memoryport") -> CuratedCopyReport:
    """Copy the curated files of ``home`` into the PostgreSQL database at ``dsn``.

    ``MemoryStoreError`` when a file cannot be read or the database refuses the copy
    (targets copied before stay copied; run it again to finish).
    """
    from memoryport.storage.postgres_curated import PostgresCuratedBackend

    backend = PostgresCuratedBackend(dsn, schema=schema, profile=profile_name(home))
    targets = revisions = 0
    skipped: list[str] = []
    for path, owner in _files(home):
        relative = path.relative_to(home).as_posix()
        if owner is None:
            skipped.append(f"{relative}: the user id of this directory is not known")
            continue
        kept = HistoryLog.beside(path).revisions()
        text = MarkdownFile(path, char_limit=1).read_raw()
        if not backend.load(owner, _TARGETS[path.name], text, kept):
            skipped.append(f"{relative}: already in the database")
            continue
        targets += 1
        revisions += len(kept)
    return CuratedCopyReport(targets, revisions, skipped)


def copy_audit(home: Path, dsn: str, *, schema: str = "memoryport") -> int:
    """Copy ``<home>/audit.db`` into the database at ``dsn``; return the events copied
    (0 without an audit file, or when the database already has this profile's rows)."""
    path = home / DB_NAME
    if not path.is_file():
        return 0
    from memoryport.storage.postgres_audit import PostgresAuditLog

    target = PostgresAuditLog(dsn, schema=schema, profile=profile_name(home), path=path)
    if target.count() or target.held_count():
        return 0
    source = AuditLog(path)
    try:
        target.set_retention_days(source.retention_days())
        events = source.events(limit=source.count() + 1)
        for event in reversed(events):  # oldest first, so ids keep their order
            target.append(shell=event.shell, kind=event.kind, action=event.action,
                          target=event.target, session_id=event.session_id,
                          user_id=event.user_id, revision=event.revision,
                          detail=event.detail, ts=event.ts)  # fmt: skip
        for held in source.held():  # left in the file too: after the switch it is not read
            target.hold(held.user_id, held.session_id, held.payload)
    finally:
        source.close()
    return len(events)
