"""Opening the SQLite session database: private file creation, read-only detection and
the connection itself (read-only stores open with ``mode=ro``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from memoryport._fs import ensure_private_dir

__all__ = ["connect", "create_private_file", "must_open_read_only", "why"]


def must_open_read_only(path: Path) -> bool:
    """True when ``path`` or its directory is not writable (a missing file in an
    unwritable directory raises ``OSError`` saying so: it cannot be created)."""
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    dir_writable = os.access(directory, os.W_OK | os.X_OK)
    if not path.exists():
        if not dir_writable:
            raise PermissionError(
                f"cannot create it: {directory} is read-only for this user; make it"
                " writable or point MEMORYPORT_HOME at a writable home"
            )
        return False
    return not (dir_writable and os.access(path, os.W_OK))


def why(exc: BaseException) -> str:
    """The error text, saying "read-only" when that is the cause."""
    text = str(exc)
    if "readonly" in text.lower().replace("-", "").replace(" ", ""):
        return f"{text} (the database or its directory is read-only for this user)"
    return text


def create_private_file(path: Path) -> None:
    """Create a new database file with mode 0600 (its directory 0700); keep existing ones.

    The file holds full chat history. SQLite gives its -wal/-shm files the same mode.
    """
    ensure_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def connect(
    path: str,
    *,
    read_only: bool,
    busy_timeout: float,
    factory: type[sqlite3.Connection] = sqlite3.Connection,
) -> sqlite3.Connection:
    """Open the connection; a read-only store opens with ``mode=ro``, falling back to
    ``immutable=1`` when SQLite cannot create the WAL index beside a WAL database."""

    def open_(target: str, uri: bool = False) -> sqlite3.Connection:
        return sqlite3.connect(
            target,
            timeout=busy_timeout,
            isolation_level=None,
            check_same_thread=False,
            factory=factory,
            uri=uri,
        )

    if not read_only:
        return open_(path)
    target = f"{Path(path).resolve().as_uri()}?mode=ro"
    conn = open_(target, uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if "readonly" not in str(exc):
            raise
    return open_(target + "&immutable=1", uri=True)
