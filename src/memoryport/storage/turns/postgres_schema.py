"""Schema of the PostgreSQL turn index, and the migration ledger the holographic stores share.

The tables live in one PostgreSQL schema (``memoryport`` unless told otherwise, beside the
session store's tables); the turn index records its migrations in ``_turns_migrations``
and the fact store in ``_migrations_facts`` (the SQLite ledger names), both applied with
the shared runner (:mod:`memoryport.storage.sessions.migrate`) by :class:`PgLedger`: each
pending migration in its own transaction together with its record, under the advisory
lock every memoryport migration takes, so several hosts opening one store at once
migrate it once.

Tables (every one carries ``user_id``, ``''`` for rows without a user):

* ``turns`` -- as in SQLite, plus ``length``: the turn's token count (BM25's ``dl``).
* ``turn_terms`` -- the postings of ``"Speaker: text"``: (user, term, turn, tf, dl), the
  terms cut and stemmed exactly as FTS5's ``porter unicode61`` does (:mod:`.postgres_terms`).
* ``turn_blocks`` / ``block_terms`` -- the session as a document in blocks of
  :data:`~memoryport.storage.turns.schema.BLOCK_TURNS` turns; a block's postings are the
  sums of its turns' (the block text is its turns joined by newlines), its ``length``
  the sum of theirs.
* ``term_stats`` -- per user and kind (``turn``/``block``): how many documents and
  tokens, the ``N`` and ``avgdl`` of BM25 (kept in the writing transaction).
* ``turn_events`` -- event windows resolved at write time, as in SQLite.
* ``turn_vectors`` -- a turn's dense vector: ``vector`` (pgvector) when the extension
  can be created, else ``bytea`` (float32), and the model that made it.
* ``turn_words`` -- each word of the user's turns and its dense vector (float32
  ``bytea``) by model, for query expansion (:mod:`.postgres_expand`; from ``m006``).

Row-level security: every table has a ``user_scope`` policy (``FORCE``d, so it binds the
owner too): a connection sees and writes only the rows of the user named in its
:data:`SCOPE_SETTING`; the stores set it (per connection) to the user of each call.
A second, ``SELECT``-only policy, ``read_all``, lets a connection whose
:data:`READ_ALL_SETTING` is ``on`` read every user's rows: only ``memoryport export`` of a
PostgreSQL home sets it (the stores never do).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from memoryport.errors import MigrationError
from memoryport.storage.postgres_ledger import LOCK_KEY as LEDGER_LOCK_KEY
from memoryport.storage.postgres_ledger import SchemaLedger, ensure_ledger
from memoryport.storage.sessions import migrate as runner

__all__ = [
    "FACTS_LOCK",
    "LEDGER_TABLE",
    "LOCK_KEY",
    "MIGRATIONS",
    "READ_ALL_SETTING",
    "SCOPE_SETTING",
    "TURNS_LOCK",
    "Migration",
    "enable_read_all",
    "enable_row_security",
    "has_pgvector",
    "lock_user",
    "migrate",
    "set_scope",
]

Cursor = psycopg.Cursor[Any]
Migration = Callable[[Cursor, sql.Identifier], None]

LEDGER_TABLE = "_turns_migrations"
"""Where the turn index records its applied migrations."""
LOCK_KEY = LEDGER_LOCK_KEY
"""The advisory lock every memoryport migration takes (the session store's key)."""
TURNS_LOCK = 0x6D7074
"""First key of the advisory lock a turn-index write takes per user (second: the hash
of the user id): writers of one user queue, as SQLite's ``BEGIN IMMEDIATE`` makes them,
so two hosts appending to one session never pick the same position."""
FACTS_LOCK = 0x6D7066
"""The same for fact-store writes (the duplicate check and supersession read, then
write: two hosts adding one fact at once must not both add it)."""
SCOPE_SETTING = "memoryport.holo_user"
"""The per-transaction setting the policies read: ``=`` followed by the user id (``=``
alone for the rows without a user). Unset or anything else, the policies let no row
through (a bare ``''`` cannot pass for the no-user scope)."""

READ_ALL_SETTING = "memoryport.holo_read_all"
"""Set to ``on`` (per transaction) by the admin tools that read every user's rows
(``memoryport export`` of a PostgreSQL home): the ``read_all`` policies let such a
connection ``SELECT`` every row and write none. The stores never set it, so a store's
query that forgot its ``user_id`` filter still sees only its own user's rows."""

_SCOPE = f"current_setting('{SCOPE_SETTING}', true)"
POLICY = f"{_SCOPE} LIKE '=%' AND user_id = substr({_SCOPE}, 2)"
"""The ``USING``/``WITH CHECK`` expression of every table's ``user_scope`` policy."""


def lock_user(cur: Cursor, key: int, user_id: str) -> None:
    """Take the transaction-level advisory lock ``(key, hash of user_id)``."""
    cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (key, user_id))


