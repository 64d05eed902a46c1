"""JSONL import for the SQLite session store (export lives on the store itself)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from memoryport.errors import StoreError
from memoryport.storage.sessions._sqlite_rows import MESSAGE_COLUMNS, SESSION_COLUMNS, dump_json
from memoryport.storage.sessions.base import (
    ImportReport,
    MessageRecord,
    SessionRecord,
    parse_export_line,
)
from memoryport.storage.sessions.query import has_cjk

__all__ = ["group_export_lines", "import_entries"]


def group_export_lines(lines: Iterable[str]) -> list[tuple[SessionRecord, list[MessageRecord]]]:
    """Parse export lines into (session, messages) pairs in first-seen order."""
    grouped: dict[str, tuple[SessionRecord, list[MessageRecord]]] = {}
    for line in lines:
        if line.strip():
            session, message = parse_export_line(line)
            entry = grouped.setdefault(session.id, (session, []))
            if message is not None:
                entry[1].append(message)
    return list(grouped.values())


def import_entries(
    conn: sqlite3.Connection,
    entries: list[tuple[SessionRecord, list[MessageRecord]]],
    on_conflict: str,
) -> ImportReport:
    """Write parsed entries inside the caller's transaction; ids are kept when free."""
    conn.execute("PRAGMA defer_foreign_keys = ON")
    imported = skipped = messages = 0
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
        values = list(session.to_dict().values())
        values[-1] = dump_json(values[-1])
        conn.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS.replace('s.', '')}) VALUES"
            f" ({','.join('?' * len(values))})",
            values,
        )
        for m in items:
            taken = conn.execute("SELECT 1 FROM messages WHERE id = ?", (m.id,)).fetchone()
            conn.execute(
                f"INSERT INTO messages ({MESSAGE_COLUMNS.replace('m.', '')}, cjk) VALUES"
                " (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    None if taken else m.id,
                    session.id,
                    m.role,
                    m.content,
                    m.timestamp,
                    m.tool_name,
                    dump_json(m.tool_calls),
                    m.tool_call_id,
                    m.reasoning,
                    dump_json(m.metadata),
                    int(has_cjk(m.content)),
                ),
            )
        imported += 1
        messages += len(items)
    return ImportReport(imported, skipped, messages)
