"""The audit log of a home: one SQLite file (``<home>/audit.db``), cheap appends.

Every read and write of memory through any shell is one ``events`` row: when, which shell,
read or write, the action, its target, the session and user, the revision id of a write
and a short detail. Rows older than the retention (``meta.retention_days``, default 90;
0 keeps everything) are pruned when a log is opened and every ``PRUNE_EVERY`` appends.

The same file holds ``held_syncs``: completed turns whose provider sync was held while
memory writes were paused (``memoryport.admin.pause``); they are claimed (deleted and
returned in one transaction) by whichever process delivers them after the resume, so each
is delivered once.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memoryport.errors import StoreError
from memoryport.storage.sessions.sqlite.connect import create_private_file
from memoryport.storage.sqlite_wal import enable_wal
from memoryport.types import valid_text

__all__ = [
    "DB_NAME",
    "DEFAULT_RETENTION_DAYS",
    "AuditEvent",
    "AuditLog",
    "HeldSync",
]

DB_NAME = "audit.db"
"""The audit file's name under the home."""

DEFAULT_RETENTION_DAYS = 90
"""How long events are kept unless ``set_retention_days`` says otherwise."""

PRUNE_EVERY = 1_000
"""Appends between two retention prunes in one process."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events(
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, shell TEXT NOT NULL, kind TEXT NOT NULL,
    action TEXT NOT NULL, target TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '', user_id TEXT NOT NULL DEFAULT '',
    revision TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS held_syncs(
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, user_id TEXT NOT NULL,
    session_id TEXT NOT NULL, payload TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS held_syncs_user ON held_syncs(user_id, id);
"""

_COLUMNS = "id, ts, shell, kind, action, target, session_id, user_id, revision, detail"


@dataclass(frozen=True)
class AuditEvent:
    """One recorded read or write of memory."""

    id: int
    ts: float
    shell: str
    kind: str
    action: str
    target: str = ""
    session_id: str = ""
    user_id: str = ""
    revision: str = ""
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON, with ``at`` (UTC ISO time) beside ``ts``."""
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.ts))
        return {**asdict(self), "at": at}


@dataclass(frozen=True)
class HeldSync:
    """A turn whose provider sync waits for the resume."""

    id: int
    ts: float
    user_id: str
    session_id: str
    payload: dict[str, Any]


class AuditLog:
    """The audit file of one home; thread-safe, shared by the processes using the home."""

    def __init__(self, path: Path, *, busy_timeout: float = 10.0) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._appends = 0
        self._conn: sqlite3.Connection | None = None
        with self._lock:
            self._connection()
        self.prune()

    def _connection(self) -> sqlite3.Connection:
        """The open connection (reopened after ``close``); call with the lock held."""
        if self._conn is not None:
            return self._conn
        try:
            create_private_file(self.path)  # memory excerpts live here: 0600 like state.db
            conn = sqlite3.connect(str(self.path), timeout=self._busy_timeout,
                                   check_same_thread=False, isolation_level=None)
            enable_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the audit log {self.path}: {exc}") from exc
        self._conn = conn
        return conn

    def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return self._connection().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"audit log {self.path}: {exc}") from exc

    def _insert(self, sql: str, params: tuple[Any, ...]) -> int:
        try:
            with self._lock:
                return int(self._connection().execute(sql, params).lastrowid or 0)
        except sqlite3.Error as exc:
            raise StoreError(f"audit log {self.path}: {exc}") from exc

    # ------------------------------------------------------------------ events
    def append(self, *, shell: str, kind: str, action: str, target: str = "",
               session_id: str = "", user_id: str = "", revision: str = "",
               detail: str = "", ts: float | None = None) -> int:
        """Record one event (one autocommitted insert); return its id."""
        texts = [valid_text(str(v)) for v in (shell, kind, action, target, session_id,
                                              user_id, revision, detail)]
        new_id = self._insert(
            f"INSERT INTO events({_COLUMNS}) VALUES (NULL,?,?,?,?,?,?,?,?,?)",
            (time.time() if ts is None else ts, *texts),
        )
        self._appends += 1
        if self._appends % PRUNE_EVERY == 0:
            self.prune()
        return new_id

    def events(self, *, since: float | None = None, shell: str | None = None,
               kind: str | None = None, action: str | None = None, limit: int = 100,
               offset: int = 0) -> list[AuditEvent]:
        """Events newest first, filtered by time (``ts >= since``), shell, kind, action."""
        where, params = ["1=1"], []
        for column, value in (("ts >=", since), ("shell =", shell), ("kind =", kind),
                              ("action =", action)):
            if value is not None and value != "":
                where.append(f"{column} ?")
                params.append(value)
        rows = self._run(
            f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} "
            "ORDER BY ts DESC, id DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [AuditEvent(*row) for row in rows]

    def count(self) -> int:
        """How many events are kept."""
        return int(self._run("SELECT count(*) FROM events")[0][0])

    # ------------------------------------------------------------------ retention
    def retention_days(self) -> int:
        """Days events are kept (0: forever)."""
        rows = self._run("SELECT value FROM meta WHERE key = 'retention_days'")
        return int(rows[0][0]) if rows else DEFAULT_RETENTION_DAYS

    def set_retention_days(self, days: int) -> int:
        """Keep events ``days`` days (0: forever); prune now; return the events removed."""
        if days < 0:
            raise ValueError(f"retention must be 0 (keep forever) or more days, not {days}")
        self._run("INSERT OR REPLACE INTO meta(key, value) VALUES ('retention_days', ?)",
                  (str(days),))
        return self.prune()

    def prune(self, now: float | None = None) -> int:
        """Delete events older than the retention; return how many."""
        days = self.retention_days()
        if days <= 0:
            return 0
        cutoff = (time.time() if now is None else now) - days * 86_400
        return len(self._run("DELETE FROM events WHERE ts < ? RETURNING id", (cutoff,)))

    # ------------------------------------------------------------------ held syncs
    def hold(self, user_id: str, session_id: str, payload: dict[str, Any]) -> int:
        """Keep one turn's sync for later; return its id."""
        text = json.dumps(payload, ensure_ascii=False, default=str)
        return self._insert(
            "INSERT INTO held_syncs(ts, user_id, session_id, payload) VALUES (?,?,?,?)",
            (time.time(), user_id, session_id, text))

    def held_count(self) -> int:
        """How many syncs are held."""
        return int(self._run("SELECT count(*) FROM held_syncs")[0][0])

    def has_held(self, user_id: str) -> bool:
        """True when a sync is held for ``user_id`` (a cheap read; no write lock)."""
        return bool(self._run("SELECT 1 FROM held_syncs WHERE user_id = ? LIMIT 1", (user_id,)))

    def held(self) -> list[HeldSync]:
        """Every held sync, oldest first, left in place (for copying the log elsewhere)."""
        rows = self._run("SELECT id, ts, user_id, session_id, payload FROM held_syncs ORDER BY id")
        return [HeldSync(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def claim_held(self, user_id: str) -> list[HeldSync]:
        """Take (delete and return, oldest first, one transaction) the syncs held for
        ``user_id``: a concurrent claimer gets none of them."""
        try:
            with self._lock:
                conn = self._connection()
                conn.execute("BEGIN IMMEDIATE")
                try:
                    rows = conn.execute(
                        "DELETE FROM held_syncs WHERE user_id = ? "
                        "RETURNING id, ts, user_id, session_id, payload", (user_id,)
                    ).fetchall()
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            raise StoreError(f"audit log {self.path}: {exc}") from exc
        held = [HeldSync(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]
        return sorted(held, key=lambda h: h.id)
