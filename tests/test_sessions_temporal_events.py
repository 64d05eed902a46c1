"""Write-time event windows (m007), store-anchored query periods and the period browse."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from memoryport.providers.sessions.tool import ToolContext, session_search
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.storage.sessions.sqlite import migrations as sqlite_migrations


def _local(year: int, month: int, day: int, hour: int = 12) -> float:
    return time.mktime((year, month, day, hour, 0, 0, 0, 0, -1))


def _events(path: Path) -> list[tuple[int, str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT message_id, date(start_at, 'unixepoch', 'localtime'),"
            " precision, words FROM message_events ORDER BY message_id"
        ).fetchall()
    finally:
        conn.close()
    return [tuple(r) for r in rows]


def test_append_resolves_against_the_message_time_and_forget_removes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    sid = store.create_session(source="cli", started_at=_local(2022, 8, 10)).id
    ids = store.append_messages(
        sid,
        [
            {"role": "user", "content": "Yesterday I took my dogs to the beach",
             "timestamp": _local(2022, 8, 10)},
            {"role": "user", "content": "no dates here", "timestamp": _local(2022, 8, 10)},
        ],
    )
    one = store.append_message(
        sid, {"role": "user", "content": "last Friday too", "timestamp": _local(2022, 8, 10)}
    )
    assert _events(path) == [
        (ids[0], "2022-08-09", "day", "Yesterday"),
        (one, "2022-08-05", "day", "last Friday"),
    ]
    store.forget_message(ids[0])
    assert [r[0] for r in _events(path)] == [one]
    store.close()


def test_m007_backfills_stored_messages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    sqlite_migrations.migrate(conn, stop_before="m007_message_events")
    conn.execute(
        "INSERT INTO sessions (id, source, started_at, last_active_at) VALUES ('s', 'cli', 0, 0)"
    )
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
        ("s", "user", "Dyed my hair last week", _local(2022, 4, 15)),
    )
    conn.close()
    store = SQLiteSessionStore(path)
    assert "m007_message_events" in store.applied_migrations()
    store.close()
    assert _events(path) == [(1, "2022-04-04", "week", "last week")]


def test_event_window_lifts_the_message_that_said_it(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(source="cli", started_at=_local(2023, 7, 24)).id
    stamp = _local(2023, 7, 24)
    plain, dated = store.append_messages(
        sid,
        [
            {"role": "user", "content": "Andrew went hiking", "timestamp": stamp},
            {"role": "user", "content": "Andrew went hiking last Monday", "timestamp": stamp},
        ],
    )
    hits = store.search_messages("Andrew hiking the Monday before July 24, 2023").hits
    assert [h.message.id for h in hits][:1] == [dated] and plain in [h.message.id for h in hits]
    store.close()


def test_relative_query_is_anchored_on_the_store_not_the_wall_clock(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    early = store.create_session(source="cli", started_at=_local(2020, 3, 3)).id
    late = store.create_session(source="cli", started_at=_local(2020, 3, 10)).id
    garden = {"role": "user", "content": "talked about the garden", "timestamp": _local(2020, 3, 3)}
    store.append_message(early, garden)
    store.append_message(
        late, {"role": "user", "content": "bought seeds", "timestamp": _local(2020, 3, 10)}
    )
    # 2020-03-10 is a Tuesday: "last Tuesday" is 3 March 2020, years before today.
    out = session_search(store, {"query": "what did we talk about last Tuesday?"}, ToolContext())
    assert out["mode"] == "browse" and out["count"] == 1
    assert out["results"][0]["session_id"] == early
    words = session_search(store, {"query": "garden last Tuesday"}, ToolContext())
    assert words["mode"] == "discover"
    store.close()
