"""JSONL export and import for the SQLite session store (same format as PostgreSQL)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import IO

from memoryport.errors import StoreError
from memoryport.storage.sessions._sqlite_rows import (
    INSERT_SESSION,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    message_from_row,
    scope_sql,
    session_from_row,
)
from memoryport.storage.sessions.helpers import export_line, message_values, session_values
from memoryport.storage.sessions.query import has_cjk
from memoryport.storage.sessions.records import ImportReport, MessageRecord, SessionRecord

__all__ = ["export_sessions", "import_entries"]


def export_sessions(
    conn: sqlite3.Connection,
    out: IO[str],
    session_ids: Sequence[str] | None,
    user_id: str | None,
) -> int:
    """Write the selected sessions, oldest first, one line per message; return lines."""
    where, params = scope_sql(user_id=user_id, include=None, exclude=())
    if session_ids is not None:
        where += " AND s.id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(session_ids)))
    sql = f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE 1=1{where} ORDER BY s.started_at, s.id"
    sessions = [session_from_row(r) for r in conn.execute(sql, params).fetchall()]
    messages_sql = f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = ? ORDER BY m.id"
    lines = 0
    for session in sessions:
        found: list[MessageRecord | None] = [
            message_from_row(r) for r in conn.execute(messages_sql, (session.id,))
        ]
        for message in found or [None]:
            out.write(export_line(session, message) + "\n")
            lines += 1
    return lines


def import_entries(
    conn: sqlite3.Connection,
    entries: list[tuple[SessionRecord, list[MessageRecord]]],
    on_conflict: str,
) -> ImportReport:
    """Write parsed entries inside the caller's transaction; ids are kept when free."""
    conn.execute("PRAGMA defer_foreign_keys = ON")
    imported = skipped = messages = 0
    insert_message = (
        f"INSERT INTO messages ({MESSAGE_COLUMNS.replace('m.', '')}, cjk) VALUES"
        " (?,?,?,?,?,?,?,?,?,?,?)"
    )
    for session, items in entries:
        exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session.id,)).fetchone()
        if exists and on_conflict == "error":
            raise StoreError(f"session {session.id!r} already exists")
        if exists and on_conflict == "skip":
            skipped += 1
            continue
        if exists:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session.id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session.id,))
        conn.execute(INSERT_SESSION, session_values(session))
        for m in items:
            taken = conn.execute("SELECT 1 FROM messages WHERE id = ?", (m.id,)).fetchone()
            values = message_values(session.id, m, m.timestamp)
            cjk = int(has_cjk(m.content))
            conn.execute(insert_message, (None if taken else m.id, *values, cjk))
        imported += 1
        messages += len(items)
    return ImportReport(imported, skipped, messages)
