"""A backup of a whole home before a migration changes it, and restoring one.

``backup_home(home, path)`` writes one zip of every file under ``home`` except the
``migration/`` directory (where backups and archives live). SQLite databases (``*.db``)
are copied with SQLite's online backup, so a database in WAL mode is saved whole and
consistent; their ``-wal``/``-shm`` side files are left out. File modes are kept (``.env``
stays 0600). ``restore_backup(home, path)`` puts the home back exactly as it was: files
created since are removed, saved files are written back with their modes.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import zipfile
from pathlib import Path

from memoryport._fs import ensure_private_dir
from memoryport.errors import StoreError

__all__ = ["KEEP", "backup_home", "restore_backup"]

KEEP = "migration"
"""The directory of a home that backups neither save nor remove (backups live there)."""

_SIDE_FILES = ("-wal", "-shm", "-journal")


def _files(home: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, names in os.walk(home):
        if Path(root) == home and KEEP in dirs:
            dirs.remove(KEEP)
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if path.is_symlink() or not path.is_file() or name.endswith(_SIDE_FILES):
                continue
            found.append(path)
    return found


def _add_database(archive: zipfile.ZipFile, path: Path, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.db"
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            target = sqlite3.connect(copy)
            try:
                source.backup(target)
            finally:
                target.close()
        finally:
            source.close()
        _add(archive, copy, name, path.stat().st_mode)


def _add(archive: zipfile.ZipFile, path: Path, name: str, mode: int) -> None:
    info = zipfile.ZipInfo.from_file(path, name)
    info.external_attr = (stat.S_IMODE(mode) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    with path.open("rb") as src, archive.open(info, "w", force_zip64=True) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def backup_home(home: Path, path: Path) -> int:
    """Save every file of ``home`` (but ``migration/``) into the zip ``path``; returns
    the number of files. ``StoreError`` when a file or database cannot be read."""
    ensure_private_dir(path.parent)
    files = _files(home)
    try:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in files:
                name = file.relative_to(home).as_posix()
                if file.suffix == ".db" and _is_sqlite(file):
                    _add_database(archive, file, name)
                else:
                    _add(archive, file, name, file.stat().st_mode)
    except (OSError, sqlite3.Error) as exc:
        path.unlink(missing_ok=True)
        raise StoreError(f"could not back up {home} to {path}: {exc}; nothing was changed") from exc
    os.chmod(path, 0o600)
    return len(files)


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


def _safe_name(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def restore_backup(home: Path, path: Path) -> int:
    """Make ``home`` hold exactly what the backup ``path`` saved (``migration/`` is kept);
    returns the files restored. ``StoreError`` for a missing or damaged backup (then the
    home is not touched)."""
    try:
        archive = zipfile.ZipFile(path)
        bad = archive.testzip()
    except (OSError, zipfile.BadZipFile) as exc:
        raise StoreError(f"cannot read the backup {path}: {exc}; nothing was changed") from exc
    with archive:
        if bad is not None or not all(_safe_name(n) for n in archive.namelist()):
            raise StoreError(f"the backup {path} is damaged ({bad}); nothing was changed")
        for child in list(home.iterdir()) if home.is_dir() else []:
            if child.name == KEEP:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        for info in archive.infolist():
            target = home / info.filename
            ensure_private_dir(target.parent)
            with archive.open(info) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.chmod(target, (info.external_attr >> 16) & 0o7777 or 0o600)
        return len(archive.infolist())
