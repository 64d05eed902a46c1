"""The SQLite session store (the default; embedded, one file at ``<home>/state.db``).

Concurrency: WAL with ``synchronous=NORMAL`` (falls back to ``journal_mode=DELETE``, with
one warning per database, on filesystems that refuse WAL). Every write is one
``BEGIN IMMEDIATE`` transaction with a busy timeout plus a bounded, jittered retry, so
several processes can append and search at once without "database is locked" errors.
One connection per store, guarded by a lock, so a store may be shared across threads.
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.portable import Progress
from memoryport.storage.sessions.query import ParsedQuery, has_cjk
from memoryport.storage.sessions.records import (
    DEFAULT_HIDDEN_SOURCES,
    ImportReport,
    MessageInput,
    MessageRecord,
    MessageWindow,
    SearchHit,
    SearchScope,
    SessionRecord,
    SessionSummary,
    SortOrder,
    SyncReport,
    valid_values,
)
from memoryport.storage.sessions.rows import (
    MESSAGE_COLUMNS,
    MESSAGE_INSERT_COLUMNS,
    SESSION_COLUMNS,
    dump_json,
    message_from_row,
    message_values,
    session_from_row,
    session_values,
)
from memoryport.storage.sessions.sqlite import migrations
from memoryport.storage.sessions.sqlite.bulk import (
    export_sessions,
    fetch_windows,
    import_entries,
    index_messages,
    prune_empty,
    rebuild_indexes,
    sync_entries,
)
from memoryport.storage.sessions.sqlite.connect import (
    connect,
    create_private_file,
    must_open_read_only,
    why,
)
from memoryport.storage.sessions.sqlite.dialect import INSERT_SESSION, is_busy, scope_sql
from memoryport.storage.sessions.sqlite.search import run_search, snippets_for
from memoryport.storage.sessions.temporal import event_rows
from memoryport.types import valid_text

__all__ = ["SQLiteSessionStore"]

log = logging.getLogger("memoryport.storage.sessions")
T = TypeVar("T")

_WAL_WARNED: set[str] = set()
_NOT_UTF8 = "a value is not valid Unicode text (it holds a lone surrogate); fix the caller"
_WRITE_TRIES = 15
_INSERT_EVENT = "INSERT INTO message_events VALUES (?, ?, ?, ?, ?)"


class SQLiteSessionStore(SessionStore):
    """Session store in one SQLite file (``":memory:"`` works for tests).

    Args:
        path: database file (``~`` is expanded). A new file is created with mode 0600
            and a missing directory with 0700; existing ones keep their permissions.
        user_id: bind the store to one user (search, browse and reads are scoped).
        hidden_sources: sources hidden from search/browse unless asked for.
        busy_timeout: seconds SQLite waits on a lock before the retry loop takes over.
    """

    connection_factory: type[sqlite3.Connection] = sqlite3.Connection
    """Connection class used by ``sqlite3.connect`` (a seam for tests and instrumentation)."""

    def __init__(
        self,
        path: str | Path,
        *,
        user_id: str | None = None,
        hidden_sources: Sequence[str] = DEFAULT_HIDDEN_SOURCES,
        busy_timeout: float = 5.0,
    ) -> None:
        self.path = path if path == ":memory:" else str(Path(path).expanduser())
        self.user_id = user_id or None
        self.hidden_sources = tuple(hidden_sources)
        self.journal_mode = ""
        self.read_only = False
        """True when the file or its directory is not writable: reads work, writes raise."""
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        try:
            self.read_only = self.path != ":memory:" and must_open_read_only(Path(self.path))
            if self.path != ":memory:" and not self.read_only:
                create_private_file(Path(self.path))
            conn = connect(
                self.path,
                read_only=self.read_only,
                busy_timeout=busy_timeout,
                factory=self.connection_factory,
            )
            self._conn = conn
            self._configure(conn, busy_timeout)
            if self.read_only and migrations.pending(conn):
                raise StoreError(self._read_only_message("it needs a schema upgrade"))
            self._retry(lambda: migrations.migrate(conn))
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"session database unavailable at {self.path}: {why(exc)}") from exc
        except OSError as exc:
            raise StoreError(f"session database unavailable at {self.path}: {why(exc)}") from exc
        except StoreError:
            self.close()
            raise

    def _read_only_message(self, what: str) -> str:
        return (
            f"session database at {self.path} is read-only (the file or its directory is"
            f" not writable) and {what}; make {Path(self.path).parent} and the file writable"
            " by this user, or point MEMORYPORT_HOME at a writable home"
        )

    # ------------------------------------------------------------------ plumbing
    def _configure(self, conn: sqlite3.Connection, busy_timeout: float) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA cache_size = -32000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        if self.read_only:
            self.journal_mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            return
        self.journal_mode = self._set_journal_mode(conn)
        conn.execute(
            "PRAGMA synchronous = NORMAL"
            if self.journal_mode == "wal"
            else "PRAGMA synchronous = FULL"
        )

    def _set_journal_mode(self, conn: sqlite3.Connection) -> str:
        if self.path == ":memory:":
            return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        problem = ""
        try:
            mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            mode, problem = "", str(exc)
        if mode == "wal":
            return mode
        mode = str(conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower()
        if self.path not in _WAL_WARNED:
            _WAL_WARNED.add(self.path)
            log.warning(
                "WAL is not available for %s (%s); using journal_mode=DELETE. Concurrent "
                "readers will block during writes (network filesystems often refuse WAL).",
                self.path,
                problem or "the filesystem refused it",
            )
        return mode

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection; ``StoreError`` once the store is closed."""
        if self._conn is None:
            raise StoreError(f"session database unavailable: the store at {self.path} is closed")
        return self._conn

    def _retry(self, fn: Callable[[], T]) -> T:
        for attempt in range(_WRITE_TRIES):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or attempt == _WRITE_TRIES - 1:
                    raise
                time.sleep(random.uniform(0.02, 0.15))
        raise AssertionError("unreachable")

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction, retrying on lock contention."""

        def attempt() -> T:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

        if self.read_only:
            raise StoreError(self._read_only_message("cannot be written"))
        with self._lock:
            try:
                return self._retry(attempt)
            except sqlite3.Error as exc:
                raise StoreError(f"session database write failed: {why(exc)}") from exc
            except UnicodeEncodeError as exc:
                raise StoreError(f"{_NOT_UTF8}: {exc}") from exc

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return self._retry(lambda: fn(self.conn))
            except sqlite3.Error as exc:
                raise StoreError(f"session database read failed: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise StoreError(f"{_NOT_UTF8}: {exc}") from exc

    # ------------------------------------------------------------------ lifecycle
    def applied_migrations(self) -> list[str]:
        """Names of applied migrations, in order."""
        return self._read(migrations.applied)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                finally:
                    self._conn = None

    # ------------------------------------------------------------------ sessions
    def _insert_session(self, draft: SessionRecord) -> SessionRecord:
        def do(conn: sqlite3.Connection) -> None:
            values = valid_values(session_values(draft))
            if draft.parent_session_id:
                row = conn.execute(
                    "SELECT user_id FROM sessions WHERE id = ?", (draft.parent_session_id,)
                ).fetchone()
                if row is None:
                    raise SessionNotFound(f"unknown parent session {draft.parent_session_id!r}")
                values[2] = values[2] or row[0]
            try:
                conn.execute(INSERT_SESSION, values)
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"session {draft.id!r} already exists") from exc

        self._write(do)
        return self.get_session(draft.id)

    def _update_session(self, session_id: str, values: Mapping[str, Any]) -> SessionRecord:
        columns = ", ".join(f"{k} = ?" for k in values)
        params = valid_values(dump_json(v) if k == "metadata" else v for k, v in values.items())

        def do(conn: sqlite3.Connection) -> None:
            sql = f"UPDATE sessions SET {columns} WHERE id = ?"
            if conn.execute(sql, [*params, session_id]).rowcount == 0:
                raise SessionNotFound(f"unknown session {session_id!r}")

        self._write(do)
        return self.get_session(session_id)

    def _session(self, session_id: str) -> SessionRecord | None:
        row = self._read(
            lambda c: c.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)
            ).fetchone()
        )
        return None if row is None else session_from_row(row)

    def _list_sessions(
        self, scope: SearchScope, column: str, *, limit: int, offset: int
    ) -> list[SessionSummary]:
        where, params = scope_sql(scope)
        sql = (
            f"SELECT {SESSION_COLUMNS}, (SELECT substr(content, 1, 200) FROM messages"
            " WHERE session_id = s.id AND role = 'user' ORDER BY id LIMIT 1)"
            f" FROM sessions s WHERE 1=1{where} ORDER BY s.{column} DESC, s.id DESC"
            " LIMIT ? OFFSET ?"
        )
        rows = self._read(lambda c: c.execute(sql, [*params, limit, offset]).fetchall())
        return [SessionSummary(session_from_row(r[:-1]), r[-1] or "") for r in rows]

    def _sessions_titled(self, title: str, scope: SearchScope, limit: int) -> list[SessionRecord]:
        # INDEXED BY: without it the planner prefers sessions_user_active for a user-scoped
        # store, which walks every session of that user.
        where, params = scope_sql(scope)
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions s INDEXED BY sessions_title"
            f" WHERE trim(s.title) = ? COLLATE NOCASE{where}"
            " ORDER BY s.last_active_at DESC, s.id DESC LIMIT ?"
        )
        rows = self._read(lambda c: c.execute(sql, [valid_text(title), *params, limit]).fetchall())
        return [session_from_row(r) for r in rows]

    # ------------------------------------------------------------------ messages
    def _append(self, session_id: str, items: list[MessageInput], now: float) -> list[int]:
        rows = [
            (*valid_values(message_values(session_id, m, now)), int(has_cjk(m.content)))
            for m in items
        ]
        tool_calls = sum(len(m.tool_calls or []) for m in items)
        last = max(r[3] for r in rows)

        def do(conn: sqlite3.Connection) -> list[int]:
            updated = conn.execute(
                "UPDATE sessions SET message_count = message_count + ?, tool_call_count ="
                " tool_call_count + ?, last_active_at = max(last_active_at, ?) WHERE id = ?",
                (len(rows), tool_calls, last, session_id),
            )
            if updated.rowcount == 0:
                raise SessionNotFound(f"unknown session {session_id!r}")
            sql = (
                f"INSERT INTO messages ({MESSAGE_INSERT_COLUMNS}, cjk) VALUES (?,?,?,?,?,?,?,?,?,?)"
            )
            if len(rows) == 1:
                ids = [int(conn.execute(sql, rows[0]).lastrowid or 0)]
            else:  # AUTOINCREMENT under the write lock: the batch takes the next ids
                first = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'")
                start = (first.fetchone() or (0,))[0]
                conn.executemany(sql, rows)
                ids = list(range(start + 1, start + 1 + len(rows)))
            index_messages(conn, ids, cjk=any(r[-1] for r in rows))  # no insert trigger (m008)
            events = [e for i, r in zip(ids, rows, strict=True) for e in event_rows(i, r[2], r[3])]
            if events:
                conn.executemany(_INSERT_EVENT, events)
            return ids

        return self._write(do)

    def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Messages of a session in id order."""
        self.get_session(session_id)
        sql = f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = ? ORDER BY m.id"
        sql += " LIMIT ? OFFSET ?"
        rows = self._read(
            lambda c: c.execute(
                sql, (session_id, -1 if limit is None else limit, offset)
            ).fetchall()
        )
        return [message_from_row(r) for r in rows]

    def _message(self, message_id: int) -> MessageRecord | None:
        row = self._read(
            lambda c: c.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
        )
        return None if row is None else message_from_row(row)

    # ------------------------------------------------------------------ search
    def _run_search(
        self,
        parsed: ParsedQuery,
        scope: SearchScope,
        *,
        sort: SortOrder,
        limit: int,
        offset: int,
        snippets: bool,
    ) -> tuple[list[SearchHit], str]:
        where = scope_sql(scope)
        return self._read(
            lambda c: run_search(
                c, parsed, scope=where, sort=sort, limit=limit, offset=offset, snippets=snippets
            )
        )

    def _snippets(self, parsed: ParsedQuery, message_ids: list[int]) -> dict[int, str]:
        return self._read(lambda c: snippets_for(c, parsed, message_ids))

    def _windows(self, anchors: list[int], window: int, bookend: int) -> dict[int, MessageWindow]:
        return self._read(lambda c: fetch_windows(c, anchors, window=window, bookend=bookend))

    # ------------------------------------------------------------------ lineage
    def _parent_map(self, session_ids: list[str]) -> dict[str, str | None]:
        sql = """
        WITH RECURSIVE up(id, parent, depth) AS (
            SELECT id, parent_session_id, 0 FROM sessions
            WHERE id IN (SELECT value FROM json_each(?))
            UNION SELECT s.id, s.parent_session_id, up.depth + 1
            FROM up JOIN sessions s ON s.id = up.parent WHERE up.depth < 10000)
        SELECT DISTINCT id, parent FROM up
        """
        rows = self._read(lambda c: c.execute(sql, (json.dumps(session_ids),)).fetchall())
        return dict(rows)

    def children(self, session_id: str) -> list[SessionRecord]:
        """Direct children, oldest first."""
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.parent_session_id = ?"
            " ORDER BY s.started_at, s.id"
        )
        rows = self._read(lambda c: c.execute(sql, (session_id,)).fetchall())
        return [session_from_row(r) for r in rows]

    def lineage(self, session_id: str) -> list[str]:
        """Every id in the lineage tree, root first (breadth-first by start time)."""
        root = self.lineage_root(session_id)
        sql = """
        WITH RECURSIVE down(id, depth, started) AS (
            SELECT id, 0, started_at FROM sessions WHERE id = ?
            UNION SELECT s.id, down.depth + 1, s.started_at FROM down
            JOIN sessions s ON s.parent_session_id = down.id WHERE down.depth < 10000)
        SELECT id FROM down ORDER BY depth, started, id
        """
        return [r[0] for r in self._read(lambda c: c.execute(sql, (root,)).fetchall())]

    # ------------------------------------------------------------------ forget
    def forget_message(self, message_id: int) -> int:
        """Delete one message (the triggers remove it from both indexes)."""

        def do(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT session_id, tool_calls FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                return 0
            calls = len(json.loads(row[1])) if row[1] else 0
            conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            conn.execute(
                "UPDATE sessions SET message_count = max(0, message_count - 1),"
                " tool_call_count = max(0, tool_call_count - ?) WHERE id = ?",
                (calls, row[0]),
            )
            return 1

        return self._write(do)

    def forget_session(self, session_id: str) -> int:
        """Delete a session and its messages; children move up to its parent."""

        def do(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT parent_session_id FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionNotFound(f"unknown session {session_id!r}")
            conn.execute(
                "UPDATE sessions SET parent_session_id = ? WHERE parent_session_id = ?",
                (row[0], session_id),
            )
            deleted = conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return int(deleted.rowcount)

        return self._write(do)

    def _forget_user(self, user_id: str) -> int:
        def do(conn: sqlite3.Connection) -> int:
            ids = "SELECT id FROM sessions WHERE user_id = ?"
            deleted = conn.execute(f"DELETE FROM messages WHERE session_id IN ({ids})", (user_id,))
            conn.execute(
                f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({ids})"
                " AND (user_id IS NULL OR user_id != ?)",
                (user_id, user_id),
            )
            conn.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))
            return int(deleted.rowcount)

        return self._write(do)

    # ------------------------------------------------------------------ portability
    def _export(
        self,
        out: IO[str],
        session_ids: Sequence[str] | None,
        user_id: str | None,
        progress: Progress | None,
    ) -> int:
        return self._read(lambda c: export_sessions(c, out, session_ids, user_id, progress))

    def _import_entries(
        self,
        entries: list[tuple[SessionRecord, list[MessageRecord]]],
        on_conflict: str,
        progress: Progress | None = None,
    ) -> ImportReport:
        return self._write(lambda c: import_entries(c, entries, on_conflict, progress))

    def _sync(self, entries: list[tuple[SessionRecord, list[MessageInput]]], now: float
              ) -> SyncReport:  # fmt: skip
        return self._write(lambda c: sync_entries(c, entries, now, self._user))

    def _prune_empty(
        self, user_id: str | None, cutoff: float, dry_run: bool
    ) -> list[SessionRecord]:
        run = self._read if dry_run else self._write
        return run(lambda c: prune_empty(c, user_id, cutoff, dry_run))

    # ------------------------------------------------------------------ maintenance
    def rebuild_index(self, progress: Progress | None = None) -> None:
        """Rebuild both FTS indexes from the messages table (in chunks, with progress)."""
        self._write(lambda c: rebuild_indexes(c, progress))

    def check_index(self) -> None:
        """Run FTS5 integrity checks against the content; ``StoreError`` on mismatch."""

        def do(conn: sqlite3.Connection) -> None:
            for table in ("messages_fts", "messages_trigram"):
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")

        try:
            self._write(do)
        except StoreError as exc:
            raise StoreError(f"full-text index is inconsistent: {exc.__cause__}") from exc

    def get_meta(self, key: str) -> str | None:
        """Read a metadata value."""
        row = self._read(
            lambda c: c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        )
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a metadata value."""
        self._write(
            lambda c: c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
                " SET value = excluded.value",
                (key, value),
            )
        )
