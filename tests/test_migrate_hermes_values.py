"""Every value ``memoryport migrate hermes`` stores equals a plain import (issue 15).

The fast path reads in a separate process, derives JSON text, CJK flags and event windows
there (``PreparedMessage``), writes batches through ``sync_sessions`` and slices sessions
longer than a batch. The reference imports one whole session per ``sync_sessions`` call
with plain ``MessageInput`` objects, so the store derives everything itself. Both stores
are compared table by table, row by row, and through both search indexes.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memoryport.admin.migrate import HermesOptions, hermes_sessions, migrate_hermes
from memoryport.admin.migrate.hermes_db import HermesDB, session_record
from memoryport.admin.sessions import open_store
from memoryport.storage.sessions.records import SessionRecord
from test_migrate_hermes import SCHEMAS

BATCH = 40
LONG = (130, 95)  # two sessions longer than a batch: sliced
TEXTS = [
    "yesterday we met at the cafe", "Book a flight for last Friday, 2023-11-16", "ok",
    "\u6771\u4eac\u3067\u4f1a\u8b70 next week", "in 3 days or the week before 16 Nov 2023",
    "caf\u00e9 \u2013 since March", "", "plain words only", "I may go in May 2022",
]  # fmt: skip


def build(path: Path, schema: str) -> int:
    """Short and long sessions with time words, CJK, tool calls, reasoning and extras."""
    sessions_sql, messages_sql = SCHEMAS[schema]
    conn = sqlite3.connect(path)
    conn.executescript(f"{sessions_sql};\n{messages_sql};")
    mcols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    sizes = [3, LONG[0], 1, 7, LONG[1], 12, 2]
    for i in range(len(sizes)):
        parent = "s1" if i == 2 else "s4" if i == 5 else None
        started = 0.0 if i == 4 else 1.7e9 + i * 1000  # 0: started_at from its newest message
        conn.execute("INSERT INTO sessions (id, source, user_id, parent_session_id, started_at,"
                     " title) VALUES (?, 'cli', 'ana', ?, ?, ?)",
                     (f"s{i}", parent, started, f"T{i}"))  # fmt: skip
    total = 0
    for i, size in enumerate(sizes):
        for k in range(size):
            row: dict[str, Any] = {
                "session_id": f"s{i}", "role": ("user", "assistant", "tool")[k % 3],
                "content": TEXTS[(i + k) % len(TEXTS)] + f" w{i}x{k}",
                "timestamp": 1.7e9 + i * 1000 + k * 3.5, "token_count": k,
                "finish_reason": "stop" if k % 2 else None, "platform_message_id": "",
            }  # fmt: skip
            if k % 5 == 1:
                call = {"id": f"c{k}", "type": "function", "function": {"name": "f"}}
                row["tool_calls"] = json.dumps(call if k % 2 else [call])
            if k % 7 == 2:
                row["reasoning_content"] = "thinking \u00e9"
            row = {c: v for c, v in row.items() if c in mcols}
            conn.execute(f"INSERT INTO messages ({', '.join(row)}) VALUES"
                         f" ({', '.join('?' for _ in row)})", list(row.values()))  # fmt: skip
            total += 1
    conn.commit()
    conn.close()
    return total


def reference_import(source: Path, home: Path) -> None:
    """One whole session per ``sync_sessions`` call, plain messages, no reader process."""
    with HermesDB(source) as db, open_store(home) as store:
        for session_id, parent in db.session_order():
            messages = db.message_inputs(session_id)
            newest = max(m.timestamp or 0.0 for m in messages)
            record = session_record(db.session_row(session_id), parent, len(messages), newest)
            if "tool_call_count" not in db.session_columns:
                record["tool_call_count"] = sum(len(m.tool_calls or []) for m in messages)
            fields = {k: v for k, v in record.items() if k in SessionRecord.__dataclass_fields__}
            store.sync_sessions([(SessionRecord(**fields), messages)])


def dump(home: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
                for table, order in (("sessions", "id"), ("messages", "id"),
                                     ("message_events", "message_id, start_at, words"))}
    finally:
        conn.close()


def searches(home: Path) -> list[list[tuple[str, int]]]:
    with open_store(home) as store:
        store.check_index()
        return [[(h.message.session_id, h.message.id) for h in store.search_messages(q).hits]
                for q in ("cafe", "w1x77", "\u6771\u4eac", "Friday", "thinking")]


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hermes_sessions, "BATCH_MESSAGES", BATCH)
    monkeypatch.setattr(hermes_sessions, "INLINE_MESSAGES", 0)  # the reader process


class Stop(Exception):
    pass


@pytest.mark.parametrize("schema", ["v21", "older"])
def test_fast_import_stores_what_a_plain_import_stores(tmp_path: Path, schema: str) -> None:
    source = tmp_path / "hermes"
    source.mkdir()
    total = build(source / "state.db", schema)
    reference_import(source / "state.db", tmp_path / "ref")
    expected = dump(tmp_path / "ref")
    assert len(expected["messages"]) == total and expected["message_events"]

    home = tmp_path / "home"
    report = migrate_hermes(home, HermesOptions(source=source))
    assert report.counts == {"sessions": 7, "messages": total, "sessions_unchanged": 0}
    assert [r.detail for r in report.rows if r.kind == "sessions"] == [
        f"7 sessions, {total} messages", "0 sessions grew since: 0 messages added",
        "0 sessions already imported"]  # fmt: skip
    assert dump(home) == expected
    assert searches(home) == searches(tmp_path / "ref")
    again = migrate_hermes(home, HermesOptions(source=source))
    assert again.counts == {"sessions": 0, "messages": 0, "sessions_unchanged": 7}


def test_a_stopped_import_of_long_sessions_resumes_to_the_same_values(tmp_path: Path) -> None:
    source = tmp_path / "hermes"
    source.mkdir()
    total = build(source / "state.db", "v21")
    reference_import(source / "state.db", tmp_path / "ref")
    home = tmp_path / "home"
    seen: list[int] = []

    def stop_after_two(_phase: str, done: int, _total: int) -> None:
        seen.append(done)
        if len(seen) == 3:  # the start, then two committed batches
            raise Stop

    with pytest.raises(Stop):
        migrate_hermes(home, HermesOptions(source=source), progress=stop_after_two)
    partial = len(dump(home)["messages"])
    assert 0 < partial < LONG[0] + 3  # the second session stopped part way through
    report = migrate_hermes(home, HermesOptions(source=source))
    assert report.counts["messages"] == total - partial
    assert dump(home) == dump(tmp_path / "ref")
    assert searches(home) == searches(tmp_path / "ref")

