"""Export, import, pruning and index rebuilds for the PostgreSQL session store.

The export format is shared with SQLite (:mod:`memoryport.storage.sessions.portable`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from typing import IO, Any

import psycopg
from psycopg import sql

from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage import postgres_repair, search_lexemes
from memoryport.storage.postgres_message_arrays import (
    column_arrays,
    event_arrays,
    insert_select,
    rows_statement,
)
from memoryport.storage.postgres_wire import rendered
from memoryport.storage.search_lexemes import document_of_row
from memoryport.storage.sessions.portable import ExportWriter, Progress
from memoryport.storage.sessions.postgres.dialect import (
    encode_text,
    message_from_row,
    message_values,
    session_from_row,
    session_values,
)
from memoryport.storage.sessions.postgres.migrations import ensure_trigram_index
from memoryport.storage.sessions.records import (
    SESSION_UPDATABLE_FIELDS,
    ImportReport,
    MessageInput,
    MessageRecord,
    SessionRecord,
    SyncReport,
    valid_values,
)
from memoryport.storage.sessions.rows import (
    MESSAGE_COLUMNS,
    MESSAGE_INSERT_COLUMNS,
    SESSION_COLUMNS,
)
from memoryport.storage.sessions.temporal import event_rows

__all__ = [
    "append_batch",
    "append_statement",
    "events_statement",
    "export_sessions",
    "import_sessions",
    "index_problems",
    "prune_empty",
    "rebuild_indexes",
    "session_insert",
    "session_row",
    "sync_entries",
]

Cursor = psycopg.Cursor[Any]

_BATCH = 200


def _selected(session_ids: Sequence[str] | None, user_id: str | None) -> tuple[str, list[Any]]:
    """``WHERE`` text (on ``s``) and parameters for the sessions an export covers."""
    where: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        where.append("s.user_id = %s")
        params.append(user_id)
    if session_ids is not None:
        where.append("s.id = ANY(%s)")
        params.append(list(session_ids))
    return " AND ".join(where) or "true", params


def export_sessions(
    cur: Cursor,
    schema: sql.Identifier,
    out: IO[str],
    session_ids: Sequence[str] | None,
    user_id: str | None,
    progress: Progress | None = None,
) -> int:
    """Write the selected sessions, oldest first, each once and then its messages.

    Runs in one transaction, so the export is a consistent snapshot even while other
    machines write; messages are fetched for batches of sessions, not one query each.
    Returns lines written.
    """
    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    where, params = _selected(session_ids, user_id)
    fmt = {"cols": sql.SQL(SESSION_COLUMNS), "s": schema, "where": sql.SQL(where)}
    query = sql.SQL("SELECT {cols} FROM {s}.sessions s WHERE {where} ORDER BY s.started_at, s.id")
    sessions = [session_from_row(r) for r in cur.execute(query.format(**fmt), params).fetchall()]
    count = sql.SQL(
        "SELECT count(*) FROM {s}.messages m JOIN {s}.sessions s ON s.id = m.session_id"
        " WHERE {where}"
    )
    row = cur.execute(count.format(**fmt), params).fetchone()
    writer = ExportWriter(out, len(sessions), int(row[0]) if row else 0, progress)
    messages_sql = sql.SQL(
        "SELECT {cols} FROM {s}.messages m WHERE m.session_id = ANY(%s) ORDER BY m.id"
    ).format(cols=sql.SQL(MESSAGE_COLUMNS), s=schema)
    for start in range(0, len(sessions), _BATCH):
        batch = sessions[start : start + _BATCH]
        grouped: dict[str, list[MessageRecord]] = {}
        for found in cur.execute(messages_sql, ([s.id for s in batch],)):
            message = message_from_row(found)
            grouped.setdefault(message.session_id, []).append(message)
        for session in batch:
            writer.session(session, grouped.get(session.id, []))
    return writer.lines


def import_sessions(
    cur: Cursor,
    schema: sql.Identifier,
    entries: list[tuple[SessionRecord, list[MessageRecord]]],
    on_conflict: str,
    progress: Progress | None = None,
) -> ImportReport:
    """Insert exported sessions and messages exactly, in the caller's transaction.

    Parent links are checked at commit (so a child may precede its parent), and the
    messages table is locked against concurrent appends while explicit ids are written
    and the id sequence is moved past them.
    """

    def q(text: str) -> sql.Composed:
        return sql.SQL(text).format(s=schema)

    cur.execute("SET CONSTRAINTS ALL DEFERRED")
    cur.execute(q("LOCK TABLE {s}.messages IN SHARE ROW EXCLUSIVE MODE"))
    imported = skipped = messages = 0
    session_cols = SESSION_COLUMNS.replace("s.", "")
    message_cols = MESSAGE_COLUMNS.replace("m.", "")
    insert_with_id = q(
        f"INSERT INTO {{s}}.messages ({message_cols}, tsv) VALUES ({_ph(10)}, %s::tsvector)"
        " ON CONFLICT (id) DO NOTHING RETURNING id"
    )
    insert_new_id = q(
        f"INSERT INTO {{s}}.messages ({MESSAGE_INSERT_COLUMNS}, tsv)"
        f" VALUES ({_ph(9)}, %s::tsvector) RETURNING id"
    )
    deferred: list[MessageRecord] = []
    total = sum(len(items) for _, items in entries)
    for session, items in entries:
        if not _make_room(cur, q, session.id, on_conflict):
            skipped += 1
            continue
        values = session_values(session)
        cur.execute(
            q(
                f"INSERT INTO {{s}}.sessions ({session_cols}) VALUES"
                f" ({','.join(['%s'] * len(values))})"
            ),
            values,
        )
        for m in (replace(x, session_id=session.id) for x in items):
            # ON CONFLICT sees ids that row-level security hides from this connection
            if cur.execute(insert_with_id, (m.id, *_stamped(m))).fetchone() is None:
                deferred.append(m)
            else:
                _events(cur, q, m.id, m)
        imported += 1
        messages += len(items)
        if progress is not None:
            progress("importing", messages, total)
    _advance_sequence(cur, schema)
    for m in deferred:  # ids already used: take fresh ones past every imported id
        row = cur.execute(insert_new_id, _stamped(m)).fetchone()
        _events(cur, q, int(row[0]) if row else 0, m)
    return ImportReport(imported, skipped, messages)


def _stamped(m: MessageRecord) -> tuple[Any, ...]:
    """Insert values of an imported message, then its ``tsvector`` literal."""
    values = message_values(m.session_id, m, m.timestamp)
    return (*values, document_of_row(values))


def _make_room(
    cur: Cursor, q: Callable[[str], sql.Composed], session_id: str, on_conflict: str
) -> bool:
    """Apply ``on_conflict`` to an existing session; False when it is to be skipped."""
    exists = cur.execute(q("SELECT 1 FROM {s}.sessions WHERE id = %s"), (session_id,))
    if exists.fetchone() is None:
        return True
    if on_conflict == "error":
        raise StoreError(f"session {session_id!r} already exists")
    if on_conflict == "skip":
        return False
    cur.execute(q("DELETE FROM {s}.messages WHERE session_id = %s"), (session_id,))
    cur.execute(q("DELETE FROM {s}.sessions WHERE id = %s"), (session_id,))
    return True


def _events(
    cur: Cursor, q: Callable[[str], sql.Composed], message_id: int, m: MessageRecord
) -> None:
    """Store the event windows resolved from an imported message's words."""
    events = event_rows(message_id, m.content, m.timestamp)
    if events:
        cur.executemany(q("INSERT INTO {s}.message_events VALUES (%s, %s, %s, %s, %s)"), events)


