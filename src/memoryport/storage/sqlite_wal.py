"""Switch a SQLite connection to WAL when several processes open a new file at once.

``PRAGMA journal_mode=WAL`` needs a moment of exclusive access; when another process is
creating or migrating the same file, SQLite answers "database is locked" at once instead
of waiting for the busy timeout. :func:`enable_wal` retries for a bounded time.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ["enable_wal"]


def enable_wal(conn: sqlite3.Connection, *, timeout: float = 10.0) -> str:
    """Set WAL on ``conn``, retrying while the file is locked by another opener for up to
    ``timeout`` seconds; return the journal mode SQLite reports. Other errors, and a lock
    that outlasts ``timeout``, raise ``sqlite3.OperationalError``."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
