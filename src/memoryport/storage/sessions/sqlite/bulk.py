"""Export, import, bulk ingest, pruning, index rebuilds and multi-anchor window reads for
the SQLite session store.

Bulk ingest (:func:`sync_entries`, behind ``SessionStore.sync_sessions``, the path
``memoryport migrate hermes`` writes through) costs a handful of statements per batch
whatever its size: one lookup of the stored sessions and parents, one ``executemany``
each for new sessions, grown sessions, messages and event rows, and one
``INSERT ... SELECT`` per full-text index over the batch's id range (contiguous:
``AUTOINCREMENT`` under the write lock). Rows are converted once, with one shared JSON
encoder.

The export format is shared with PostgreSQL (:mod:`memoryport.storage.sessions.portable`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import IO, Any

from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage.sessions.portable import ExportWriter, Progress
from memoryport.storage.sessions.query import has_cjk
from memoryport.storage.sessions.records import (
    SESSION_UPDATABLE_FIELDS,
    ImportReport,
    MessageInput,
    MessageRecord,
    MessageWindow,
    SearchScope,
    SessionRecord,
    SyncReport,
)
from memoryport.storage.sessions.rows import (
    MESSAGE_COLUMNS,
    MESSAGE_INSERT_COLUMNS,
    SESSION_COLUMNS,
    PreparedMessage,
    message_from_row,
    message_values,
    session_from_row,
    session_values,
    shape_window,
)
from memoryport.storage.sessions.sqlite.dialect import INSERT_SESSION, scope_sql
from memoryport.storage.sessions.temporal import EventRow, event_rows

__all__ = [
    "export_sessions",
    "fetch_windows",
    "import_entries",
    "index_messages",
    "prune_empty",
    "rebuild_indexes",
    "sync_entries",
]


def _selected(session_ids: Sequence[str] | None, user_id: str | None) -> tuple[str, list[Any]]:
    """``WHERE`` conditions (on ``s``) and parameters for the sessions an export covers."""
    where, params = scope_sql(SearchScope(user_id=user_id))
    if session_ids is not None:
        where += " AND s.id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(session_ids)))
    return where, params


def export_sessions(
    conn: sqlite3.Connection,
    out: IO[str],
    session_ids: Sequence[str] | None,
    user_id: str | None,
    progress: Progress | None = None,
) -> int:
    """Write the selected sessions, oldest first, each once and then its messages.

    One read transaction, so the export is a consistent snapshot. Returns lines written.
    """
    where, params = _selected(session_ids, user_id)
    conn.execute("BEGIN")
    try:
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE 1=1{where}"
        sessions = [
            session_from_row(r) for r in conn.execute(sql + " ORDER BY s.started_at, s.id", params)
        ]
        count_sql = (
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            f" WHERE 1=1{where}"
        )
        total = int(conn.execute(count_sql, params).fetchone()[0])
        writer = ExportWriter(out, len(sessions), total, progress)
        messages_sql = (
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = ? ORDER BY m.id"
        )
        for session in sessions:
            rows = conn.execute(messages_sql, (session.id,))
            writer.session(session, (message_from_row(r) for r in rows))
    finally:
        conn.execute("COMMIT")
    return writer.lines


_INDEX_WORDS = (
    "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)"
    " SELECT id, content, tool_name, tool_calls FROM messages WHERE {}"
)
_INDEX_TRIGRAM = (
    "INSERT INTO messages_trigram(rowid, content)"
    " SELECT id, content FROM messages WHERE cjk = 1 AND {}"
)


def index_messages(conn: sqlite3.Connection, ids: Sequence[int], *, cjk: bool = True) -> None:
    """Add just-inserted messages ``ids`` to the word index (and, with ``cjk``, those
    flagged CJK to the trigram index), inside the writer's transaction. No trigger does
    this since migration m008: every writer of ``messages`` calls it."""
    if not ids:
        return
    params: tuple[object, ...]
    if list(ids) == list(range(ids[0], ids[0] + len(ids))):
        where, params = "id BETWEEN ? AND ?", (ids[0], ids[-1])
    else:
        where, params = "id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
    conn.execute(_INDEX_WORDS.format(where), params)
    if cjk:
        conn.execute(_INDEX_TRIGRAM.format(where), params)


def import_entries(
    conn: sqlite3.Connection,
    entries: list[tuple[SessionRecord, list[MessageRecord]]],
    on_conflict: str,
    progress: Progress | None = None,
) -> ImportReport:
    """Write parsed entries inside the caller's transaction; ids are kept when free.

    In bulk: one lookup of the sessions that exist (``error`` raises before anything is
    written, ``skip`` leaves them, ``replace`` deletes them first), one of the message ids
    already taken, then one ``executemany`` each for sessions, messages (a taken id, or
    one repeated in ``entries``, gets the next free id) and event rows, and one index
    insert for the lot.
    """
    total = sum(len(items) for _, items in entries)
    conn.execute("PRAGMA defer_foreign_keys = ON")
    existing = set(_stored(conn, {session.id for session, _ in entries}))
    if on_conflict == "error" and existing:
        raise StoreError(f"session {sorted(existing)[0]!r} already exists")
    picked: dict[str, tuple[SessionRecord, list[MessageRecord]]] = {}
    skipped = 0
    for session, items in entries:
        if session.id in picked and on_conflict == "error":
            raise StoreError(f"session {session.id!r} already exists")
        if on_conflict == "skip" and (session.id in existing or session.id in picked):
            skipped += 1
            continue
        picked.pop(session.id, None)  # replace: the later one wins
        picked[session.id] = (session, items)
    chosen, seen = list(picked.values()), set(picked)
    replaced = json.dumps(sorted(existing & seen))
    if existing & seen:
        conn.execute("DELETE FROM messages WHERE session_id IN (SELECT value FROM json_each(?))",
                     (replaced,))  # fmt: skip
        conn.execute("DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
                     (replaced,))  # fmt: skip
    conn.executemany(INSERT_SESSION, [session_values(session) for session, _ in chosen])
    rows = _kept_id_rows(conn, chosen)
    conn.executemany(_INSERT_MESSAGE_ID, rows)
    if rows:
        ids = sorted(r[0] for r in rows)
        index_messages(conn, ids, cjk=any(r[-1] for r in rows))
    events = [e for r in rows if r[3] for e in event_rows(r[0], r[3], r[4])]
    if events:
        conn.executemany(_INSERT_EVENT, events)
    messages = len(rows)
    if progress is not None and chosen:
        progress("importing", messages, total)
    return ImportReport(len(chosen), skipped, messages)


_INSERT_MESSAGE_ID = (
    f"INSERT INTO messages (id, {MESSAGE_INSERT_COLUMNS}, cjk) VALUES ({'?,' * 10}?)"
)


def _kept_id_rows(
    conn: sqlite3.Connection, chosen: list[tuple[SessionRecord, list[MessageRecord]]]
) -> list[tuple[Any, ...]]:
    """Insert rows with explicit ids: a session's own message ids when all are free (not
    stored, not used earlier in ``chosen``), else the next ids past every stored and
    wanted one, in the session's order (messages are ordered by id)."""
    wanted = [m.id for _, items in chosen for m in items]
    taken = {int(r[0]) for r in conn.execute(
        "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),))}  # fmt: skip
    high = conn.execute(
        "SELECT max(coalesce((SELECT max(id) FROM messages), 0),"
        " coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0))"
    ).fetchone()[0]
    high = max([int(high), *wanted])
    rows = []
    for session, items in chosen:
        own = [m.id for m in items]
        if taken.isdisjoint(own) and own == sorted(set(own)):
            numbers = own
        else:  # renumber the whole session past everything: its order stays
            numbers = list(range(high + 1, high + 1 + len(items)))
            high += len(items)
        taken.update(numbers)
        for message_id, m in zip(numbers, items, strict=True):
            flag = 1 if has_cjk(m.content) else 0
            rows.append((message_id, *message_values(session.id, m, m.timestamp), flag))
    return rows


_EMPTY = (
    " AND s.message_count = 0 AND s.last_active_at < ?"
    " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
    " AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id)"
)


def prune_empty(
    conn: sqlite3.Connection, user_id: str | None, cutoff: float, dry_run: bool
) -> list[SessionRecord]:
    """Empty, childless sessions last active before ``cutoff``; deleted unless ``dry_run``."""
    where, params = scope_sql(SearchScope(user_id=user_id))
    sql = (
        f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE 1=1{where}{_EMPTY}"
        " ORDER BY s.started_at, s.id"
    )
    found = [session_from_row(r) for r in conn.execute(sql, [*params, cutoff])]
    if not dry_run and found:
        conn.execute(
            "DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([s.id for s in found]),),
        )
    return found


_CHUNK = 20_000


def rebuild_indexes(conn: sqlite3.Connection, progress: Progress | None = None) -> None:
    """Rebuild both FTS indexes in id chunks, reporting ``(index, rows done, rows total)``.

    Same result as FTS5's ``'rebuild'`` (clear the index, index every row again), inside
    the caller's transaction.
    """
    steps = (
        ("word index", "messages_fts", "content, tool_name, tool_calls", ""),
        ("trigram index", "messages_trigram", "content", " AND cjk = 1"),
    )
    high = int(conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
    for phase, table, columns, only in steps:
        total = int(conn.execute(f"SELECT count(*) FROM messages WHERE 1=1{only}").fetchone()[0])
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
        done = 0
        if progress is not None:
            progress(phase, 0, total)
        for start in range(0, high, _CHUNK):
            cursor = conn.execute(
                f"INSERT INTO {table}(rowid, {columns}) SELECT id, {columns} FROM messages"
                f" WHERE id > ? AND id <= ?{only}",
                (start, start + _CHUNK),
            )
            done += max(cursor.rowcount, 0)
            if progress is not None:
                progress(phase, done, total)


def fetch_windows(
    conn: sqlite3.Connection, anchors: Sequence[int], *, window: int, bookend: int
) -> dict[int, MessageWindow]:
    """Windows for several anchors in two queries (rows, then counts)."""
    if not anchors:
        return {}
    anchor_json = json.dumps(list(dict.fromkeys(anchors)))
    sql = f"""
    WITH a AS (SELECT id AS anchor, session_id AS sid FROM messages
               WHERE id IN (SELECT value FROM json_each(?)))
    SELECT a.anchor, {MESSAGE_COLUMNS} FROM a JOIN messages m ON m.id IN (
        SELECT a.anchor
        UNION ALL SELECT id FROM (SELECT id FROM messages WHERE session_id = a.sid
                                  AND id < a.anchor ORDER BY id DESC LIMIT ?)
        UNION ALL SELECT id FROM (SELECT id FROM messages WHERE session_id = a.sid
                                  AND id > a.anchor ORDER BY id LIMIT ?)
        UNION ALL SELECT id FROM (SELECT id FROM messages WHERE session_id = a.sid
                                  ORDER BY id LIMIT ?)
        UNION ALL SELECT id FROM (SELECT id FROM messages WHERE session_id = a.sid
                                  ORDER BY id DESC LIMIT ?))
    """
    grouped: dict[int, list[MessageRecord]] = {}
    for row in conn.execute(sql, (anchor_json, window, window, bookend, bookend)):
        grouped.setdefault(row[0], []).append(message_from_row(row[1:]))
    counts_sql = """
    SELECT m.id,
      (SELECT count(*) FROM messages x WHERE x.session_id = m.session_id AND x.id < m.id),
      (SELECT count(*) FROM messages x WHERE x.session_id = m.session_id AND x.id > m.id)
    FROM messages m WHERE m.id IN (SELECT value FROM json_each(?))
    """
    out = {}
    for anchor_id, before, after in conn.execute(counts_sql, (anchor_json,)):
        rows = grouped.get(anchor_id, [])
        anchor = next((r for r in rows if r.id == anchor_id), None)
        if anchor is None:
            continue
        out[anchor_id] = shape_window(
            anchor, rows, count_before=before, count_after=after, window=window, bookend=bookend
        )
    return out


# ------------------------------------------------------------------ sync (bulk ingest)
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

_COLUMNS = SESSION_COLUMNS.replace("s.", "").split(", ")
_PARENT = _COLUMNS.index("parent_session_id") + 1
_INSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(_COLUMNS)}) VALUES ("
    + ", ".join(
        f"coalesce(?{i}, (SELECT p.user_id FROM sessions p WHERE p.id = ?{_PARENT}))"
        if name == "user_id"
        else f"?{i}"
        for i, name in enumerate(_COLUMNS, start=1)
    )
    + ")"
)
_FIELDS = sorted(SESSION_UPDATABLE_FIELDS)
_UPDATE_SESSION = (
    f"UPDATE sessions SET {', '.join(f'{k} = ?' for k in _FIELDS)},"
    " message_count = message_count + ?, last_active_at = max(last_active_at, ?) WHERE id = ?"
)
_INSERT_MESSAGE = f"INSERT INTO messages ({MESSAGE_INSERT_COLUMNS}, cjk) VALUES ({'?,' * 9}?)"
_INSERT_EVENT = "INSERT INTO message_events VALUES (?, ?, ?, ?, ?)"


def _json(value: Any) -> str | None:
    """``rows.dump_json`` for the values it is given here (None, a dict or a list)."""
    return _encode(value) if value else None


Events = tuple[tuple[float, float, str, str], ...] | None
"""A message's event windows when computed ahead (``Derived``), else None."""


def _message_rows(
    sid: str, items: Sequence[MessageInput], now: float, rows: list[tuple[Any, ...]],
    events: list[Events],
) -> None:  # fmt: skip
    """Append the insert rows of ``items`` to ``rows`` and their events (when computed
    ahead: a ``PreparedMessage``) to ``events``."""
    for m in items:
        derived = m.derived if type(m) is PreparedMessage else None
        if derived is None:
            rows.append((sid, m.role, m.content, now if m.timestamp is None else m.timestamp,
                         m.tool_name, _json(m.tool_calls), m.tool_call_id, m.reasoning,
                         _json(m.metadata), 1 if has_cjk(m.content) else 0))  # fmt: skip
            events.append(None)
        else:
            calls, cjk, found = derived
            rows.append((sid, m.role, m.content, m.timestamp, m.tool_name, calls,
                         m.tool_call_id, m.reasoning, _json(m.metadata), cjk))  # fmt: skip
            events.append(found)


def _session_row(record: SessionRecord, user: str | None, count: int, newest: float) -> list[Any]:
    values = {**record.__dict__, "user_id": user, "message_count": count,
              "parent_session_id": record.parent_session_id or None,
              "last_active_at": max(record.started_at, newest),
              "metadata": _json(record.metadata)}  # fmt: skip
    return [values[name] for name in _COLUMNS]


def _stored(conn: sqlite3.Connection, ids: set[str]) -> dict[str, int]:
    sql = "SELECT id, message_count FROM sessions WHERE id IN (SELECT value FROM json_each(?))"
    return {str(i): int(n) for i, n in conn.execute(sql, (json.dumps(sorted(ids)),))}


def sync_entries(
    conn: sqlite3.Connection,
    entries: Sequence[tuple[SessionRecord, Sequence[MessageInput]]],
    now: float,
    user_of: Callable[[str | None], str | None],
) -> SyncReport:
    """Write ``entries`` (see ``sync_sessions``) inside the caller's write transaction.

    ``user_of`` resolves a record's ``user_id`` against the store's bound user.
    ``SessionNotFound`` (nothing written: the caller rolls back) for a parent that is
    neither stored nor created earlier in ``entries``.
    """
    wanted = {r.id for r, _ in entries} | {r.parent_session_id for r, _ in entries
                                           if r.parent_session_id}  # fmt: skip
    stored = _stored(conn, wanted)
    created: list[list[Any]] = []
    grown: list[tuple[Any, ...]] = []
    rows: list[tuple[Any, ...]] = []
    found: list[Events] = []
    unchanged = appended = 0
    for record, messages in entries:
        have = stored.get(record.id)
        if have is not None and have >= len(messages):
            unchanged += 1
            continue
        first = len(rows)
        _message_rows(record.id, messages[have or 0 :], now, rows, found)
        count = len(rows) - first
        newest = max((rows[i][3] for i in range(first, len(rows))), default=0.0)
        if have is None:
            parent = record.parent_session_id
            if parent and parent not in stored:
                raise SessionNotFound(f"unknown parent session {parent!r} of {record.id!r}")
            created.append(_session_row(record, user_of(record.user_id), count, newest))
            stored[record.id] = len(messages)
        else:
            fields = [_json(record.metadata) if k == "metadata" else getattr(record, k)
                      for k in _FIELDS]  # fmt: skip
            grown.append((*fields, count, newest, record.id))
            appended += count
    if created:
        conn.executemany(_INSERT_SESSION, created)
    if grown:
        conn.executemany(_UPDATE_SESSION, grown)
    _insert_messages(conn, rows, found)
    return SyncReport(len(created), len(grown), unchanged, len(rows) - appended, appended)


def _insert_messages(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], found: list[Events]
) -> None:
    """Insert ``rows``, index them and write their event rows (``found``, or resolved
    here; ids are contiguous: the writer holds the lock and ``AUTOINCREMENT`` hands out
    the next ones)."""
    if not rows:
        return
    first = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
    start = int(first[0]) + 1 if first else 1
    conn.executemany(_INSERT_MESSAGE, rows)
    ids = range(start, start + len(rows))
    index_messages(conn, ids, cjk=any(r[-1] for r in rows))
    events: list[EventRow] = []
    for message_id, row, ahead in zip(ids, rows, found, strict=True):
        if ahead is not None:
            if ahead:
                events.extend((message_id, *e) for e in ahead)
        elif row[2]:
            events.extend(event_rows(message_id, row[2], row[3]))
    if events:
        conn.executemany(_INSERT_EVENT, events)
