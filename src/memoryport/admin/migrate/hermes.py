"""``memoryport migrate hermes``: import a Hermes Agent home (``~/.hermes``, profiles too).

For the Hermes home and each of its profiles (``profiles/<name>/``, imported into this
home's profile of the same name): ``memories/MEMORY.md`` and ``memories/USER.md`` are
merged into curated memory like an OpenClaw migration (deduplicated, scanned, within
budget, the rest archived under ``<home>/migration/hermes/<timestamp>/archive/``; history
source ``migration:hermes``), and every session and message of ``state.db`` is imported
into the session store with its id, lineage (``parent_session_id``), source, title,
timestamps, counters and every other column (``metadata["hermes"]``, with each message's
Hermes id). ``state.db`` is read read-only (:mod:`.hermes_db`), one session at a time,
and each session's messages go in through the store's bulk append (one transaction per
batch, the word index built once per batch), so memory stays bounded (one session)
whatever the size of the database.

Idempotent: a session already imported with as many messages is left alone, so a second
run imports nothing new; a session that grew in Hermes since gets the new messages
appended (its row, and its children's links to it, stay).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from pathlib import Path

from memoryport.admin.migrate.curated_merge import (
    Candidate,
    apply_plans,
    markdown_entries,
    plan_curated,
    report_plans,
    write_archive,
)
from memoryport.admin.migrate.hermes_db import HermesDB, session_record
from memoryport.admin.migrate.openclaw import SourceNotFound, run_directory
from memoryport.admin.migrate.report import Report
from memoryport.admin.sessions import Progress, SessionStore, open_store
from memoryport.config import ensure_home, validate_name
from memoryport.errors import ConfigError, SessionNotFound
from memoryport.storage.sessions.records import MessageInput, SessionRecord, SyncReport

__all__ = ["SOURCE_LABEL", "HermesOptions", "hermes_homes", "migrate_hermes"]

SOURCE_LABEL = "migration:hermes"
"""The ``source`` curated history records for migrated entries."""


@dataclass(frozen=True)
class HermesOptions:
    """``source`` (default ``~/.hermes``), ``dry_run`` (count, write nothing) and
    ``profiles`` (also import ``profiles/<name>/``)."""

    source: Path | None = None
    dry_run: bool = False
    profiles: bool = True
    user_home: Path | None = None


def hermes_homes(root: Path, profiles: bool = True) -> list[tuple[str, Path]]:
    """``(profile, Hermes home)`` pairs: ``("default", root)`` then each profile."""
    homes = [("default", root)]
    folder = root / "profiles"
    if profiles and folder.is_dir():
        homes.extend((p.name, p) for p in sorted(folder.iterdir()) if p.is_dir())
    return homes


def migrate_hermes(
    home: Path, options: HermesOptions, progress: Progress | None = None
) -> Report:
    """Import the Hermes home ``options.source`` (default ``~/.hermes``) into ``home``.

    ``SourceNotFound`` (nothing written) when it does not exist; ``StoreError`` when a
    ``state.db`` cannot be read.
    """
    base = options.user_home if options.user_home is not None else Path.home()
    root = (options.source or base / ".hermes").expanduser()
    if not root.is_dir():
        raise SourceNotFound("Hermes", [root])
    report = Report("hermes", str(root), str(home), dry_run=options.dry_run)
    run_dir = run_directory(home, "hermes")
    for profile, source in hermes_homes(root, options.profiles):
        try:
            target = home if profile == "default" else home / "profiles" / validate_name(
                profile, "profile")
        except ConfigError as exc:
            report.warnings.append(f"{source} was skipped: {exc}")
            continue
        _curated(report, source, target, run_dir / "archive" / profile, options.dry_run)
        _sessions(report, source, target, options.dry_run, progress)
    report.applied = not options.dry_run
    report.notes.append(
        "Imported memory takes effect in new sessions; run it again any time, sessions "
        "already imported are skipped."
    )
    return report


def _curated(report: Report, source: Path, target: Path, archive: Path, dry_run: bool) -> None:
    candidates: dict[str, list[Candidate]] = {"memory": [], "user": []}
    for name, filename in (("memory", "MEMORY.md"), ("user", "USER.md")):
        path = source / "memories" / filename
        if path.is_file():
            text = path.read_text("utf-8", errors="replace")
            candidates[name] = [Candidate(t, str(path)) for t in markdown_entries(text)]
    plans = plan_curated(target, candidates)
    report_plans(report, plans, str(archive))
    if dry_run or not plans:
        return
    ensure_home(target)
    report.counts["entries_added"] = (
        report.counts.get("entries_added", 0) + apply_plans(target, plans, SOURCE_LABEL)
    )
    if write_archive(archive, plans):
        report.paths["archive"] = str(archive.parent)


def _sessions(
    report: Report, source: Path, target: Path, dry_run: bool, progress: Progress | None
) -> None:
    path = source / "state.db"
    if not path.is_file():
        return
    with HermesDB(path) as db:
        sizes = db.message_counts()
        total = sum(sizes.values())
        order = db.session_order()
        if dry_run:
            report.add("sessions", str(path), str(target / "state.db"), "import",
                       f"up to {len(order)} sessions, {total} messages (already imported "
                       "ones are skipped)")  # fmt: skip
            return
        ensure_home(target)
        with open_store(target) as store:
            done = _import_sessions(db, store, order, sizes, progress)
    where, into = str(path), str(target / "state.db")
    report.add("sessions", where, into, "import",
               f"{done.sessions_created} sessions, {done.messages_created} messages")
    report.add("sessions", where, into, "update", f"{done.sessions_grown} sessions grew since:"
               f" {done.messages_appended} messages added")  # fmt: skip
    report.add("sessions", where, into, "unchanged",
               f"{done.sessions_unchanged} sessions already imported")  # fmt: skip
    for key, value in (("sessions", done.sessions_created),
                       ("messages", done.messages_created + done.messages_appended),
                       ("sessions_unchanged", done.sessions_unchanged)):  # fmt: skip
        report.counts[key] = report.counts.get(key, 0) + value


BATCH_MESSAGES = 20_000
"""Messages per write transaction of the session import (whole sessions: one larger
session is a batch of its own). Memory is about one batch, whatever the database size."""


def _stored_count(store: SessionStore, session_id: str) -> int | None:
    try:
        return store.get_session(session_id).message_count
    except SessionNotFound:
        return None


def _import_sessions(
    db: HermesDB, store: SessionStore, order: list[tuple[str, str | None]],
    sizes: dict[str, int], progress: Progress | None,
) -> SyncReport:  # fmt: skip
    """Every session of ``order`` (parents first) through ``sync_sessions``, in batches of
    about :data:`BATCH_MESSAGES` messages; a session already stored with as many messages
    as Hermes has is counted unchanged without reading its messages."""
    total = sum(sizes.values())
    batch: list[tuple[SessionRecord, list[MessageInput]]] = []
    pending = done = unchanged = 0
    counts = [0, 0, 0, 0, 0]
    for session_id, parent in order:
        stored = _stored_count(store, session_id)
        if stored is not None and stored >= sizes.get(session_id, 0):
            unchanged += 1
            done += sizes.get(session_id, 0)
            continue
        messages = db.message_inputs(session_id)
        batch.append((_session(db, session_id, parent, messages), messages))
        pending += len(messages)
        if pending >= BATCH_MESSAGES:
            done += _flush(store, batch, counts)
            batch, pending = [], 0
            if progress is not None:
                progress("importing", done, total)
    done += _flush(store, batch, counts)
    if progress is not None:
        progress("importing", done, total)
    counts[2] += unchanged
    return SyncReport(*counts)


def _flush(
    store: SessionStore, batch: list[tuple[SessionRecord, list[MessageInput]]], counts: list[int]
) -> int:
    """Write one batch; add its ``SyncReport`` to ``counts``; return its message count."""
    if not batch:
        return 0
    result = store.sync_sessions(batch)
    for i, value in enumerate(astuple(result)):
        counts[i] += value
    return sum(len(messages) for _, messages in batch)


_RECORD_FIELDS = frozenset(f.name for f in fields(SessionRecord))


def _session(
    db: HermesDB, session_id: str, parent: str | None, messages: list[MessageInput]
) -> SessionRecord:
    """The ``SessionRecord`` of one Hermes session (:func:`session_record`); its tool call
    count is Hermes' own, or counted from the messages when Hermes has no such column."""
    newest = max((m.timestamp or 0.0 for m in messages), default=0.0)
    record = session_record(db.session_row(session_id), parent, len(messages), newest)
    if "tool_call_count" not in db.session_columns:
        record["tool_call_count"] = sum(len(m.tool_calls or []) for m in messages)
    return SessionRecord(**{k: v for k, v in record.items() if k in _RECORD_FIELDS})
