"""The parts of a portable archive other than sessions: curated memory and providers.

Curated memory travels as its files: every ``*.md`` under ``<home>/memories`` (the shared
``MEMORY.md``/``USER.md`` and the per-user ``users/<id>/*.md``) and each one's revision
log ``.history/<name>.jsonl``, byte for byte. On import a file the home does not have yet
(no file, no history) is restored exactly, history included, and one ``import``
revision (``source`` ``import:<archive>``, text unchanged) records where it came from.
A file the home already has is merged entry by entry like a migration (deduplicated,
scanned, within budget, the rest archived); its imported history is kept in the archive
directory for reference.

Providers travel through the optional ``PortableProvider`` hook of the contract
(``export(directory, home=)`` / ``import_(directory, home=, source=)``): the configured
``memory.provider`` when it has the hook, and the bundled ``holographic`` fact store
whenever its database exists (facts are restored even where it is not the active
provider).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock

from memoryport.admin.curated import open_curated
from memoryport.admin.migrate.curated_merge import (
    Candidate,
    apply_plans,
    markdown_entries,
    plan_curated,
    report_plans,
    write_archive,
)
from memoryport.admin.migrate.report import Report
from memoryport.config import load_config
from memoryport.errors import MemoryStoreError
from memoryport.provider import PortableProvider
from memoryport.providers.curated.backends import uses_postgres
from memoryport.providers.curated.dbexport import database_curated_files
from memoryport.storage.history import HistoryLog, Provenance
from memoryport.storage.markdown import parse_entries

__all__ = [
    "CURATED_PREFIX",
    "PROVIDERS_PREFIX",
    "curated_files",
    "export_curated",
    "import_curated",
    "portable_providers",
]

CURATED_PREFIX = "curated/"
"""Where curated files live inside an archive (``curated/memories/MEMORY.md``, ...)."""
PROVIDERS_PREFIX = "providers/"
"""Where each provider's files live inside an archive (``providers/<name>/...``)."""


def curated_files(home: Path) -> list[Path]:
    """Every curated file and revision log under ``<home>/memories``, sorted."""
    root = home / "memories"
    if not root.is_dir():
        return []
    found = [p for p in root.rglob("*.md") if p.is_file() and ".history" not in p.parts]
    found += [p for p in root.rglob(".history/*.jsonl") if p.is_file()]
    return sorted(found)


def export_curated(home: Path, archive: zipfile.ZipFile) -> dict[str, int]:
    """Add the curated files of ``home`` to ``archive``; returns counts."""
    counts = {"files": 0, "entries": 0, "revisions": 0}
    found = database_curated_files(home)  # None: the curated files under the home
    if found is None:
        found = [(p.relative_to(home).as_posix(), p.read_bytes()) for p in curated_files(home)]
    for relative, data in found:
        archive.writestr(CURATED_PREFIX + relative, data)
        if relative.endswith(".jsonl"):
            counts["revisions"] += data.count(b"\n")
        else:
            counts["files"] += 1
            counts["entries"] += len(parse_entries(data.decode("utf-8", "replace")))
    return counts


def _live_names(archive: zipfile.ZipFile) -> list[str]:
    return sorted(
        n for n in archive.namelist()
        if n.startswith(CURATED_PREFIX + "memories/") and n.endswith(".md")
        and "/.history/" not in n
    )  # fmt: skip


def _history_name(name: str) -> str:
    folder, _, file = name.rpartition("/")
    return f"{folder}/.history/{file}.jsonl"


def _target_of(home: Path, relative: str) -> tuple[str, str] | None:
    """``(user_id, target)`` whose file is ``home/relative`` under this home's config."""
    parts = Path(relative).parts
    users = [""] + ([parts[2]] if len(parts) == 4 and parts[1] == "users" else [])
    for user_id in users:
        if "." in user_id:
            continue  # a hashed directory name: the user id itself is not known
        store = open_curated(home, user_id)
        for target in store.targets:
            if store.path(target) == home / relative:
                return user_id, target
    return None


def _restore_exact(home: Path, archive: zipfile.ZipFile, name: str, source: str) -> None:
    relative = name.removeprefix(CURATED_PREFIX)
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    text = archive.read(name)
    history = _history_name(name)
    log = HistoryLog.beside(path)
    with filelock.FileLock(str(path) + ".lock", timeout=10):
        if history in archive.namelist():
            log.path.parent.mkdir(parents=True, exist_ok=True)
            log.path.write_bytes(archive.read(history))
            log.path.chmod(0o600)
        path.write_bytes(text)
        decoded = text.decode("utf-8", "replace")
        log.append(decoded, decoded, action="import", provenance=Provenance(source=source))


def import_curated(
    home: Path, archive: zipfile.ZipFile, report: Report, source: str, keep: Path
) -> None:
    """Restore or merge every curated file of ``archive`` into ``home`` (see the module
    docstring); rows go to ``report``; what is not merged is kept under ``keep``."""
    history_on = load_config(home).memory.history_enabled
    for name in _live_names(archive):
        relative = name.removeprefix(CURATED_PREFIX)
        path = home / relative
        fresh = not path.exists() and not HistoryLog.beside(path).path.exists()
        fresh = fresh and not uses_postgres(home)  # rows are merged through CuratedMemory
        if fresh and history_on:
            _restore_exact(home, archive, name, source)
            entries = len(parse_entries(archive.read(name).decode("utf-8", "replace")))
            report.add("curated", name, str(path), "import", f"{entries} entries, with history")
            continue
        found = _target_of(home, relative)
        if found is None:
            _keep(archive, name, keep / relative)
            report.add("curated", name, str(keep / relative), "archive",
                       "no matching curated file in this home's layout")  # fmt: skip
            continue
        _merge(home, archive, name, found, report, source, keep)


def _merge(
    home: Path,
    archive: zipfile.ZipFile,
    name: str,
    found: tuple[str, str],
    report: Report,
    source: str,
    keep: Path,
) -> None:
    user_id, target = found
    text = archive.read(name).decode("utf-8", "replace")
    plans = plan_curated(
        home, {target: [Candidate(t, name) for t in markdown_entries(text)]}, user_id=user_id
    )
    report_plans(report, plans, str(keep))
    try:
        report.counts["entries_added"] = report.counts.get("entries_added", 0) + apply_plans(
            home, plans, source, user_id=user_id
        )
    except MemoryStoreError as exc:
        report.warnings.append(str(exc))
    write_archive(keep / Path(name).parent.name, plans)
    history = _history_name(name)
    if history in archive.namelist():
        _keep(archive, history, keep / history.removeprefix(CURATED_PREFIX))


def _keep(archive: zipfile.ZipFile, name: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(archive.read(name))


def portable_providers(home: Path, names: list[str] | None = None) -> Iterator[tuple[str, Any]]:
    """``(name, provider)`` for each provider whose data can travel: the configured one
    if it has the ``PortableProvider`` hook, and ``holographic`` when its database exists
    (or when ``names`` asks for it). ``names`` limits the result to those names."""
    from memoryport.plugins import load
    from memoryport.providers.holographic import DB_NAME, create_holographic_provider

    configured = load_config(home).memory.provider
    seen: set[str] = set()
    if configured and (names is None or configured in names):
        result = load(configured, home)
        if result.provider is not None and isinstance(result.provider, PortableProvider):
            seen.add(configured)
            yield configured, result.provider
    wanted = names is not None and "holographic" in names
    if "holographic" not in seen and ((home / DB_NAME).is_file() or wanted):
        yield "holographic", create_holographic_provider(home)
