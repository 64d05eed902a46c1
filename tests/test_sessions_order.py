"""Chronological search orders by message time (ties by id), not by insertion order."""

from __future__ import annotations

from pathlib import Path

from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.storage.sessions.sqlite import search as sqlite_search


def _fill(store: SessionStore, name: str, start: float, count: int, text: str) -> list[int]:
    sid = store.create_session(name, source="cli", started_at=start).id
    return store.append_messages(
        sid,
        [{"role": "user", "content": text, "timestamp": start + i} for i in range(count)],
    )


def test_newest_orders_by_timestamp_after_importing_older_sessions(store: SessionStore) -> None:
    recent = _fill(store, "recent", 2_000_000.0, 3, "walrus recent")
    imported = _fill(store, "imported", 1_000_000.0, 3, "walrus imported")  # higher ids
    assert min(imported) > max(recent)
    newest = [h.message.id for h in store.search_messages("walrus", sort="newest").hits]
    assert newest == [*reversed(recent), *reversed(imported)]
    oldest = [h.message.id for h in store.search_messages("walrus", sort="oldest").hits]
    assert oldest == [*imported, *recent]
    cjk_recent = _fill(store, "cjk-recent", 3_000_000.0, 1, "東京")
    cjk_old = _fill(store, "cjk-old", 500_000.0, 1, "東京")
    cjk = [h.message.id for h in store.search_messages("東", sort="newest").hits]
    assert cjk == [*cjk_recent, *cjk_old]


def test_equal_timestamps_tie_by_id(store: SessionStore) -> None:
    sid = store.create_session(source="cli").id
    ids = store.append_messages(
        sid, [{"role": "user", "content": "walrus", "timestamp": 5.0} for _ in range(4)]
    )
    hits = store.search_messages("walrus", sort="newest").hits
    assert [h.message.id for h in hits] == list(reversed(ids))


def test_common_word_walks_the_time_index_in_time_order(tmp_path: Path) -> None:
    """More matches than SMALL_MATCH take the index-walk path; order must still be by time."""
    store = SQLiteSessionStore(tmp_path / "state.db")
    many = sqlite_search.SMALL_MATCH + 500
    recent = _fill(store, "recent", 2_000_000.0, many // 2, "common walrus")
    old = _fill(store, "old", 1_000_000.0, many - many // 2, "common walrus")
    hidden = store.create_session("t", source="tool", started_at=9e9).id  # hidden source
    store.append_message(hidden, {"role": "user", "content": "common walrus", "timestamp": 9e9})
    result = store.search_messages("common", sort="newest", limit=30, offset=10)
    assert [h.message.id for h in result.hits] == list(reversed(recent))[10:40]
    result = store.search_messages("common", sort="oldest", limit=5)
    assert [h.message.id for h in result.hits] == old[:5]
    scoped = store.search_messages("common", sort="newest", session_ids=["old"], limit=3)
    assert [h.message.id for h in scoped.hits] == list(reversed(old))[:3]
    plan = store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT m.id FROM messages m INDEXED BY messages_time"
        " WHERE (m.timestamp, m.id) < (?, ?) ORDER BY m.timestamp DESC, m.id DESC LIMIT 5",
        (1e18, 2**62),
    ).fetchall()
    assert "messages_time" in str(plan) and "TEMP B-TREE" not in str(plan)
    store.close()
