"""What ``memoryport sessions rebuild-index`` puts back in a PostgreSQL session store, and
what ``memoryport doctor`` checks is there: the indexes the store's queries rely on and
the triggers of migration m060 that keep ``messages.session_id``'s rules.

A migration runs once per schema, so an index or trigger dropped by hand afterwards
(or a trigger disabled with ``ALTER TABLE ... DISABLE TRIGGER``) stays gone: opening the
store does not bring it back. :func:`repair` does, in the caller's transaction, as a role
that owns the tables (the one that runs the migrations):

* a missing index is created from :data:`INDEXES` (the definitions the migrations left;
  a test compares each with what the migrations built);
* when any m060 trigger is missing or not enabled, the four trigger functions are dropped
  (``CASCADE``: their triggers go too) and m060's own statements run again
  (:func:`memoryport.storage.sessions.postgres.migrations.m060_session_key_per_statement`),
  so the triggers come back exactly as the migration made them, enabled.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.sessions.postgres.migrations import (
    cjk_rows,
    m060_session_key_per_statement,
)

__all__ = ["INDEXES", "TRIGGERS", "repair", "trigger_problems"]

Cursor = psycopg.Cursor[Any]

INDEXES = {
    "messages_cjk_time": f"messages (timestamp, id) WHERE {cjk_rows()}",
    "messages_session": "messages (session_id, id)",
    "messages_time": "messages (timestamp, id)",
    "messages_tsv": "messages USING gin (tsv)",
    "sessions_active": "sessions (last_active_at)",
    "sessions_parent": "sessions (parent_session_id)",
    "sessions_source": "sessions (source)",
    "sessions_title": "sessions (lower(btrim(title)))",
    "sessions_user_active": "sessions (user_id, last_active_at)",
}
"""Index name -> what follows ``ON <schema>.`` in its ``CREATE INDEX`` (the migrations'
definitions; ``messages_content_trgm`` is optional and ``ensure_trigram_index``'s)."""

TRIGGERS = {
    "messages_session_check": "messages",
    "messages_session_moved": "messages",
    "sessions_delete_messages": "sessions",
    "sessions_key_kept": "sessions",
}
"""m060's triggers (each calls the function of the same name) -> their table."""

_ENABLED = ("O", "A")
"""``pg_trigger.tgenabled`` values of a trigger that fires in ordinary sessions (``D``:
disabled, ``R``: only on a replica)."""


def trigger_problems(cur: Cursor, schema: sql.Identifier) -> dict[str, str]:
    """m060 triggers of ``schema`` that are ``missing`` or ``disabled``, by name."""
    rows = cur.execute(
        "SELECT t.tgname, c.relname, t.tgenabled FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = %s::regnamespace"
        " AND t.tgname = ANY(%s) AND NOT t.tgisinternal",
        (schema.as_string(cur), list(TRIGGERS)),
    ).fetchall()
    found = {name: str(enabled) for name, table, enabled in rows if TRIGGERS[name] == table}
    return {
        name: "missing" if name not in found else "disabled"
        for name in TRIGGERS
        if found.get(name) not in _ENABLED
    }


def repair(cur: Cursor, schema: sql.Identifier) -> list[str]:
    """Create missing :data:`INDEXES` and restore m060's triggers when one is missing or
    disabled (see the module docstring); return what was done, one line each."""
    present = {
        row[0]
        for row in cur.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'i' AND relnamespace = %s::regnamespace",
            (schema.as_string(cur),),
        ).fetchall()
    }
    done = []
    for index, definition in INDEXES.items():
        if index not in present:
            cur.execute(
                sql.SQL(f"CREATE INDEX IF NOT EXISTS {{i}} ON {{s}}.{definition}").format(
                    i=sql.Identifier(index), s=schema
                )
            )
            done.append(f"index {index} created")
    problems = trigger_problems(cur, schema)
    if problems:
        for function in TRIGGERS:
            cur.execute(
                sql.SQL("DROP FUNCTION IF EXISTS {s}.{f}() CASCADE").format(
                    s=schema, f=sql.Identifier(function)
                )
            )
        m060_session_key_per_statement(cur, schema)
        done.extend(f"trigger {t} restored (was {why})" for t, why in sorted(problems.items()))
    return done
