"""Reading a Hermes ``state.db`` read-only, whatever its schema version.

Hermes' ``sessions`` and ``messages`` tables have gained columns over time (July
``SCHEMA_VERSION`` 21, newest 30, see ``hermes_state.py``); their columns are read from
``PRAGMA table_info`` and mapped by name. Columns memoryport has a field for fill it; every
other non-empty column is kept under ``metadata["hermes"]``, so nothing is lost. The file
is opened with ``mode=ro`` (``immutable=1`` when even that fails, e.g. a WAL database in
a read-only directory) and never written.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memoryport.errors import StoreError
from memoryport.storage.sessions.records import MessageInput

__all__ = [
    "HermesDB",
    "MessageFields",
    "message_reader",
    "session_record",
]

_SESSION_FIELDS = (
    "id", "source", "user_id", "model", "title", "parent_session_id", "started_at",
    "ended_at", "end_reason", "tool_call_count", "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd",
    "actual_cost_usd",
)  # fmt: skip
_INT_FIELDS = frozenset({
    "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens",
})  # fmt: skip
_FLOAT_FIELDS = frozenset({"estimated_cost_usd", "actual_cost_usd", "ended_at"})
_STR_FIELDS = frozenset({"model", "title", "end_reason"})
_MESSAGE_FIELDS = frozenset(
    {"id", "session_id", "role", "content", "timestamp", "tool_name", "tool_calls",
     "tool_call_id", "reasoning"}
)  # fmt: skip
_SESSION_SKIP = frozenset({"message_count"})

MessageFields = tuple[
    str, str, "str | None", "list[Any] | None", "str | None", "str | None", float, dict[str, Any]
]
"""A message as ``MessageInput`` takes its fields, in order: role, content, tool name,
tool calls, tool call id, reasoning, timestamp, metadata (``MessageInput(*fields)``)."""


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


class HermesDB:
    """One Hermes ``state.db``, open read-only. Use as a context manager.

    The connection may be handed to another thread (the import's reader thread), one
    thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._reader: tuple[str, Callable[[Sequence[Any]], MessageFields]] | None = None
        try:
            self.conn = self._open(path)
            self.session_columns = self._columns("sessions")
            self.message_columns = self._columns("messages")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the Hermes database {path}: {exc}") from exc
        for needed, have in (("id", self.session_columns), ("session_id", self.message_columns)):
            if needed not in have:
                raise StoreError(
                    f"{path} is not a Hermes state.db (its sessions/messages tables lack "
                    f"{needed!r}); nothing was imported"
                )

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        uri = path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
        return conn

    def _columns(self, table: str) -> list[str]:
        rows = self.conn.execute(f"PRAGMA table_info({table})").fetchall()
        if not rows:
            raise sqlite3.OperationalError(f"no table {table!r}")
        return [str(row[1]) for row in rows]

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> HermesDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count_messages(self) -> int:
        """Messages in the database."""
        return int(self.conn.execute("SELECT count(*) FROM messages").fetchone()[0])

    def session_order(self) -> list[tuple[str, str | None]]:
        """``(id, parent id)`` of every session, parents before their children (then by
        start time); a parent that is not in the database is reported as None."""
        has_parent = "parent_session_id" in self.session_columns
        start = "started_at" if "started_at" in self.session_columns else "rowid"
        parent = "parent_session_id" if has_parent else "NULL"
        rows = self.conn.execute(f"SELECT id, {parent} FROM sessions ORDER BY {start}, id")
        pairs = [(str(sid), None if p is None else str(p)) for sid, p in rows]
        known = {sid for sid, _ in pairs}
        children: dict[str | None, list[str]] = {}
        for sid, pid in pairs:
            children.setdefault(pid if pid in known and pid != sid else None, []).append(sid)
        ordered: list[tuple[str, str | None]] = []
        parents = dict(pairs)
        stack = list(reversed(children.get(None, [])))
        while stack:
            sid = stack.pop()
            pid = parents[sid]
            ordered.append((sid, pid if pid in known and pid != sid else None))
            stack.extend(reversed(children.get(sid, [])))
        placed = {sid for sid, _ in ordered}
        ordered.extend((sid, None) for sid, _ in pairs if sid not in placed)  # cycles
        return ordered

    def message_counts(self) -> dict[str, int]:
        """Messages per session id (one pass over Hermes' session index)."""
        sql = "SELECT session_id, count(*) FROM messages GROUP BY session_id"
        return {str(sid): int(n) for sid, n in self.conn.execute(sql)}

    def _fetch(self, sql: str, session_id: str) -> list[tuple[Any, ...]]:
        """Rows of ``sql``; text that is not valid UTF-8 is read with U+FFFD (a slower
        decoder, used only for the query that needs it)."""
        try:
            return self.conn.execute(sql, (session_id,)).fetchall()
        except sqlite3.OperationalError:
            self.conn.text_factory = _lenient
            try:
                return self.conn.execute(sql, (session_id,)).fetchall()
            finally:
                self.conn.text_factory = str

    def session_row(self, session_id: str) -> dict[str, Any]:
        """Every column of one session."""
        row = self._fetch("SELECT * FROM sessions WHERE id = ?", session_id)[0]
        return dict(zip(self.session_columns, row, strict=False))

    def _message_query(self) -> tuple[str, Callable[[Sequence[Any]], MessageFields]]:
        if self._reader is None:
            self._reader = message_reader(self.message_columns)
        return self._reader

    def message_fields(self, session_id: str) -> list[MessageFields]:
        """The messages of one session, in id order, as ``MessageInput`` field tuples
        (:func:`message_reader`)."""
        sql, convert = self._message_query()
        return [convert(row) for row in self._fetch(sql, session_id)]

    def message_inputs(self, session_id: str) -> list[MessageInput]:
        """The messages of one session, in id order, as the store takes them."""
        return [MessageInput(*fields) for fields in self.message_fields(session_id)]

    def message_slices(
        self, session_id: str, skip: int, size: int
    ) -> Iterator[list[MessageFields]]:
        """The messages of one session after its first ``skip``, in id order, ``size`` at a
        time (:meth:`message_fields`), read lazily: one slice in memory however long the
        session is."""
        sql, convert = self._message_query()
        sql += " LIMIT -1 OFFSET ?"
        done, lenient = skip, False
        try:
            while True:
                try:
                    cursor = self.conn.execute(sql, (session_id, done))
                    while rows := cursor.fetchmany(size):
                        done += len(rows)
                        yield [convert(row) for row in rows]
                    return
                except sqlite3.OperationalError:  # text that is not UTF-8: read on leniently
                    if lenient:
                        raise
                    lenient, self.conn.text_factory = True, _lenient
        finally:
            self.conn.text_factory = str


def _lenient(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _extra(row: dict[str, Any], used: frozenset[str]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in row.items() if k not in used and v not in (None, "")}


def _tool_calls(raw: Any, extra: dict[str, Any]) -> list[Any] | None:
    if raw in (None, "", "null", "[]"):
        return None
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        extra["tool_calls"] = raw
        return None
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return value
    extra["tool_calls"] = raw
    return None


_CORE = ("id", "role", "content", "timestamp", "tool_name", "tool_calls", "tool_call_id",
         "reasoning", "reasoning_content")  # fmt: skip


def message_reader(
    columns: Sequence[str],
) -> tuple[str, Callable[[Sequence[Any]], MessageFields]]:
    """The query (one session's messages, ``?`` = its id) and the row conversion for a
    ``messages`` table with ``columns``, every column position fixed by the query (a
    missing core column reads as NULL) so a row converts without a dict.

    Role (``user`` when empty), content, timestamp, tool name, call id, tool calls (parsed
    JSON; a single object becomes a list; text that is not a JSON list or object is kept
    as ``metadata["hermes"]["tool_calls"]``) and reasoning (``reasoning``, else
    ``reasoning_content``) fill the message's fields; every other non-empty column, and
    the Hermes id (the store numbers messages itself), go under ``metadata["hermes"]``.
    The query's last column flags a row holding a BLOB (content and extra columns are
    then decoded as UTF-8 with U+FFFD), so other rows skip that check.
    """
    have = set(columns)
    extras = [name for name in columns if name not in _MESSAGE_FIELDS]
    select = [f'"{n}"' if n in have else "NULL" for n in _CORE] + [f'"{n}"' for n in extras]
    blob = " OR ".join(f"typeof({c}) = 'blob'" for c in select if c != "NULL")
    sql = (f"SELECT {', '.join(select)}, {blob} FROM messages"
           " WHERE session_id = ? ORDER BY id")  # fmt: skip
    first = len(_CORE)

    def convert(row: Sequence[Any]) -> MessageFields:
        content = row[2]
        extra = {n: v for n, v in zip(extras, row[first:-1], strict=True)
                 if v is not None and v != ""}  # fmt: skip
        if row[-1]:
            content, extra = _plain(content), {n: _plain(v) for n, v in extra.items()}
        extra["id"] = int(row[0])
        reasoning = row[7]
        if not reasoning and row[8]:
            reasoning = extra.pop("reasoning_content", row[8])
        calls = row[5]
        return (
            str(row[1] or "user"),
            "" if content is None else str(content),
            row[4] or None,
            None if calls is None else _tool_calls(calls, extra),
            row[6] or None,
            str(reasoning) if reasoning else None,
            float(row[3] or 0.0),
            {"hermes": extra},
        )

    return sql, convert


def _field(name: str, value: Any) -> Any:
    if name in _INT_FIELDS:
        return int(value or 0)
    if name in _FLOAT_FIELDS:
        return None if value is None else float(value)
    if name in _STR_FIELDS:
        return "" if value is None else str(value)
    return value


def session_record(
    row: dict[str, Any], parent: str | None, messages: int, last_message: float
) -> dict[str, Any]:
    """A ``SessionRecord`` dict (the export shape) for one Hermes session row, with its
    checked ``parent`` and the count and newest time of the messages imported with it."""
    record: dict[str, Any] = {
        name: _field(name, row[name]) for name in _SESSION_FIELDS if name in row
    }
    record["id"] = str(row["id"])
    record["source"] = str(row.get("source") or "import")
    record["user_id"] = None if row.get("user_id") in (None, "") else str(row["user_id"])
    record["parent_session_id"] = parent
    started = float(row.get("started_at") or last_message or 0.0)
    record["started_at"] = started
    active = row.get("last_activity_at") or row.get("last_active_at")
    record["last_active_at"] = max(float(active or 0.0), last_message, started)
    record["message_count"] = messages
    extra = _extra(row, frozenset(_SESSION_FIELDS) | _SESSION_SKIP)
    if row.get("parent_session_id") and parent is None:
        extra["parent_session_id"] = row["parent_session_id"]
    record["metadata"] = {"hermes": extra} if extra else {}
    return record
