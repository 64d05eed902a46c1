"""``memoryport export`` / ``memoryport import``: a whole home in one portable archive.

The archive is one zip file::

    manifest.json                         format, version, memoryport version, counts
    curated/memories/MEMORY.md            the curated files, byte for byte ...
    curated/memories/.history/MEMORY.md.jsonl   ... with their revision history
    sessions.jsonl                        the `sessions export` format (version 2)
    providers/<name>/...                  each provider with the export hook (JSONL)

Export reads and never writes the home (a home without ``state.db`` exports no
sessions). Import restores into an empty home exactly and merges into one that holds
data: curated files as in :mod:`memoryport.admin.migrate.archive_parts`, sessions
whose id exists already are skipped, providers merge through their own ``import_``.
Importing the same archive twice adds nothing the second time. Sessions are read and
written in chunks (:mod:`memoryport.admin.migrate.stream`), so memory stays bounded.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from memoryport import __version__
from memoryport.admin import sessions as admin_sessions
from memoryport.admin.migrate.archive_parts import (
    PROVIDERS_PREFIX,
    export_curated,
    import_curated,
    portable_providers,
)
from memoryport.admin.migrate.openclaw import run_directory
from memoryport.admin.migrate.report import Report
from memoryport.admin.migrate.stream import import_groups, read_groups
from memoryport.admin.sessions import Progress
from memoryport.config import ensure_home, load_config
from memoryport.errors import ConfigError, ToolArgumentError
from memoryport.storage.sessions.portable import header_line

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "default_archive_path",
    "export_home",
    "import_archive",
    "read_manifest",
]

ARCHIVE_FORMAT = "memoryport.archive"
"""The ``format`` of ``manifest.json``."""
ARCHIVE_VERSION = 1
"""The archive version written today."""
SESSIONS_NAME = "sessions.jsonl"


def default_archive_path(directory: Path | None = None) -> Path:
    """``memoryport-export-<UTC time>.zip`` in ``directory`` (the current one)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return (directory or Path.cwd()) / f"memoryport-export-{stamp}.zip"


def _export_sessions(home: Path, archive: zipfile.ZipFile, progress: Progress | None
                     ) -> dict[str, int]:  # fmt: skip
    config = load_config(home)
    with archive.open(SESSIONS_NAME, "w", force_zip64=True) as raw:
        out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        if config.sessions.backend == "sqlite" and not (home / "state.db").is_file():
            out.write(header_line(0, 0) + "\n")
            out.flush()
            out.detach()
            return {"sessions": 0, "messages": 0}
        store = admin_sessions.open_store(home, config=config)
        try:
            counts = admin_sessions.export(store, out, progress=progress)
        finally:
            store.close()
        out.flush()
        out.detach()
    return {"sessions": counts.sessions, "messages": counts.messages}


def _export_providers(home: Path, archive: zipfile.ZipFile) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    for name, provider in portable_providers(home):
        with tempfile.TemporaryDirectory() as tmp:
            details = dict(provider.export(Path(tmp), home=home))
            files = sorted(p for p in Path(tmp).rglob("*") if p.is_file())
            for path in files:
                arcname = f"{PROVIDERS_PREFIX}{name}/{path.relative_to(tmp).as_posix()}"
                archive.write(path, arcname)
            details["files"] = [p.relative_to(tmp).as_posix() for p in files]
        parts[name] = details
    return parts