def _ph(count: int) -> str:
    return ", ".join(["%s"] * count)


def _advance_sequence(cur: Cursor, schema: sql.Identifier) -> None:
    """Move the message id sequence past every id now in the table."""
    table = sql.SQL("{s}.messages").format(s=schema).as_string(cur)
    row = cur.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table,)).fetchone()
    if row is None or row[0] is None:
        raise StoreError("the messages table has no id sequence")
    sequence = sql.SQL(row[0])
    cur.execute(
        sql.SQL(
            "SELECT setval(%s::regclass, greatest((SELECT coalesce(max(id), 0) FROM {s}.messages),"
            " (SELECT last_value FROM {seq}), 1))"
        ).format(s=schema, seq=sequence),
        (row[0],),
    )


_EMPTY = (
    " AND s.message_count = 0 AND s.last_active_at < %s"
    " AND NOT EXISTS (SELECT 1 FROM {s}.messages m WHERE m.session_id = s.id)"
    " AND NOT EXISTS (SELECT 1 FROM {s}.sessions c WHERE c.parent_session_id = s.id)"
)


def prune_empty(
    cur: Cursor, schema: sql.Identifier, user_id: str | None, cutoff: float, dry_run: bool
) -> list[SessionRecord]:
    """Empty, childless sessions last active before ``cutoff``; deleted unless ``dry_run``."""
    where, params = _selected(None, user_id)
    query = sql.SQL(
        "SELECT {cols} FROM {s}.sessions s WHERE " + where + _EMPTY + " ORDER BY s.started_at, s.id"
    ).format(cols=sql.SQL(SESSION_COLUMNS), s=schema)
    found = [session_from_row(r) for r in cur.execute(query, [*params, cutoff]).fetchall()]
    if not dry_run and found:
        cur.execute(
            sql.SQL("DELETE FROM {s}.sessions WHERE id = ANY(%s)").format(s=schema),
            ([s.id for s in found],),
        )
    return found


