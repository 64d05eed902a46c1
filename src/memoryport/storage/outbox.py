"""A durable, ordered outbox of writes for a remote backend in SQLite, retried with backoff
(used by the honcho, mem0 and mentisdb providers; ``jsonl_outbox`` is the variant that
sends on every put).

Writes are recorded in SQLite under the home before any attempt to send them, so a write
survives a backend outage, a crash and a restart of the agent. ``flush`` sends them oldest
first and stops at the first failure (order is kept); each failure doubles the delay before
the next attempt, from ``base_s`` up to ``max_s``. Nothing here starts a thread: the
provider calls ``flush`` from hooks the manager already runs on its background queue.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryport.storage.sqlite_wal import enable_wal

__all__ = ["Outbox"]

_SCHEMA = ("CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT,"
           " kind TEXT NOT NULL, body TEXT NOT NULL, created REAL NOT NULL)")


class Outbox:
    """Pending writes in ``path`` (``None``: in memory, lost at exit)."""

    def __init__(self, path: Path | None, *, base_s: float = 1.0, max_s: float = 60.0) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path) if path else ":memory:", check_same_thread=False,
                                   isolation_level=None)
        if path:
            enable_wal(self._db)
        else:
            self._db.execute("PRAGMA journal_mode=MEMORY")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self.base_s, self.max_s = base_s, max_s
        self.failures = 0
        self.next_attempt = 0.0
        self.sent = 0
        self.last_error = ""

    def put(self, kind: str, body: dict[str, Any]) -> None:
        """Record one write to send (``kind`` tells the sender what it is)."""
        with self._lock:
            self._db.execute("INSERT INTO outbox (kind, body, created) VALUES (?, ?, ?)",
                             (kind, json.dumps(body, ensure_ascii=False), time.time()))

    def pending(self) -> int:
        """How many writes wait to be sent."""
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()
        return int(row[0])

    def due(self, now: float | None = None) -> bool:
        """True when the backoff delay since the last failure has passed."""
        return (now if now is not None else time.monotonic()) >= self.next_attempt

    def _head(self) -> tuple[int, str, dict[str, Any]] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, kind, body FROM outbox ORDER BY id LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), str(row[1]), json.loads(row[2]))

    def flush(self, send: Callable[[str, dict[str, Any]], None], *, force: bool = False,
              budget_s: float | None = None) -> int:
        """Send pending writes oldest first; return how many were delivered.

        Skipped while backing off (unless ``force``) or when another thread is flushing.
        The first failure records the backoff and is re-raised; the write stays queued.
        ``budget_s`` stops early (between writes) when that many seconds have passed.
        """
        if not force and not self.due():
            return 0
        if not self._flushing.acquire(blocking=False):
            return 0
        started = time.monotonic()
        delivered = 0
        try:
            while (head := self._head()) is not None:
                if budget_s is not None and time.monotonic() - started > budget_s:
                    break
                row_id, kind, body = head
                try:
                    send(kind, body)
                except Exception as exc:
                    self._failed(exc)
                    raise
                with self._lock:
                    self._db.execute("DELETE FROM outbox WHERE id = ?", (row_id,))
                delivered += 1
                self.sent += 1
                self.failures, self.next_attempt = 0, 0.0
        finally:
            self._flushing.release()
        return delivered

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        delay = min(self.max_s, self.base_s * (2 ** (self.failures - 1)))
        self.next_attempt = time.monotonic() + delay
        self.last_error = str(exc)

    def close(self) -> None:
        """Close the database (pending writes stay on disk for the next run)."""
        with self._lock:
            self._db.close()
