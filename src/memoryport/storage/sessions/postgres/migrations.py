"""Named, append-only schema migrations for the PostgreSQL session store.

Each migration is a function taking an open cursor and the quoted schema name;
:func:`migrate` applies the pending ones with the shared runner
(:mod:`memoryport.storage.sessions.migrate`), each in its own transaction together with
its record in ``<schema>._migrations``. Never edit or reorder a released migration: add
a new one at the end.

Several machines may open the same store at once, so every migration transaction
first takes a database-wide advisory lock and re-reads ``_migrations`` under it: the
first process migrates, the others wait and then find nothing to do (the ledger:
:mod:`memoryport.storage.postgres_ledger`).

Schema notes (the PostgreSQL twin of the SQLite layout):

* ``messages.tsv`` is a ``tsvector`` over ``content``, ``tool_name`` and ``tool_calls``
  with a GIN index: Snowball English stems, no stopword list; ASCII punctuation
  separates words and Latin diacritics are stripped, so that ``/usr/lib/foo.py``,
  ``chat-send`` or ``user@example.com`` index as separate words (as SQLite's
  ``unicode61`` tokenizer does) and ``café`` matches ``cafe``. Until m030 a stored
  generated column (``to_tsvector`` with ``memoryport_english`` over the text folded by
  ``SEARCH_FOLD``); since m030 the store writes it (``memoryport.storage.search_lexemes``,
  which builds the queries' lexemes too).
* ``messages_content_trgm`` is a partial GIN ``pg_trgm`` index over the ``content`` of
  messages containing CJK, kana or Hangul text (the SQLite trigram index covers the same
  rows; predicate :func:`cjk_rows` since m051). ``pg_trgm`` is optional: when the
  extension cannot be created (not installed, no privilege) the index is skipped,
  ``meta.trigram_index`` says ``missing``, and CJK search still works by an unindexed
  ``ILIKE`` scan. ``rebuild_index`` retries.
* ``messages.session_id`` has no foreign key since m060: statement-level triggers keep
  its rules (checked once per ``INSERT``, same locks, deletes cascade).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from memoryport.errors import MigrationError
from memoryport.storage import search_lexemes
from memoryport.storage.postgres_ledger import SchemaLedger, ensure_ledger, recorded
from memoryport.storage.search_lexemes import SEARCH_FOLD
from memoryport.storage.sessions import migrate as runner
from memoryport.storage.sessions.temporal import event_rows

__all__ = [
    "CJK_REGEX",
    "MIGRATIONS",
    "POLICIES",
    "PUNCTUATION_REGEX",
    "SCOPE_SETTING",
    "SEARCH_VIEW",
    "SESSION_VIEW",
    "Migration",
    "applied",
    "cjk_rows",
    "ensure_trigram_index",
    "grant_app_role",
    "migrate",
    "pending",
    "search_doc",
    "ts_config",
]

Cursor = psycopg.Cursor[Any]
Migration = Callable[[Cursor, sql.Identifier], None]

MIGRATIONS: list[tuple[str, Migration]] = []

CJK_REGEX = (
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002a6df]"
)
"""POSIX regex matching text with CJK, kana or Hangul characters (the trigram scope)."""


def cjk_rows(alias: str = "") -> str:
    """The SQL condition of :func:`m050_cjk_time_index`'s rows (``alias``: ``m.`` in a
    query): text with a multibyte character (``octet_length <> length``, never true of
    ASCII, so the regex runs on few rows) that :data:`CJK_REGEX` matches. A query must
    repeat it word for word for the planner to see that the index holds its rows."""
    regex = "'" + CJK_REGEX.replace("'", "''") + "'"
    column = f"{alias}content"
    return f"octet_length({column}) <> length({column}) AND {column} ~ {regex}"


def ts_config(schema: sql.Identifier) -> sql.Composed:
    """The store's text search configuration as a ``regconfig`` expression."""
    return sql.SQL("{}::regconfig").format(
        sql.Literal(sql.SQL("{s}.memoryport_english").format(s=schema).as_string())
    )