def rebuild_indexes(cur: Cursor, schema: sql.Identifier, progress: Progress | None = None) -> None:
    """Re-stamp stale ``tsv`` values (``search_lexemes.restamp``), put back indexes and
    m060 triggers dropped or disabled (``postgres_repair``), (re)create the trigram index,
    REINDEX the table.

    PostgreSQL does this in a few statements, so ``progress`` sees ``("rebuilding", 0, 1)``
    then ``("rebuilding", 1, 1)``.
    """
    if progress is not None:
        progress("rebuilding", 0, 1)
    search_lexemes.restamp(cur, schema, stale_only=True)
    postgres_repair.repair(cur, schema)
    ensure_trigram_index(cur, schema)
    cur.execute(sql.SQL("REINDEX TABLE {s}.messages").format(s=schema))
    if progress is not None:
        progress("rebuilding", 1, 1)


def index_problems(cur: Cursor, schema: sql.Identifier) -> tuple[list[str], int]:
    """Names of invalid indexes on ``messages`` and the count of stale ``tsv`` rows."""
    table = sql.SQL("{s}.messages").format(s=schema).as_string(cur)
    invalid = cur.execute(
        "SELECT indexrelid::regclass::text FROM pg_index"
        " WHERE indrelid = %s::regclass AND NOT (indisvalid AND indisready)",
        (table,),
    ).fetchall()
    return [r[0] for r in invalid], search_lexemes.stale(cur, schema)


# ---------------------------------------------------------------- batched appends
# Batched appends: one round trip per batch. ``append_batch`` queues, in pipeline mode,
# prepared statements with the batch as column arrays, and the caller's ``COMMIT``:
#
# * the session's counters are updated for the whole batch (``UPDATE ... RETURNING`` in a
#   CTE; no row, no insert, so an unknown session leaves nothing behind), and the first
#   :data:`_FIRST_CHUNK` messages inserted from ``unnest(...) WITH ORDINALITY`` in input order, so
#   their identity ids ascend in that order (``RETURNING`` gives them back);
# * a long batch's other chunks follow, each an ``INSERT`` guarded by the session's row
#   (which the ``UPDATE`` has locked until commit); the server inserts one chunk while
#   Python prepares the next (folding, stemming, dumping: ``search_lexemes``), so on two
#   cores the client's work overlaps the server's;
# * the event windows resolved from the messages' words (computed client-side, while the
#   server inserts the last chunk) are inserted for the batch's k-th message by position:
#   the session's last ``len(batch)`` messages by id are this batch's, because the
#   ``UPDATE`` holds the session's row lock until commit (every other append, sync and
#   import of the session waits for it). It cannot be a CTE of the first statement: the
#   row-level security check on ``message_events`` must see the new messages.
#
# ``COPY`` cannot return the generated ids, which callers need; array parameters give the
# same single round trip with a fixed statement text, which psycopg prepares once per
# connection (``prepare=True``), so the server plans it once. The arrays travel in binary
# (``%b``): no quoting to write in Python nor to parse on the server. The columns, their
# arrays and the ``INSERT`` texts that unnest them are in ``postgres_message_arrays``.