def set_scope(conn: psycopg.Connection[Any], user_id: str) -> None:
    """Scope the connection to ``user_id`` (``''``: the rows without a user) until the
    next call; run it outside a transaction (a rollback would undo it)."""
    conn.execute("SELECT set_config(%s, %s, false)", (SCOPE_SETTING, "=" + user_id))


def enable_row_security(cur: Cursor, schema: sql.Identifier, tables: tuple[str, ...]) -> None:
    """Turn on (and ``FORCE``) row-level security with :data:`POLICY` on ``tables``."""
    for table in tables:
        fmt = {"s": schema, "t": sql.Identifier(table)}
        cur.execute(sql.SQL("ALTER TABLE {s}.{t} ENABLE ROW LEVEL SECURITY").format(**fmt))
        cur.execute(sql.SQL("ALTER TABLE {s}.{t} FORCE ROW LEVEL SECURITY").format(**fmt))
        cur.execute(sql.SQL(f"CREATE POLICY user_scope ON {{s}}.{{t}} USING ({POLICY})"
                            f" WITH CHECK ({POLICY})").format(**fmt))


def enable_read_all(cur: Cursor, schema: sql.Identifier, tables: tuple[str, ...]) -> None:
    """Add the ``read_all`` policy (``SELECT`` only, :data:`READ_ALL_SETTING` = ``on``)."""
    for table in tables:
        fmt = {"s": schema, "t": sql.Identifier(table)}
        cur.execute(sql.SQL("CREATE POLICY read_all ON {s}.{t} FOR SELECT USING ("
                            f"current_setting('{READ_ALL_SETTING}', true) = 'on')").format(**fmt))


def has_pgvector(cur: Cursor) -> bool:
    """Create the ``vector`` extension if the server has it; True when it is there after
    (runs in a savepoint, so a missing extension leaves the transaction usable)."""
    try:
        with cur.connection.transaction():
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error:
        return False
    return cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is not None


_FIRST_TABLES = ("turns", "turn_terms", "turn_blocks", "block_terms", "term_stats",
                 "turn_events", "turn_vectors")
TABLES = (*_FIRST_TABLES, "turn_words")
"""The turn index's tables (all under row-level security)."""

_M001 = """
CREATE TABLE {s}.turns (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    session_id text NOT NULL,
    position integer NOT NULL,
    speaker text NOT NULL,
    text text NOT NULL,
    timestamp double precision NOT NULL,
    source_id text NOT NULL,
    recorded_at double precision NOT NULL,
    temporal integer NOT NULL,
    length integer NOT NULL,
    UNIQUE (user_id, session_id, position)
);
CREATE INDEX turns_user_time ON {s}.turns (user_id, timestamp);
CREATE TABLE {s}.turn_terms (
    user_id text NOT NULL,
    term text NOT NULL,
    turn_id bigint NOT NULL REFERENCES {s}.turns(id) ON DELETE CASCADE,
    tf integer NOT NULL,
    dl integer NOT NULL,
    PRIMARY KEY (user_id, term, turn_id)
);
CREATE INDEX turn_terms_turn ON {s}.turn_terms (turn_id);
CREATE TABLE {s}.turn_blocks (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    session_id text NOT NULL,
    block integer NOT NULL,
    length integer NOT NULL DEFAULT 0,
    UNIQUE (user_id, session_id, block)
);
CREATE TABLE {s}.block_terms (
    user_id text NOT NULL,
    term text NOT NULL,
    block_id bigint NOT NULL REFERENCES {s}.turn_blocks(id) ON DELETE CASCADE,
    tf integer NOT NULL,
    PRIMARY KEY (user_id, term, block_id)
);
CREATE TABLE {s}.term_stats (
    user_id text NOT NULL,
    kind text NOT NULL,
    docs bigint NOT NULL,
    tokens bigint NOT NULL,
    PRIMARY KEY (user_id, kind)
);
CREATE TABLE {s}.turn_events (
    user_id text NOT NULL,
    turn_id bigint NOT NULL REFERENCES {s}.turns(id) ON DELETE CASCADE,
    start_at double precision NOT NULL,
    end_at double precision NOT NULL,
    precision text NOT NULL,
    words text NOT NULL
);
CREATE INDEX turn_events_turn ON {s}.turn_events (turn_id)
"""