def _search_doc_v1(schema: sql.Identifier) -> sql.Composed:
    """The ``tsv`` expression of m002 (one ``translate`` over diacritics and punctuation)."""
    return sql.SQL(
        "to_tsvector({cfg}, translate("
        "content || ' ' || coalesce(tool_name, '') || ' ' || coalesce(tool_calls, ''), {a}, {b}))"
    ).format(cfg=ts_config(schema), a=sql.Literal(SEARCH_FOLD[0]), b=sql.Literal(SEARCH_FOLD[1]))


_PUNCTUATION = SEARCH_FOLD[1].count(" ")
PUNCTUATION_REGEX = "[!-/:-@[-`{-~\ue000\ue001]"
"""The punctuation of :data:`SEARCH_FOLD` as one bracket expression (ASCII ranges)."""


def search_doc(schema: sql.Identifier) -> sql.Composed:
    """The generated ``tsv`` column's expression (columns unqualified).

    The same folding as :func:`fold_text`, computed fast: diacritics are translated only
    in text that is not pure ASCII (``octet_length = length``), and punctuation becomes
    spaces through one ``regexp_replace``. PostgreSQL's ``translate`` compares every
    character with every one of the ~400 ``from`` characters, which made one
    ``translate`` 90% of an insert's cost (m008 replaced m002's expression).
    """
    text = "content || ' ' || coalesce(tool_name, '') || ' ' || coalesce(tool_calls, '')"
    return sql.SQL(
        "to_tsvector({cfg}, regexp_replace(CASE WHEN octet_length({t}) = length({t})"
        " THEN {t} ELSE translate({t}, {a}, {b}) END, {punct}, ' ', 'g'))"
    ).format(
        cfg=ts_config(schema),
        t=sql.SQL(f"({text})"),
        a=sql.Literal(SEARCH_FOLD[0][:-_PUNCTUATION]),
        b=sql.Literal(SEARCH_FOLD[1][:-_PUNCTUATION]),
        punct=sql.Literal(PUNCTUATION_REGEX),
    )


def _migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@_migration
def m001_initial(cur: Cursor, schema: sql.Identifier) -> None:
    """Sessions, messages and key/value metadata."""
    cur.execute(
        sql.SQL("""
    CREATE TABLE {s}.sessions (
        id text PRIMARY KEY,
        source text NOT NULL,
        user_id text,
        model text NOT NULL DEFAULT '',
        title text NOT NULL DEFAULT '',
        parent_session_id text REFERENCES {s}.sessions(id) ON DELETE SET NULL
            DEFERRABLE INITIALLY IMMEDIATE,
        started_at double precision NOT NULL,
        ended_at double precision,
        end_reason text NOT NULL DEFAULT '',
        last_active_at double precision NOT NULL,
        message_count integer NOT NULL DEFAULT 0,
        tool_call_count integer NOT NULL DEFAULT 0,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        cache_read_tokens bigint NOT NULL DEFAULT 0,
        cache_write_tokens bigint NOT NULL DEFAULT 0,
        reasoning_tokens bigint NOT NULL DEFAULT 0,
        estimated_cost_usd double precision,
        actual_cost_usd double precision,
        metadata text
    );
    CREATE INDEX sessions_parent ON {s}.sessions(parent_session_id);
    CREATE TABLE {s}.messages (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        session_id text NOT NULL REFERENCES {s}.sessions(id) ON DELETE CASCADE,
        role text NOT NULL,
        content text NOT NULL DEFAULT '',
        tool_name text,
        tool_calls text,
        tool_call_id text,
        reasoning text,
        timestamp double precision NOT NULL,
        metadata text
    );
    CREATE INDEX messages_session ON {s}.messages(session_id, id);
    CREATE TABLE {s}.meta (key text PRIMARY KEY, value text NOT NULL);
    """).format(s=schema)
    )


