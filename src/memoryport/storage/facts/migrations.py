"""Named, append-only schema migrations of the fact store (SQLite).

Applied with the shared runner (:mod:`memoryport.storage.sessions.migrate`), each in its
own ``BEGIN IMMEDIATE`` transaction together with its record. The fact store shares its
database file (``<home>/holographic.db``) with the turn index, so its ledger is its own
table, ``_migrations_facts``: each component migrates in its own namespace. Never edit
or reorder a released migration: add a new one at the end.

Schema (designed for provenance, history and temporal validity as well):

* ``facts`` -- one row per fact version: content, category, tags, the extracted
  ``subject``/``relation``/``qualifier``/``value``/``negated``, trust and counters,
  ``content_hash``, ``valid_from``/``valid_to`` (when true in the world),
  ``recorded_at``/``retired_at`` (when the store learned and retired it),
  ``retired_reason``, ``superseded_by``, and provenance (``session_id``,
  ``message_id``, ``source_kind``, ``actor``, ``speaker``: who said it; ``source_text``:
  the message it was read from, m002), scoped by
  ``user_id`` ('' = no user).
  A live fact's normalised content is unique per user (``facts_live_hash``).
* ``entities`` / ``fact_entities`` -- the entity index (exact keys, per user).
* ``facts_fts`` -- external-content FTS5 over ``content`` and ``tags``; its UPDATE
  trigger fires only ``AFTER UPDATE OF content, tags``.
* ``fact_revisions`` -- every add/update/retire/remove/feedback appends one: who (actor),
  when, the session and tool call, and the fact before and after (JSON).
* ``fact_generation`` -- one counter, bumped by triggers on every write to ``facts``,
  ``entities`` and ``fact_entities`` (m004; the search's cache, :mod:`.searchcache`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memoryport.storage.facts import cleanup
from memoryport.storage.sessions import migrate as runner
from memoryport.storage.sqlite_ledger import ConnLedger

__all__ = ["LEDGER_TABLE", "MIGRATIONS", "applied", "migrate", "pending"]

LEDGER_TABLE = "_migrations_facts"
"""The fact store's migration ledger (its own namespace in the shared database file)."""

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[tuple[str, Migration]] = []


def _migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def _script(conn: sqlite3.Connection, script: str) -> None:
    """Run ``script`` statement by statement inside the open transaction."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        conn.execute(buffer)


_M001 = """
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        category TEXT NOT NULL DEFAULT 'general',
        tags TEXT NOT NULL DEFAULT '',
        subject TEXT NOT NULL DEFAULT '',
        relation TEXT NOT NULL DEFAULT '',
        qualifier TEXT NOT NULL DEFAULT '',
        value TEXT NOT NULL DEFAULT '',
        negated INTEGER NOT NULL DEFAULT 0,
        trust_score REAL NOT NULL DEFAULT 0.5,
        retrieval_count INTEGER NOT NULL DEFAULT 0,
        helpful_count INTEGER NOT NULL DEFAULT 0,
        unhelpful_count INTEGER NOT NULL DEFAULT 0,
        valid_from REAL,
        valid_to REAL,
        recorded_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        retired_at REAL,
        retired_reason TEXT NOT NULL DEFAULT '',
        superseded_by INTEGER REFERENCES facts(id) ON DELETE SET NULL,
        session_id TEXT NOT NULL DEFAULT '',
        message_id TEXT NOT NULL DEFAULT '',
        source_kind TEXT NOT NULL DEFAULT '',
        actor TEXT NOT NULL DEFAULT '',
        speaker TEXT NOT NULL DEFAULT ''
    );
    CREATE UNIQUE INDEX facts_live_hash ON facts(user_id, content_hash)
        WHERE retired_at IS NULL;
    CREATE INDEX facts_live_relation ON facts(user_id, subject, relation)
        WHERE retired_at IS NULL;
    CREATE INDEX facts_user_recorded ON facts(user_id, recorded_at);
    CREATE INDEX facts_superseded ON facts(superseded_by) WHERE superseded_by IS NOT NULL;
    CREATE TABLE entities (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL DEFAULT '',
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        created_at REAL NOT NULL,
        UNIQUE (user_id, key)
    );
    CREATE TABLE fact_entities (
        fact_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
        entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        PRIMARY KEY (fact_id, entity_id)
    ) WITHOUT ROWID;
    CREATE INDEX fact_entities_entity ON fact_entities(entity_id, fact_id);
    CREATE VIRTUAL TABLE facts_fts USING fts5(
        content, tags, content='facts', content_rowid='id', tokenize='porter unicode61'
    );
    CREATE TRIGGER facts_fts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
    END;
    CREATE TRIGGER facts_fts_ad AFTER DELETE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content, tags)
        VALUES ('delete', old.id, old.content, old.tags);
    END;
    CREATE TRIGGER facts_fts_au AFTER UPDATE OF content, tags ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content, tags)
        VALUES ('delete', old.id, old.content, old.tags);
        INSERT INTO facts_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
    END;
    CREATE TABLE fact_revisions (
        id INTEGER PRIMARY KEY,
        fact_id INTEGER NOT NULL,
        user_id TEXT NOT NULL DEFAULT '',
        action TEXT NOT NULL,
        actor TEXT NOT NULL DEFAULT '',
        at REAL NOT NULL,
        session_id TEXT NOT NULL DEFAULT '',
        tool_call_id TEXT NOT NULL DEFAULT '',
        before TEXT,
        after TEXT
    );
    CREATE INDEX fact_revisions_fact ON fact_revisions(fact_id, id);
    CREATE INDEX fact_revisions_user ON fact_revisions(user_id, at);
