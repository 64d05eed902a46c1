"""Schema of the turn index: named, append-only migrations in their own namespace.

The turn index shares its SQLite file (``<home>/holographic.db``) with the fact store, so
its migrations are recorded in their own table, ``_turns_migrations``, and run with the
shared runner (:mod:`memoryport.storage.sessions.migrate`): each pending migration in
one ``BEGIN IMMEDIATE`` transaction together with its record. Never edit or reorder a
released migration; add a new one at the end.

Tables:

* ``turns``: one row per stored turn (user scope ``''`` when the turn has no user, the
  session id, the turn's position in its session, speaker, text, the turn's own
  timestamp, the caller's ``source_id``, when it was recorded, and ``temporal``: 1 when
  the text mentions a time, computed once at write time).
* ``turns_fts``: contentless FTS5 (``porter unicode61``) over ``"Speaker: text"``,
  rowid = turn id (the text is stored once, in ``turns``; a row is removed with the FTS5
  ``'delete'`` command and its original text, which ``turns`` still holds).
* ``turn_blocks`` / ``blocks_fts``: the session as a document, in blocks of
  :data:`BLOCK_TURNS` consecutive turns (so appending to a long session re-indexes at
  most one block), rowid = block id; contentless too (a block's old text is rebuilt from
  ``turns`` to delete it).
* both word indexes merge their segments two at a time (FTS5 ``automerge`` 2, from
  ``m004``): a search reads fewer, larger segments for the same results.
* ``turn_vectors``: the turn's dense vector (float32 BLOB) and the model that made it,
  written in the same transaction as the turn when the ``embeddings`` extra and its model
  are installed (:mod:`.vectors`); turns stored without one simply have no row.
* ``turn_words``: each distinct word of the stored turns and its dense vector by model,
  and ``turn_word_users``: each (user scope, word) of the stored turns (from ``m005``,
  written by the same background writer; :mod:`.expand`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memoryport.storage.sessions import migrate as runner
from memoryport.storage.sessions.temporal import event_rows
from memoryport.storage.sqlite_ledger import ConnLedger

__all__ = ["BLOCK_TURNS", "LEDGER_TABLE", "MIGRATIONS", "Ledger", "applied", "migrate"]

BLOCK_TURNS = 64
"""Consecutive turns of a session that form one session document."""
LEDGER_TABLE = "_turns_migrations"
"""Where the turn index records its applied migrations."""

Migration = Callable[[sqlite3.Connection], None]


def _script(conn: sqlite3.Connection, script: str) -> None:
    """Run each statement of ``script`` inside the open transaction (``executescript``
    would commit it first)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def m001_turns(conn: sqlite3.Connection) -> None:
    """Turns, their word index and the session-block index."""
    _script(
        conn,
        """
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            speaker TEXT NOT NULL,
            text TEXT NOT NULL,
            timestamp REAL NOT NULL,
            source_id TEXT NOT NULL,
            recorded_at REAL NOT NULL,
            temporal INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX turns_session_position ON turns(user_id, session_id, position);
        CREATE INDEX turns_user ON turns(user_id, id);
        CREATE VIRTUAL TABLE turns_fts USING fts5(
            body, content='', tokenize='porter unicode61'
        );
        CREATE TABLE turn_blocks (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            block INTEGER NOT NULL,
            UNIQUE (user_id, session_id, block)
        );
        CREATE VIRTUAL TABLE blocks_fts USING fts5(
            body, content='', tokenize='porter unicode61'
        )
        """,
    )


def m002_turn_vectors(conn: sqlite3.Connection) -> None:
    """Optional dense vectors (the ``embeddings`` extra): one float32 BLOB per turn and
    the name of the model that made it."""
    conn.execute(
        "CREATE TABLE turn_vectors (turn_id INTEGER PRIMARY KEY, model TEXT NOT NULL,"
        " vec BLOB NOT NULL)"
    )


def m003_turn_events(conn: sqlite3.Connection) -> None:
    """Event windows resolved at write time from each turn's own words against its time
    ("last Friday" said on 2023-05-08 is 2023-05-05), back-filled for stored turns; and an
    index for the store's latest time (the anchor of relative query dates)."""
    _script(
        conn,
        """
        CREATE TABLE turn_events (
            turn_id INTEGER NOT NULL,
            start_at REAL NOT NULL,
            end_at REAL NOT NULL,
            precision TEXT NOT NULL,
            words TEXT NOT NULL
        );
        CREATE INDEX turn_events_turn ON turn_events(turn_id);
        CREATE INDEX turns_user_time ON turns(user_id, timestamp)
        """,
    )
    rows = conn.execute("SELECT id, text, timestamp FROM turns WHERE temporal = 1").fetchall()
    conn.executemany(
        "INSERT INTO turn_events(turn_id, start_at, end_at, precision, words)"
        " VALUES (?, ?, ?, ?, ?)",
        [event for row in rows for event in event_rows(*row)],
    )


def m004_fts_automerge(conn: sqlite3.Connection) -> None:
    """Both word indexes merge their segments two at a time (FTS5 ``automerge`` 2; the
    default 4 lets up to three segments wait at each level). A query reads every
    segment, so fewer means faster searches for the same results: on the LoCoMo dev turns
    (8k, stored one at a time) a search takes about a fifth less, and the session
    blocks, rewritten at every turn (their old text deleted, the new one added), about a
    third as long in ``benchmarks/bench_turn.py``; storing a turn costs the same. Merging
    happens on later writes; nothing is rewritten here."""
    for table in ("turns_fts", "blocks_fts"):
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 2)")


def m005_turn_words(conn: sqlite3.Connection) -> None:
    """The stored turns' vocabulary, each word's dense vector (float32 BLOB) by model, and
    which user scopes' turns hold each word (``turn_word_users``: a query expands only
    through its own scope's words): written by the background vector writer, read to
    expand a query (:mod:`.expand`)."""
    conn.execute(
        "CREATE TABLE turn_words (model TEXT NOT NULL, word TEXT NOT NULL,"
        " vec BLOB NOT NULL, PRIMARY KEY (model, word)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE turn_word_users (user_id TEXT NOT NULL, word TEXT NOT NULL,"
        " PRIMARY KEY (user_id, word)) WITHOUT ROWID"
    )


MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_turns", m001_turns),
    ("m002_turn_vectors", m002_turn_vectors),
    ("m003_turn_events", m003_turn_events),
    ("m004_fts_automerge", m004_fts_automerge),
    ("m005_turn_words", m005_turn_words),
]


Ledger = ConnLedger
"""The shared SQLite ledger (other components sharing the file pass their own table)."""


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of the turn-index migrations applied to ``conn``'s database, in order."""
    return runner.applied(MIGRATIONS, ConnLedger(conn, LEDGER_TABLE).done())


def migrate(conn: sqlite3.Connection, *, stop_before: str | None = None) -> list[str]:
    """Apply the pending turn-index migrations (autocommit connection); return their names."""
    return runner.migrate(MIGRATIONS, ConnLedger(conn, LEDGER_TABLE), stop_before=stop_before)