@_migration
def m002_fts_indexes(cur: Cursor, schema: sql.Identifier) -> None:
    """The generated ``tsvector`` column with its GIN index, and the optional trigram index.

    ``memoryport_english`` is ``english`` (Snowball stemming) without the stopword list,
    like SQLite's ``porter`` tokenizer: ``what?`` or the phrase ``"to be or not"`` must
    stay searchable. Natural-language queries drop stopwords in the shared parser.
    """
    for statement in (
        "CREATE TEXT SEARCH DICTIONARY {s}.memoryport_english_stem"
        " (TEMPLATE = pg_catalog.snowball, LANGUAGE = english)",
        "CREATE TEXT SEARCH CONFIGURATION {s}.memoryport_english (COPY = pg_catalog.english)",
        "ALTER TEXT SEARCH CONFIGURATION {s}.memoryport_english"
        " ALTER MAPPING REPLACE pg_catalog.english_stem WITH {s}.memoryport_english_stem",
    ):
        cur.execute(sql.SQL(statement).format(s=schema))
    _add_tsv(cur, schema, _search_doc_v1(schema))
    ensure_trigram_index(cur, schema)


def _add_tsv(cur: Cursor, schema: sql.Identifier, doc: sql.Composable) -> None:
    cur.execute(
        sql.SQL(
            "ALTER TABLE {s}.messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({doc}) STORED"
        ).format(s=schema, doc=doc)
    )
    cur.execute(
        sql.SQL("CREATE INDEX messages_tsv ON {s}.messages USING gin (tsv)").format(s=schema)
    )


@_migration
def m003_session_browse_indexes(cur: Cursor, schema: sql.Identifier) -> None:
    """Indexes for per-user browse (user, last activity) and source filters."""
    for statement in (
        "CREATE INDEX sessions_user_active ON {s}.sessions(user_id, last_active_at)",
        "CREATE INDEX sessions_active ON {s}.sessions(last_active_at)",
        "CREATE INDEX sessions_source ON {s}.sessions(source)",
    ):
        cur.execute(sql.SQL(statement).format(s=schema))


@_migration
def m004_session_title_index(cur: Cursor, schema: sql.Identifier) -> None:
    """An index for discover's exact session-title match (trimmed, case-insensitive)."""
    cur.execute(
        sql.SQL("CREATE INDEX sessions_title ON {s}.sessions (lower(btrim(title)))").format(
            s=schema
        )
    )


@_migration
def m006_message_time_index(cur: Cursor, schema: sql.Identifier) -> None:
    """An index for chronological search (``sort=newest/oldest`` order by message time,
    ties by id). Named like its SQLite twin; SQLite's m005 (bulk FTS insert) has no
    PostgreSQL counterpart."""
    cur.execute(
        sql.SQL("CREATE INDEX messages_time ON {s}.messages (timestamp, id)").format(s=schema)
    )


@_migration
def m007_message_events(cur: Cursor, schema: sql.Identifier) -> None:
    """Event windows resolved at write time from each message's words against its own
    timestamp (precision and original words kept), back-filled; the twin of SQLite's m007.
    Rows go with their message (``ON DELETE CASCADE``)."""
    cur.execute(
        sql.SQL(
            "CREATE TABLE {s}.message_events ("
            " message_id BIGINT NOT NULL REFERENCES {s}.messages(id) ON DELETE CASCADE,"
            " start_at DOUBLE PRECISION NOT NULL, end_at DOUBLE PRECISION NOT NULL,"
            " precision TEXT NOT NULL, words TEXT NOT NULL)"
        ).format(s=schema)
    )
    cur.execute(
        sql.SQL("CREATE INDEX message_events_message ON {s}.message_events (message_id)").format(
            s=schema
        )
    )
    rows = cur.execute(
        sql.SQL("SELECT id, content, timestamp FROM {s}.messages").format(s=schema)
    ).fetchall()
    events = [e for i, content, stamp in rows for e in event_rows(i, content, stamp)]
    if events:
        cur.executemany(
            sql.SQL("INSERT INTO {s}.message_events VALUES (%s, %s, %s, %s, %s)").format(s=schema),
            events,
        )