"""


@_migration
def m001_facts(conn: sqlite3.Connection) -> None:
    """Facts, entities, the FTS index and revisions."""
    _script(conn, _M001)


@_migration
def m002_source_text(conn: sqlite3.Connection) -> None:
    """The text a fact was read from (the user's message or turn), for ``why``."""
    conn.execute("ALTER TABLE facts ADD COLUMN source_text TEXT NOT NULL DEFAULT ''")


@_migration
def m003_fact_events(conn: sqlite3.Connection) -> None:
    """The event window a fact's own words name, resolved at write time, and when the
    fact was stated (existing facts: their ``valid_from``) (issue 13)."""
    for column in ("event_start REAL", "event_end REAL",
                   "event_precision TEXT NOT NULL DEFAULT ''",
                   "event_words TEXT NOT NULL DEFAULT ''", "stated_at REAL"):
        conn.execute(f"ALTER TABLE facts ADD COLUMN {column}")
    conn.execute("UPDATE facts SET stated_at = coalesce(valid_from, recorded_at)")


_GENERATION_TABLES = ("facts", "entities", "fact_entities")


@_migration
def m004_fact_generation(conn: sqlite3.Connection) -> None:
    """``fact_generation``: one counter every write to ``facts``, ``entities`` or
    ``fact_entities`` bumps (triggers, in the writing transaction, whatever process
    writes), so a search may keep what it read while it is unchanged
    (:mod:`.searchcache`)."""
    conn.execute("CREATE TABLE fact_generation (id INTEGER PRIMARY KEY CHECK (id = 1),"
                 " n INTEGER NOT NULL)")
    conn.execute("INSERT INTO fact_generation (id, n) VALUES (1, 0)")
    for table in _GENERATION_TABLES:
        for event in ("INSERT", "UPDATE", "DELETE"):
            conn.execute(
                f"CREATE TRIGGER {table}_generation_{event[0].lower()} AFTER {event}"
                f" ON {table} BEGIN UPDATE fact_generation SET n = n + 1 WHERE id = 1; END"
            )


@_migration
def m005_function_word_links(conn: sqlite3.Connection) -> None:
    """Remove the entity links an older writer made from a function word read as a
    statement's subject ("The staging database is ..." -> entity "the"), and the
    entities left without a link; the current extractor decides (:mod:`.cleanup`). The
    deletes bump ``fact_generation`` (m004's triggers), so search caches drop."""
    rows = conn.execute(cleanup.CANDIDATES, cleanup.KEYS).fetchall()
    stale = cleanup.stale_links(rows)
    conn.executemany(cleanup.DELETE_LINK, [(fact, entity) for _, fact, entity in stale])
    orphans = sorted({entity for _, _, entity in stale})
    conn.executemany(cleanup.DELETE_ORPHAN, [(entity, entity) for entity in orphans])


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of the fact-store migrations applied to ``conn``'s database, in order."""
    return runner.applied(MIGRATIONS, ConnLedger(conn, LEDGER_TABLE).done())


def pending(conn: sqlite3.Connection) -> list[str]:
    """Names of the fact-store migrations not yet applied, in order."""
    return runner.pending(MIGRATIONS, ConnLedger(conn, LEDGER_TABLE).done())


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the pending migrations (``conn`` in autocommit mode); return their names.

    Raises ``MigrationError`` naming the migration that failed; the database stays at
    the last migration that succeeded.
    """
    return runner.migrate(MIGRATIONS, ConnLedger(conn, LEDGER_TABLE))
