"""``memoryport migrate hermes``: import a Hermes Agent home (``~/.hermes``, profiles too).

For the Hermes home and each of its profiles (``profiles/<name>/``, imported into this
home's profile of the same name): ``memories/MEMORY.md`` and ``memories/USER.md`` are
merged into curated memory like an OpenClaw migration (deduplicated, scanned, within
budget, the rest archived under ``<home>/migration/hermes/<timestamp>/archive/``; history
source ``migration:hermes``), and every session and message of ``state.db`` is imported
into the session store with its id, lineage (``parent_session_id``), source, title,
timestamps, counters and every other column (``metadata["hermes"]``, with each message's
Hermes id). ``state.db`` is read read-only (:mod:`.hermes_db`) and written in batches of
whole sessions through ``SessionStore.sync_sessions`` (:mod:`.hermes_sessions`: one
transaction per batch, a reader thread one batch ahead), so memory stays bounded
whatever the size of the database.

Idempotent: a session already imported with as many messages is left alone, so a second
run imports nothing new; a session that grew in Hermes since gets the new messages
appended (its row, and its children's links to it, stay).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memoryport.admin.migrate.curated_merge import (
    Candidate,
    apply_plans,
    markdown_entries,
    plan_curated,
    report_plans,
    write_archive,
)
from memoryport.admin.migrate.hermes_db import HermesDB
from memoryport.admin.migrate.hermes_sessions import import_sessions
from memoryport.admin.migrate.openclaw import SourceNotFound, run_directory
from memoryport.admin.migrate.report import Report
from memoryport.admin.sessions import Progress, open_store
from memoryport.config import ensure_home, validate_name
from memoryport.errors import ConfigError

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
            done = import_sessions(db, store, order, sizes, progress)
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