@_migration
def m008_fast_search_doc(cur: Cursor, schema: sql.Identifier) -> None:
    """The same ``tsv`` values from a 10x cheaper expression (see :func:`search_doc`):
    the column is recomputed once and its GIN index rebuilt."""
    cur.execute(sql.SQL("ALTER TABLE {s}.messages DROP COLUMN tsv").format(s=schema))
    _add_tsv(cur, schema, search_doc(schema))


SCOPE_SETTING = "memoryport.user_id"
"""The per-connection setting the row-level security policies read: a user id, or ``*``
for every user (an unbound store); unset, the policies let no row through."""

_SCOPE = f"current_setting('{SCOPE_SETTING}', true)"
POLICIES = {
    "sessions": f"{_SCOPE} = '*' OR user_id = {_SCOPE}",
    "messages": (
        f"{_SCOPE} = '*' OR EXISTS (SELECT 1 FROM {{s}}.sessions p"
        f" WHERE p.id = session_id AND p.user_id = {_SCOPE})"
    ),
    "message_events": (
        f"{_SCOPE} = '*' OR EXISTS (SELECT 1 FROM {{s}}.messages p WHERE p.id = message_id)"
    ),
}
"""Table -> the ``USING``/``WITH CHECK`` expression of its ``user_scope`` policy."""


@_migration
def m009_row_security(cur: Cursor, schema: sql.Identifier) -> None:
    """Row-level security: a connection sees and writes only the rows of the user in its
    ``memoryport.user_id`` setting (``*``: all users). ``FORCE`` applies the policies to
    the tables' owner too; only superusers and ``BYPASSRLS`` roles are exempt."""
    for table, expression in POLICIES.items():
        fmt = {"s": schema, "t": sql.Identifier(table)}
        cur.execute(sql.SQL("ALTER TABLE {s}.{t} ENABLE ROW LEVEL SECURITY").format(**fmt))
        cur.execute(sql.SQL("ALTER TABLE {s}.{t} FORCE ROW LEVEL SECURITY").format(**fmt))
        cur.execute(
            sql.SQL(f"CREATE POLICY user_scope ON {{s}}.{{t}} USING ({expression})").format(**fmt)
        )


SEARCH_VIEW = "message_search"
"""The view word searches read ``messages`` through (see :func:`m020_message_search_view`)."""


@_migration
def m020_message_search_view(cur: Cursor, schema: sql.Identifier) -> None:
    """``message_search``: ``messages`` filtered by the ``user_scope`` policy's own
    expression, read with the view owner's rights.

    Under row-level security PostgreSQL lets an index serve a condition only when its
    operator is ``LEAKPROOF`` (``restriction_is_securely_promotable``), and ``@@``,
    ``ILIKE`` and ``~`` are not, so every word search on a policy-bound connection read
    the whole table. A view runs with its owner's rights: when the owner is not bound
    (an application role uses the store, see :func:`grant_app_role`) the word condition
    is an ordinary qual that the GIN and trigram indexes serve, and the view's ``WHERE``
    -- the same expression and setting as the policy -- keeps every other user's rows
    out. Not a ``security_barrier`` view (that would hold the word condition above the
    filter again); ``CHECK OPTION`` holds a write through the view to the same rule.
    While the owner is bound (``FORCE``, one role for everything) the policies apply
    inside the view as well. A later migration dropping a column of ``messages`` must
    drop and re-create this view."""
    cur.execute(
        sql.SQL(
            f"CREATE VIEW {{s}}.{{v}} AS SELECT * FROM {{s}}.messages"
            f" WHERE {POLICIES['messages']} WITH CASCADED CHECK OPTION"
        ).format(s=schema, v=sql.Identifier(SEARCH_VIEW))
    )