def m001_turns(cur: Cursor, schema: sql.Identifier) -> None:
    """Turns, their postings, session blocks, BM25 statistics and event windows."""
    for statement in _M001.split(";"):
        cur.execute(sql.SQL(statement).format(s=schema))


def m002_turn_vectors(cur: Cursor, schema: sql.Identifier) -> None:
    """Dense vectors: pgvector's ``vector`` when available, else float32 ``bytea``."""
    kind = "vector" if has_pgvector(cur) else "bytea"
    cur.execute(sql.SQL(
        "CREATE TABLE {s}.turn_vectors (turn_id bigint PRIMARY KEY REFERENCES {s}.turns(id)"
        " ON DELETE CASCADE, user_id text NOT NULL, model text NOT NULL, vec " + kind
        + " NOT NULL)").format(s=schema))


def m003_row_security(cur: Cursor, schema: sql.Identifier) -> None:
    """Row-level security on every table (see the module docstring)."""
    enable_row_security(cur, schema, _FIRST_TABLES)


def m004_read_all(cur: Cursor, schema: sql.Identifier) -> None:
    """The admin read of every user's rows (:data:`READ_ALL_SETTING`), ``SELECT`` only."""
    enable_read_all(cur, schema, _FIRST_TABLES)


def m005_vectors_by_user(cur: Cursor, schema: sql.Identifier) -> None:
    """The nearest-turn search reads one scope's vectors of one model: an index for it."""
    cur.execute(sql.SQL("CREATE INDEX turn_vectors_user ON {s}.turn_vectors (user_id, model)"
                        ).format(s=schema))


def m006_turn_words(cur: Cursor, schema: sql.Identifier) -> None:
    """Each user's vocabulary: every word of the user's turns and its float32 vector by
    model (query expansion, :mod:`.expand`), under row-level security like the rest."""
    cur.execute(sql.SQL(
        "CREATE TABLE {s}.turn_words (user_id text NOT NULL, model text NOT NULL,"
        " word text NOT NULL, vec bytea NOT NULL, PRIMARY KEY (user_id, model, word))"
    ).format(s=schema))
    enable_row_security(cur, schema, ("turn_words",))
    enable_read_all(cur, schema, ("turn_words",))


MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_turns", m001_turns),
    ("m002_turn_vectors", m002_turn_vectors),
    ("m003_row_security", m003_row_security),
    ("m004_read_all", m004_read_all),
    ("m005_vectors_by_user", m005_vectors_by_user),
    ("m006_turn_words", m006_turn_words),
]


def migrate(conn: psycopg.Connection[Any], schema: str,
            migrations: list[tuple[str, Migration]] = MIGRATIONS,
            table: str = LEDGER_TABLE) -> list[str]:
    """Apply the pending ``migrations`` recorded in ``table`` (autocommit connection);
    return their names. ``MigrationError`` names the one that failed."""
    ident = sql.Identifier(schema)
    try:
        ensure_ledger(conn, ident, table)
    except psycopg.Error as exc:
        raise MigrationError(f"cannot prepare schema {schema!r}: {exc}") from exc
    return runner.migrate(migrations, SchemaLedger(conn, ident, table=table), stop_before=None)
