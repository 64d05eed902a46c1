"""Named, append-only schema migrations for the SQLite session store.

Each migration is a function taking a :class:`Transaction`; :func:`migrate` applies the
pending ones with the shared runner (:mod:`memoryport.storage.sessions.migrate`), each
in its own ``BEGIN IMMEDIATE`` transaction together with its record in ``_migrations``.
Never edit or reorder a released migration: add a new one at the end.

Schema notes:

* ``messages_fts`` is an external-content FTS5 index (``content='messages'``) with the
  ``porter unicode61`` tokenizer over ``content``, ``tool_name`` and ``tool_calls``. The
  text is stored once, in ``messages``.
* ``messages_trigram`` is an external-content trigram index over the view
  ``messages_trigram_src``: the ``content`` of messages flagged ``cjk = 1`` (they contain
  CJK, kana or Hangul text; the store sets the flag on insert, and m002 back-fills it
  with a GLOB, which is too slow to run in a trigger on every insert). It answers CJK
  queries (which the word tokenizer cannot split) without tripling the database size;
  latin substring needs are served by prefix queries on the word index.
* UPDATE triggers fire only ``AFTER UPDATE OF content, tool_name, tool_calls``.
* Since m008 no trigger indexes an inserted message: every writer calls
  :func:`memoryport.storage.sessions.sqlite.bulk.index_messages` in the same
  transaction (the update and delete triggers keep the indexes in step after that).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence

from memoryport.storage.sessions import migrate as runner
from memoryport.storage.sessions.temporal import EventRow, event_rows
from memoryport.storage.sqlite_ledger import SQLiteLedger

__all__ = [
    "CJK_GLOB",
    "MIGRATIONS",
    "Migration",
    "Transaction",
    "applied",
    "migrate",
    "pending",
]


CJK_GLOB = (
    "*[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002a6df]*"
)
"""GLOB pattern matching text with CJK, kana or Hangul characters (the trigram scope)."""


class Transaction:
    """What a migration receives: runs SQL inside the migration's open transaction.

    ``executescript`` runs statement by statement, because ``sqlite3``'s own
    ``executescript`` would COMMIT the open transaction first.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def executescript(self, script: str) -> None:
        """Run every statement of ``script`` in the current transaction."""
        buffer = ""
        for line in script.splitlines(keepends=True):
            buffer += line
            if sqlite3.complete_statement(buffer):
                self._conn.execute(buffer)
                buffer = ""
        if buffer.strip():
            self._conn.execute(buffer)

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        """Run one statement in the current transaction."""
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        """Run one statement for each row in the current transaction."""
        self._conn.executemany(sql, rows)


Migration = Callable[[Transaction], None]

MIGRATIONS: list[tuple[str, Migration]] = []


def _migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@_migration
def m001_initial(conn: Transaction) -> None:
    """Sessions, messages and key/value metadata."""
    conn.executescript("""
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        user_id TEXT,
        model TEXT NOT NULL DEFAULT '',
        title TEXT NOT NULL DEFAULT '',
        parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        end_reason TEXT NOT NULL DEFAULT '',
        last_active_at REAL NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0,
        tool_call_count INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        estimated_cost_usd REAL,
        actual_cost_usd REAL,
        metadata TEXT
    );
    CREATE INDEX sessions_parent ON sessions(parent_session_id);
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        tool_name TEXT,
        tool_calls TEXT,
        tool_call_id TEXT,
        reasoning TEXT,
        timestamp REAL NOT NULL,
        metadata TEXT
    );
    CREATE INDEX messages_session ON messages(session_id, id);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """)


@_migration
def m002_fts_indexes(conn: Transaction) -> None:
    """External-content word and trigram FTS5 indexes, narrow triggers, and a backfill."""
    conn.executescript(f"""
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_name, tool_calls,
        content='messages', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    ALTER TABLE messages ADD COLUMN cjk INTEGER NOT NULL DEFAULT 0;
    UPDATE messages SET cjk = 1 WHERE content GLOB '{CJK_GLOB}';
    CREATE VIEW messages_trigram_src AS SELECT id, content FROM messages WHERE cjk = 1;
    CREATE VIRTUAL TABLE messages_trigram USING fts5(
        content, content='messages_trigram_src', content_rowid='id', tokenize='trigram'
    );
    CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    END;
    CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    END;
    CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, tool_name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
        INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    END;
    CREATE TRIGGER messages_trigram_ai AFTER INSERT ON messages WHEN new.cjk = 1 BEGIN
        INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER messages_trigram_ad AFTER DELETE ON messages WHEN old.cjk = 1 BEGIN
        INSERT INTO messages_trigram(messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER messages_trigram_au_old AFTER UPDATE OF content, cjk ON messages
    WHEN old.cjk = 1 BEGIN
        INSERT INTO messages_trigram(messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER messages_trigram_au_new AFTER UPDATE OF content, cjk ON messages
    WHEN new.cjk = 1 BEGIN
        INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
    END;
    INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
    INSERT INTO messages_trigram(messages_trigram) VALUES ('rebuild');
    """)