@_migration
def m030_stored_lexemes(cur: Cursor, schema: sql.Identifier) -> None:
    """``tsv`` becomes a plain column the store writes (``search_lexemes``: folded, split
    and stemmed in Python, sent as a ``tsvector`` literal), and every stored row is
    re-stamped with those lexemes, so old rows match the queries built by the same
    function.

    ``DROP EXPRESSION`` keeps the column (the ``message_search`` view and its grants stay);
    the GIN index is dropped for the re-stamp and rebuilt once after it (faster than
    updating it row by row). Writing the column costs a few us of client time per
    message where ``to_tsvector`` and the punctuation ``regexp_replace`` cost the server
    ~40 us."""
    cur.execute(
        sql.SQL("ALTER TABLE {s}.messages ALTER COLUMN tsv DROP EXPRESSION").format(s=schema)
    )
    cur.execute(sql.SQL("DROP INDEX {s}.messages_tsv").format(s=schema))
    search_lexemes.restamp(cur, schema, stale_only=False)
    cur.execute(
        sql.SQL("CREATE INDEX messages_tsv ON {s}.messages USING gin (tsv)").format(s=schema)
    )
    cur.execute(
        sql.SQL(
            "INSERT INTO {s}.meta(key, value) VALUES ('search_lexemes', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ).format(s=schema),
        (search_lexemes.VERSION,),
    )


SESSION_VIEW = "session_search"
"""The view discover's exact-title lookup reads ``sessions`` through (see
:func:`m040_session_search_view`)."""


@_migration
def m040_session_search_view(cur: Cursor, schema: sql.Identifier) -> None:
    """``session_search``: ``sessions`` filtered by the ``user_scope`` policy's own
    expression, read with the view owner's rights, as :func:`m020_message_search_view`
    does for ``messages``. Under the policies the title index (``lower(btrim(title))``,
    m004) cannot serve a lookup (``lower`` and ``btrim`` are not ``LEAKPROOF``), so
    discover's exact-title match read every session (~3 ms at 9,000 sessions, twice for
    a quoted query); through the view it is an index probe."""
    cur.execute(
        sql.SQL(
            f"CREATE VIEW {{s}}.{{v}} AS SELECT * FROM {{s}}.sessions"
            f" WHERE {POLICIES['sessions']} WITH CASCADED CHECK OPTION"
        ).format(s=schema, v=sql.Identifier(SESSION_VIEW))
    )


@_migration
def m050_cjk_time_index(cur: Cursor, schema: sql.Identifier) -> None:
    """``messages_cjk_time``: the ``messages_time`` order (time, id) over the messages
    with CJK, kana or Hangul text only (2% of the benchmark's). A short CJK query (the
    ``like`` plan: ILIKE, newest first) walks it instead of every message, since all
    its matches are CJK rows: ``東京`` (0.4% of the messages) read ~10,000 rows to find
    a page at 100k messages, ~500 through this index. Built from every row once (~1-2 s
    at 1M messages). Every insert tests the predicate (:func:`cjk_rows`): the length
    test first keeps the regex off ASCII rows (+0.4 us a message instead of +1.6 us)."""
    cur.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS messages_cjk_time ON {s}.messages (timestamp, id)"
            f" WHERE {cjk_rows()}"
        ).format(s=schema)
    )


@_migration
def m051_trigram_cheap_predicate(cur: Cursor, schema: sql.Identifier) -> None:
    """``messages_content_trgm`` rebuilt with :func:`cjk_rows` as its predicate (m002's,
    the CJK regex alone, cost every ASCII insert ~1-1.6 us of server time); the trigram
    search repeats it. Built beside the old index (reads go on), then replacing it; a
    store without it (no ``pg_trgm``) or with the new predicate already is left alone."""
    name = sql.SQL("{s}.messages_content_trgm").format(s=schema).as_string(cur)
    row = cur.execute(
        "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = to_regclass(%s)",
        (name,),
    ).fetchone()
    ops = None if row is None or "octet_length" in str(row[0]) else _trigram_ops(cur)
    if ops is None:
        return
    for statement in (
        "CREATE INDEX messages_content_trgm_m051 ON {s}.messages"
        f" USING gin (content {{ops}}) WHERE {cjk_rows()}",
        "DROP INDEX {s}.messages_content_trgm",
        "ALTER INDEX {s}.messages_content_trgm_m051 RENAME TO messages_content_trgm",
    ):
        cur.execute(sql.SQL(statement).format(s=schema, ops=ops))