_FIRST_CHUNK = 32
"""Messages in an append's first statement: few, so the server starts early. On a quiet
machine (2 cores) chunks of 32 + 48 gave ~12,500 batched messages/s against ~10,500 for
one statement per batch (same CPU, overlapped); on a loaded one the extra statements
cost more CPU than the overlap gave back (131 against 110 us per message)."""
_CHUNK = 48
"""Messages in each later statement of an append or sync."""


def append_statement(schema: sql.Identifier) -> sql.Composed:
    """The first statement of an append (parameters: message count, tool-call count,
    newest timestamp, session id, then one array per entry of
    :data:`memoryport.storage.postgres_message_arrays.COLUMNS`)."""
    return sql.SQL(
        "WITH s AS (UPDATE {s}.sessions SET message_count = message_count + %s,"
        " tool_call_count = tool_call_count + %s,"
        " last_active_at = greatest(last_active_at, %s) WHERE id = %s RETURNING id),"
        f" m AS ({insert_select('s')})"
        " SELECT id FROM m ORDER BY id"
    ).format(s=schema)


def _more_statement(schema: sql.Identifier) -> sql.Composed:
    """A later chunk of an append (parameters: session id, then the arrays)."""
    return sql.SQL(
        f"WITH m AS ({insert_select('(SELECT id FROM {s}.sessions WHERE id = %s) s')})"
        " SELECT id FROM m ORDER BY id"
    ).format(s=schema)


def events_statement(schema: sql.Identifier) -> sql.Composed:
    """Insert event windows from five arrays (message id, start, end, precision, words)."""
    return sql.SQL(
        "INSERT INTO {s}.message_events"
        " SELECT * FROM unnest(%s::int8[], %s::float8[], %s::float8[], %s::text[], %s::text[])"
    ).format(s=schema)


def _positional_events_statement(schema: sql.Identifier) -> sql.Composed:
    """Insert event windows of a session's last ``%s`` messages, the k-th (1-based, by id)
    named by position; parameters: session id, count, then five arrays (position, start,
    end, precision, words).

    The count is a sub-select so that the planner, not knowing it, always reads the
    session's index backwards from its end: with the value in sight and the session
    estimated smaller than it, a custom plan read and sorted every message of the session
    (5,000 messages: 0.43 ms a call with fresh statistics, 2.2 ms with stale ones, against
    0.15-0.27 ms)."""
    return sql.SQL(
        "INSERT INTO {s}.message_events"
        " SELECT m.id, e.start_at, e.end_at, e.precision, e.words"
        " FROM (SELECT id, row_number() OVER (ORDER BY id) AS pos FROM"
        " (SELECT id FROM {s}.messages WHERE session_id = %s ORDER BY id DESC"
        " LIMIT (SELECT %s::int8)) l) m"
        " JOIN unnest(%b::int8[], %b::float8[], %b::float8[], %b::text[], %b::text[])"
        " AS e(pos, start_at, end_at, precision, words) USING (pos)"
    ).format(s=schema)


def _message_rows(session_id: str, items: Sequence[MessageInput], now: float
                  ) -> list[tuple[Any, ...]]:  # fmt: skip
    """``message_values`` of each of ``items``, the usual message built directly: ASCII
    content without NUL, no tool fields, reasoning or metadata (so ``encode_text``,
    ``dump_json`` and ``valid_text`` would return each value unchanged); about a third of
    ``message_values``'s time."""
    sid = session_id if session_id.isascii() else None
    out: list[tuple[Any, ...]] = []
    for m in items:
        content, role = m.content, m.role
        if (
            sid is None or not content.isascii() or "\x00" in content or not role.isascii()
            or m.tool_name is not None or m.tool_calls or m.tool_call_id is not None
            or m.reasoning is not None or m.metadata
        ):  # fmt: skip
            out.append(message_values(session_id, m, now))
        else:
            stamp = now if m.timestamp is None else m.timestamp
            out.append((sid, role, content, stamp, None, None, None, None, None))
    return out