@_migration
def m003_session_browse_indexes(conn: Transaction) -> None:
    """Indexes for per-user browse (user, last activity) and source filters."""
    conn.executescript("""
    CREATE INDEX sessions_user_active ON sessions(user_id, last_active_at);
    CREATE INDEX sessions_active ON sessions(last_active_at);
    CREATE INDEX sessions_source ON sessions(source);
    """)


@_migration
def m004_session_title_index(conn: Transaction) -> None:
    """An index for discover's exact session-title match (trimmed, ASCII case-insensitive)."""
    conn.executescript("""
    CREATE INDEX sessions_title ON sessions(trim(title) COLLATE NOCASE);
    """)


@_migration
def m005_bulk_fts_insert(conn: Transaction) -> None:
    """Let a batched append index its messages with one statement instead of a trigger each.

    While the ``meta`` row ``fts_bulk_insert`` exists (only ever inside one write
    transaction), the word-index insert trigger skips new rows; the writer then indexes
    the batch with one ``INSERT INTO messages_fts ... SELECT``. About 2x faster ingest.
    """
    conn.executescript("""
    DROP TRIGGER messages_fts_ai;
    CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages
    WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'fts_bulk_insert') BEGIN
        INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    END;
    """)


@_migration
def m006_message_time_index(conn: Transaction) -> None:
    """An index for chronological search (``sort=newest/oldest`` order by message time,
    ties by id), so imported older sessions sort by when they happened."""
    conn.executescript("""
    CREATE INDEX messages_time ON messages(timestamp, id);
    """)


@_migration
def m007_message_events(conn: Transaction) -> None:
    """Event windows resolved at write time from each message's words ("yesterday",
    "last Friday", "the week before 16 Nov 2023") against the message's own timestamp,
    with their precision and original words; back-filled for the stored messages.

    A message has zero or more rows; deleting the message deletes them (trigger).
    """
    conn.executescript("""
    CREATE TABLE message_events (
        message_id INTEGER NOT NULL,
        start_at REAL NOT NULL,
        end_at REAL NOT NULL,
        precision TEXT NOT NULL,
        words TEXT NOT NULL
    );
    CREATE INDEX message_events_message ON message_events(message_id);
    CREATE INDEX message_events_time ON message_events(start_at, end_at);
    CREATE TRIGGER message_events_ad AFTER DELETE ON messages BEGIN
        DELETE FROM message_events WHERE message_id = old.id;
    END;
    """)
    rows = conn.execute("SELECT id, content, timestamp FROM messages")
    batch: list[EventRow] = []
    insert = "INSERT INTO message_events VALUES (?, ?, ?, ?, ?)"
    for message_id, content, timestamp in rows:
        batch.extend(event_rows(message_id, content, timestamp))
        if len(batch) >= 5000:
            conn.executemany(insert, batch)
            batch = []
    if batch:
        conn.executemany(insert, batch)



@_migration
def m008_index_in_writer(conn: Transaction) -> None:
    """The writers index new messages themselves, one ``INSERT ... SELECT`` per batch
    (:func:`memoryport.storage.sessions.sqlite.bulk.index_messages`), instead of an
    insert trigger per row: a per-row trigger program cost about as much as inserting
    the row (7 of 13 us per message in a batched append). The update and delete
    triggers stay.
    """
    conn.executescript("""
    DROP TRIGGER messages_fts_ai;
    DROP TRIGGER messages_trigram_ai;
    DELETE FROM meta WHERE key = 'fts_bulk_insert';
    """)

class _Ledger(SQLiteLedger):
    """The session store's ledger, ``_migrations``; its steps take a :class:`Transaction`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn, "_migrations")

    def run(self, step: Migration) -> None:
        """Run one migration step inside the open transaction."""
        step(Transaction(self._conn))


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of applied migrations, in the order they were defined (read-only: a store
    whose ``_migrations`` table does not exist yet has none)."""
    return runner.applied(MIGRATIONS, _Ledger(conn).done())


def pending(conn: sqlite3.Connection) -> list[str]:
    """Names of migrations not yet applied."""
    return runner.pending(MIGRATIONS, _Ledger(conn).done())


def migrate(conn: sqlite3.Connection, *, stop_before: str | None = None) -> list[str]:
    """Apply pending migrations (optionally stopping before one); return the names applied.

    The connection must be in autocommit mode (``isolation_level=None``). Each migration
    and its ``_migrations`` record commit together; a failure rolls that one back and
    raises ``MigrationError``, leaving the database at the last good migration.

    Safe when several processes open a fresh database at once: each migration runs in a
    ``BEGIN IMMEDIATE`` transaction (one writer at a time) that re-reads ``_migrations``
    under that lock, so the first process applies it and the others find it done. A
    busy lock raises ``sqlite3.OperationalError`` for the caller's retry loop.
    """
    return runner.migrate(MIGRATIONS, _Ledger(conn), stop_before=stop_before)
