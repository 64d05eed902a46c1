"""The SQLite write path since m008: writers index new messages themselves (no insert
trigger), event windows are still resolved for every written message, and a session
replaced by import gets its events resolved again from the new words."""

from __future__ import annotations

import io
import sqlite3
import time
from pathlib import Path

from memoryport.storage.sessions.sqlite import SQLiteSessionStore


def _local(year: int, month: int, day: int) -> float:
    return time.mktime((year, month, day, 12, 0, 0, 0, 0, -1))


def _events(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT date(start_at, 'unixepoch', 'localtime'), words FROM message_events"
            " ORDER BY message_id, start_at"
        ).fetchall()
    finally:
        conn.close()
    return [(r[0], r[1]) for r in rows]


def test_batched_single_and_imported_messages_are_indexed_with_events(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    triggers = {
        r[0]
        for r in store.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
        )
    }
    assert "messages_fts_ai" not in triggers and "messages_trigram_ai" not in triggers
    assert "messages_fts_ad" in triggers and "messages_fts_au" in triggers
    day = _local(2022, 8, 10)
    sid = store.create_session(source="cli", started_at=day).id
    batch = store.append_messages(
        sid,
        [
            {"role": "user", "content": "Yesterday the okapi ate", "timestamp": day},
            {"role": "user", "content": "東京タワーに行った", "timestamp": day},
            {"role": "user", "content": "plain walrus", "timestamp": day},
        ],
    )
    one = store.append_message(sid, {"role": "user", "content": "東京タワー last Friday",
                                     "timestamp": day})
    assert [h.message.id for h in store.search_messages("okapi").hits] == [batch[0]]
    assert [h.message.id for h in store.search_messages("walrus").hits] == [batch[2]]
    found = {h.message.id for h in store.search_messages("東京タワー").hits}
    assert found == {batch[1], one}
    assert _events(path) == [("2022-08-09", "Yesterday"), ("2022-08-05", "last Friday")]
    store.check_index()

    dump = io.StringIO()
    store.export_jsonl(dump)
    edited = dump.getvalue().replace("Yesterday the okapi ate", "The okapi ate 3 days ago")
    report = store.import_jsonl(edited.splitlines(), on_conflict="replace")
    assert report.messages_imported == 4
    assert _events(path) == [("2022-08-07", "3 days ago"), ("2022-08-05", "last Friday")]
    assert [h.message.content for h in store.search_messages("okapi").hits] == [
        "The okapi ate 3 days ago"
    ]
    assert len(store.search_messages("東京タワー").hits) == 2
    store.check_index()
    store.close()