def append_batch(
    cur: Cursor, schema: sql.Identifier, session_id: str, items: Sequence[MessageInput], now: float
) -> Callable[[], list[int]]:
    """Queue the append of ``items`` to ``session_id`` in the caller's transaction.

    Returns a function giving the new ids in input order once the statements ran (in
    pipeline mode: after the transaction's commit); ``[]`` when the session does not
    exist (nothing was written).
    """
    conn = cur.connection
    encoding = conn.info.encoding
    tool_calls = sum(len(m.tool_calls or []) for m in items)
    last = max(now if m.timestamp is None else float(m.timestamp) for m in items)
    rows = _message_rows(session_id, items[:_FIRST_CHUNK], now)
    timed: list[bool] = []
    head = [len(items), tool_calls, last, session_id, *column_arrays(rows, 1, encoding, timed)]
    cur.execute(rendered(cur, schema, append_statement), head, prepare=True)
    cursors = [cur]
    for start in range(_FIRST_CHUNK, len(items), _CHUNK):
        chunk = _message_rows(session_id, items[start : start + _CHUNK], now)
        rows.extend(chunk)
        more = conn.cursor()
        more_sql = rendered(cur, schema, _more_statement)
        more.execute(more_sql, [session_id, *column_arrays(chunk, 1, encoding, timed)],
                     prepare=True)
        cursors.append(more)
    event_columns = event_arrays(rows, timed)
    if event_columns:
        with conn.cursor() as other:
            other.execute(rendered(cur, schema, _positional_events_statement),
                          [session_id, len(rows), *event_columns], prepare=True)  # fmt: skip
    return lambda: [int(row[0]) for c in cursors for row in c.fetchall()]


def _insert_rows(
    cur: Cursor, schema: sql.Identifier, batches: Sequence[tuple[str, list[tuple[Any, ...]]]]
) -> None:
    """Queue the insert of every session's new message rows (``message_values`` tuples)
    in input order, in chunks as :func:`append_batch` sends them (the server inserts one
    while Python stamps the next), then their event windows by position (see
    :func:`_positional_events_statement`: each session here is new or locked)."""
    rows = [r for _, new in batches for r in new]
    insert = rendered(cur, schema, rows_statement)
    encoding = cur.connection.info.encoding
    start, timed = 0, list[bool]()
    while start < len(rows):
        end = start + (_CHUNK if start else _FIRST_CHUNK)
        cur.execute(insert, column_arrays(rows[start:end], 0, encoding, timed), prepare=True)
        start = end
    per_session, start = [], 0
    for session_id, new in batches:
        event_columns = event_arrays(new, timed[start : start + len(new)])
        start += len(new)
        if event_columns:
            per_session.append([session_id, len(new), *event_columns])
    if per_session:
        cur.executemany(rendered(cur, schema, _positional_events_statement), per_session)


_SESSION_FIELDS = tuple(f.name for f in fields(SessionRecord))


def session_row(session: SessionRecord) -> list[Any]:
    """``session_values(session)`` for a new session, without ``asdict``'s deep copy
    (a quarter of ``create_session``'s client time); a session with metadata goes the
    general way (``asdict`` also turns dataclasses inside it into dicts)."""
    if session.metadata:
        return session_values(session)
    values = [getattr(session, name) for name in _SESSION_FIELDS]
    values[4] = encode_text(values[4])  # title
    values[-1] = None  # empty metadata is stored as NULL (dump_json)
    return valid_values(values)


def _session_insert(schema: sql.Identifier) -> sql.Composed:
    """``create_session``'s insert (parameters: ``session_row``): a taken id is a unique
    violation (no speculative ``ON CONFLICT`` insert, no row sent back: the values are)."""
    return sql.SQL(
        f"INSERT INTO {{s}}.sessions ({', '.join(_SESSION_NAMES)})"
        f" VALUES ({', '.join(['%s'] * len(_SESSION_NAMES))})"
    ).format(s=schema)


def session_insert(cur: Cursor, schema: sql.Identifier) -> bytes:
    """:func:`_session_insert` rendered once per schema."""
    return rendered(cur, schema, _session_insert)


_SYNC_LOCK = 0x73796E63  # "sync": with the schema's hash, one sync transaction at a time
_SESSION_NAMES = SESSION_COLUMNS.replace("s.", "").split(", ")
_FIELDS = sorted(SESSION_UPDATABLE_FIELDS)