_KEY_VIOLATION = (
    "RAISE EXCEPTION 'a message must belong to a stored session: there is no session %"
    " (create it first)', quote_literal({missing}) USING ERRCODE = 'foreign_key_violation'"
)
_SESSION_KEY = {
    "messages_session_check": (
        "AFTER INSERT ON {s}.messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT",
        "DECLARE missing text; BEGIN SELECT d.session_id INTO missing FROM (SELECT DISTINCT"
        " session_id FROM new_rows) d WHERE NOT EXISTS (SELECT FROM {s}.sessions WHERE id ="
        " d.session_id FOR KEY SHARE) LIMIT 1; IF FOUND THEN "
        + _KEY_VIOLATION.format(missing="missing")
        + "; END IF; RETURN NULL; END",
    ),
    "messages_session_moved": (
        "AFTER UPDATE OF session_id ON {s}.messages FOR EACH ROW"
        " WHEN (OLD.session_id IS DISTINCT FROM NEW.session_id)",
        "BEGIN PERFORM FROM {s}.sessions WHERE id = NEW.session_id FOR KEY SHARE;"
        " IF NOT FOUND THEN "
        + _KEY_VIOLATION.format(missing="NEW.session_id")
        + "; END IF; RETURN NULL; END",
    ),
    "sessions_delete_messages": (
        "BEFORE DELETE ON {s}.sessions FOR EACH ROW",
        "BEGIN DELETE FROM {s}.messages WHERE session_id = OLD.id; RETURN OLD; END",
    ),
    "sessions_key_kept": (
        "AFTER UPDATE OF id ON {s}.sessions FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id)",
        "BEGIN IF EXISTS (SELECT 1 FROM {s}.messages WHERE session_id = OLD.id) AND NOT EXISTS"
        " (SELECT 1 FROM {s}.sessions WHERE id = OLD.id) THEN RAISE EXCEPTION"
        " 'session % still has messages: its id cannot change', quote_literal(OLD.id)"
        " USING ERRCODE = 'foreign_key_violation'; END IF; RETURN NULL; END",
    ),
}
"""m060's triggers: name -> (when it fires, the PL/pgSQL body of its function)."""
_KEYED = ("messages", "sessions")


@_migration
def m060_session_key_per_statement(cur: Cursor, schema: sql.Identifier) -> None:
    """``messages.session_id``'s foreign key (checked per row through SPI, ~12% of an
    append's server time) replaced by triggers keeping its rules: an ``INSERT``'s distinct
    session ids are checked once and their rows get the key's ``KEY SHARE`` lock (a
    concurrent delete waits for the append's commit, or the append fails); a message
    for, or moved to, a missing session is refused; deleting a session deletes its
    messages first (``ON DELETE CASCADE``); a referenced id cannot change. As the key's
    checks did, the functions run as the schema's owner."""
    fk = "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'"
    keyed = [
        sql.SQL("{s}.{t}").format(s=schema, t=sql.Identifier(t)).as_string(cur) for t in _KEYED
    ]
    for (key,) in cur.execute(fk + " AND confrelid = %s::regclass", keyed).fetchall():
        cur.execute(
            sql.SQL("ALTER TABLE {s}.messages DROP CONSTRAINT {k}").format(
                s=schema, k=sql.Identifier(key)
            )
        )
    for trigger, (when, body) in _SESSION_KEY.items():
        fmt = {"s": schema, "f": sql.Identifier(trigger)}
        cur.execute(
            sql.SQL(
                "CREATE FUNCTION {s}.{f}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
                " SET search_path = pg_catalog, pg_temp AS {body}"
            ).format(**fmt, body=sql.Literal(sql.SQL(body).format(s=schema).as_string(cur)))
        )
        cur.execute(
            sql.SQL(f"CREATE TRIGGER {{f}} {when} EXECUTE FUNCTION {{s}}.{{f}}()").format(**fmt)
        )