def export_home(home: Path, out: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Write the archive of ``home`` to ``out`` (atomically: a temp file renamed at the
    end, mode 0600); returns the manifest. ``ConfigError`` when ``home`` does not exist."""
    if not home.is_dir():
        raise ConfigError(f"no memoryport home at {home}; nothing to export")
    out = out.expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
            manifest: dict[str, Any] = {
                "format": ARCHIVE_FORMAT,
                "version": ARCHIVE_VERSION,
                "memoryport_version": __version__,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "curated": export_curated(home, archive),
                "sessions": _export_sessions(home, archive, progress),
                "providers": _export_providers(home, archive),
            }
            archive.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
        os.chmod(tmp, 0o600)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return manifest


def read_manifest(archive: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    """The checked manifest of an open archive; ``ToolArgumentError`` saying what is
    wrong (not an archive, a newer version)."""
    try:
        manifest = json.loads(archive.read("manifest.json"))
    except (KeyError, ValueError) as exc:
        raise ToolArgumentError(
            f"{path} is not a memoryport archive (no readable manifest.json: {exc}); "
            "make one with `memoryport export`"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise ToolArgumentError(f"{path} is not a memoryport archive (format mismatch)")
    version = manifest.get("version")
    if not isinstance(version, int) or version > ARCHIVE_VERSION or version < 1:
        raise ToolArgumentError(
            f"{path} is archive version {version!r}; this memoryport reads up to "
            f"{ARCHIVE_VERSION}: upgrade memoryport to import it"
        )
    return manifest


def _open_archive(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ToolArgumentError(
            f"cannot read {path} as a memoryport archive ({exc}); nothing was imported"
        ) from None


def _import_sessions(home: Path, archive: zipfile.ZipFile, report: Report,
                     progress: Progress | None) -> None:  # fmt: skip
    if SESSIONS_NAME not in archive.namelist():
        return
    with archive.open(SESSIONS_NAME) as raw:
        lines = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        header, groups = read_groups(lines)
        if not header.get("messages") and not header.get("sessions"):
            return
        store = admin_sessions.open_store(home)
        try:
            totals = import_groups(store, groups, on_conflict="skip",
                                   total_messages=int(header["messages"]), progress=progress)
        finally:
            store.close()
    target = str(home / "state.db")
    report.add("sessions", SESSIONS_NAME, target, "import",
               f"{totals.sessions_imported} sessions, {totals.messages_imported} messages")
    report.add("sessions", SESSIONS_NAME, target, "skip",
               f"{totals.sessions_skipped} sessions already present")  # fmt: skip
    report.counts.update(sessions=totals.sessions_imported,
                         messages=totals.messages_imported,
                         sessions_skipped=totals.sessions_skipped)  # fmt: skip


def _import_providers(home: Path, archive: zipfile.ZipFile, manifest: dict[str, Any],
                      report: Report, source: str) -> None:  # fmt: skip
    parts = manifest.get("providers") or {}
    available = dict(portable_providers(home, list(parts)))
    for name in sorted(parts):
        prefix = f"{PROVIDERS_PREFIX}{name}/"
        provider = available.get(name)
        if provider is None:
            report.add("provider", prefix, "", "skip",
                       f"provider {name!r} is not active in this home: its data stays in the "
                       "archive (enable it, then import again)")  # fmt: skip
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for member in archive.namelist():
                if member.startswith(prefix) and not member.endswith("/"):
                    target = Path(tmp) / member.removeprefix(prefix)
                    if ".." in Path(member).parts:
                        raise ToolArgumentError(f"unsafe path {member!r} in the archive")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(member))
            counts = provider.import_(Path(tmp), home=home, source=source)
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        report.add("provider", prefix, name, "import", detail)


def import_archive(home: Path, path: Path, progress: Progress | None = None) -> Report:
    """Restore the archive ``path`` into ``home`` (created if needed); returns the
    report. ``ToolArgumentError`` (nothing written) for a file that is not an archive
    of a version this memoryport reads."""
    path = path.expanduser()
    with _open_archive(path) as archive:
        manifest = read_manifest(archive, path)
        source = f"import:{path.name}"
        report = Report("import", str(path), str(home))
        keep = run_directory(home, "import") / "archive"
        ensure_home(home)
        import_curated(home, archive, report, source, keep)
        _import_sessions(home, archive, report, progress)
        _import_providers(home, archive, manifest, report, source)
    if keep.exists():
        report.paths["archive"] = str(keep)
    report.applied = True
    return report