def _sync_insert(schema: sql.Identifier) -> sql.Composed:
    """The new-session ``INSERT`` of :func:`sync_entries`."""
    return sql.SQL(
        f"INSERT INTO {{s}}.sessions ({', '.join(_SESSION_NAMES)})"
        f" VALUES ({', '.join(['%s'] * len(_SESSION_NAMES))})"
    ).format(s=schema)


def _sync_update(schema: sql.Identifier) -> sql.Composed:
    """The grown-session ``UPDATE`` of :func:`sync_entries`."""
    return sql.SQL(
        f"UPDATE {{s}}.sessions SET {', '.join(f'{k} = %s' for k in _FIELDS)},"
        " message_count = message_count + %s,"
        " last_active_at = greatest(last_active_at, %s) WHERE id = %s"
    ).format(s=schema)


def sync_entries(
    cur: Cursor,
    schema: sql.Identifier,
    entries: Sequence[tuple[SessionRecord, Sequence[MessageInput]]],
    now: float,
    user_of: Callable[[str | None], str | None],
) -> SyncReport:
    """Write ``entries`` (see ``SessionStore.sync_sessions``) in the caller's transaction.

    All or nothing: an unknown parent raises ``SessionNotFound`` and the caller rolls the
    whole batch back. Sync transactions on one schema take a transaction advisory lock
    (appends do not), and the stored sessions they grow are locked ``FOR UPDATE``, so two
    processes re-running one import never append the same messages twice. Messages of
    every session go in one array ``INSERT`` (ids ascend in input order). In pipeline
    mode (the store's) the lock and the read cost one round trip, and the writes and the
    caller's ``COMMIT`` one more.
    """
    name = schema.as_string(cur)
    cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_SYNC_LOCK, name))
    wanted = sorted({r.id for r, _ in entries}
                    | {r.parent_session_id for r, _ in entries if r.parent_session_id})  # fmt: skip
    found = cur.execute(
        sql.SQL(
            "SELECT id, message_count, user_id FROM {s}.sessions WHERE id = ANY(%s)"
            " ORDER BY id FOR UPDATE"
        ).format(s=schema),
        (wanted,),
    ).fetchall()
    stored: dict[str, tuple[int, str | None]] = {r[0]: (int(r[1]), r[2]) for r in found}
    created: list[list[Any]] = []
    grown: list[list[Any]] = []
    rows: list[tuple[str, list[tuple[Any, ...]]]] = []
    unchanged = appended = 0
    for record, messages in entries:
        have = stored[record.id][0] if record.id in stored else None
        if have is not None and have >= len(messages):
            unchanged += 1
            continue
        new = _message_rows(record.id, messages[have or 0 :], now)
        newest = max((float(r[3]) for r in new), default=0.0)
        if have is None:
            created.append(_created_row(record, stored, user_of, len(new), newest))
            stored[record.id] = (len(messages), created[-1][2])
        else:
            values = session_values(replace(record, message_count=len(new)))
            fields = [values[_SESSION_NAMES.index(k)] for k in _FIELDS]
            grown.append([*fields, len(new), newest, record.id])
            appended += len(new)
        rows.append((record.id, new))
    if created:
        cur.executemany(rendered(cur, schema, _sync_insert), created)
    if grown:
        cur.executemany(rendered(cur, schema, _sync_update), grown)
    _insert_rows(cur, schema, rows)
    written = sum(len(new) for _, new in rows)
    return SyncReport(len(created), len(grown), unchanged, written - appended, appended)


def _created_row(
    record: SessionRecord,
    stored: dict[str, tuple[int, str | None]],
    user_of: Callable[[str | None], str | None],
    count: int,
    newest: float,
) -> list[Any]:
    """Insert values of a new session: its parent must be stored or created earlier."""
    parent = record.parent_session_id or None
    if parent is not None and parent not in stored:
        raise SessionNotFound(f"unknown parent session {parent!r} of {record.id!r}")
    user = user_of(record.user_id) or (stored[parent][1] if parent is not None else None)
    draft = replace(record, user_id=user, parent_session_id=parent, message_count=count,
                    last_active_at=max(record.started_at, newest))  # fmt: skip
    return session_values(draft)