def grant_app_role(conn: psycopg.Connection[Any], schema: str, role: str) -> None:
    """Let ``role`` (an ordinary login role, not the owner) use the store at ``schema``;
    run by the schema's owner after :func:`migrate`. Idempotent.

    ``role`` gets reads and writes on the schema's tables (the ``user_scope`` policies
    bind it: it is not their owner), and only ``SELECT`` on ``_migrations``,
    :data:`SEARCH_VIEW` and :data:`SESSION_VIEW`. The policies stop
    binding the owner (``NO FORCE``), which makes the view fast for ``role``: keep the
    owner for migrations and administration, and connect agents as ``role``.
    """
    fmt = {"s": sql.Identifier(schema), "r": sql.Identifier(role)}
    statements = [
        "GRANT USAGE ON SCHEMA {s} TO {r}",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
        "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        "REVOKE INSERT, UPDATE, DELETE ON {s}._migrations, {s}.{v}, {s}.{w} FROM {r}",
        *(f"ALTER TABLE {{s}}.{t} NO FORCE ROW LEVEL SECURITY" for t in POLICIES),
    ]
    with conn.transaction():
        for statement in statements:
            conn.execute(
                sql.SQL(statement).format(
                    **fmt, v=sql.Identifier(SEARCH_VIEW), w=sql.Identifier(SESSION_VIEW)
                )
            )


def _trigram_ops(cur: Cursor) -> sql.Composable | None:
    """Create ``pg_trgm`` if possible; return its ``gin_trgm_ops`` operator class or None."""
    try:
        with cur.connection.transaction():
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except psycopg.Error:
        return None
    row = cur.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'pg_trgm'"
    ).fetchone()
    if row is None:
        return None
    return sql.SQL("{}.gin_trgm_ops").format(sql.Identifier(row[0]))


def ensure_trigram_index(cur: Cursor, schema: sql.Identifier) -> bool:
    """Create the partial trigram index if ``pg_trgm`` allows; record the outcome in meta.

    Its predicate is :func:`cjk_rows` (m051 rebuilt m002's). Runs inside the caller's
    transaction (the extension attempt uses a savepoint). Returns True when the index
    exists afterwards.
    """
    ops = _trigram_ops(cur)
    if ops is not None:
        cur.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS messages_content_trgm ON {s}.messages "
                f"USING gin (content {{ops}}) WHERE {cjk_rows()}"
            ).format(s=schema, ops=ops)
        )
    state = "present" if ops is not None else "missing"
    cur.execute(
        sql.SQL(
            "INSERT INTO {s}.meta(key, value) VALUES ('trigram_index', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ).format(s=schema),
        (state,),
    )
    return ops is not None


def applied(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Names of applied migrations, in the order they were defined."""
    return runner.applied(MIGRATIONS, recorded(conn, schema))


def pending(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Names of migrations not yet applied."""
    return runner.pending(MIGRATIONS, recorded(conn, schema))


def migrate(
    conn: psycopg.Connection[Any], schema: str, *, stop_before: str | None = None
) -> list[str]:
    """Create ``schema`` if needed and apply pending migrations; return the names applied.

    ``conn`` must be in autocommit mode. Each migration and its ``_migrations`` record
    commit together under the advisory lock (:mod:`memoryport.storage.postgres_ledger`);
    a failure rolls that one back and raises ``MigrationError``, leaving the schema at
    the last good migration.
    """
    ident = sql.Identifier(schema)
    try:
        ensure_ledger(conn, ident)
    except psycopg.Error as exc:
        raise MigrationError(f"cannot prepare schema {schema!r}: {exc}") from exc
    ledger = SchemaLedger(conn, ident, SCOPE_SETTING)
    return runner.migrate(MIGRATIONS, ledger, stop_before=stop_before)
