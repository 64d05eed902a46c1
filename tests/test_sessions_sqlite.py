"""SQLite-specific behaviour: migrations, journal modes, concurrency, index internals."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage.sessions.sqlite import SQLiteSessionStore, migrations


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name"
    ).fetchall()
    return [(t, n, " ".join(s.split())) for t, n, s in rows]


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_blank_and_every_older_version_migrate_to_the_same_schema(tmp_path: Path) -> None:
    blank = _raw(tmp_path / "blank.db")
    assert migrations.migrate(blank) == [name for name, _ in migrations.MIGRATIONS]
    expected = _schema(blank)
    assert migrations.pending(blank) == [] and migrations.migrate(blank) == []
    for index, (name, _) in enumerate(migrations.MIGRATIONS):
        conn = _raw(tmp_path / f"at-{index}.db")
        migrations.migrate(conn, stop_before=name)
        assert migrations.applied(conn) == [n for n, _ in migrations.MIGRATIONS[:index]]
        if index:  # data written at the older version must survive and become searchable
            conn.execute(
                "INSERT INTO sessions(id, source, started_at, last_active_at)"
                " VALUES ('s', 'cli', 1, 1)"
            )
            columns = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
            flag = ("", "") if "cjk" not in columns else (", cjk", ", 1")  # writers set it
            conn.execute(
                f"INSERT INTO messages(session_id, role, content, timestamp{flag[0]})"
                f" VALUES ('s', 'user', 'legacy walrus 東京タワー', 1{flag[1]})"
            )
        conn.close()
        store = SQLiteSessionStore(tmp_path / f"at-{index}.db")
        assert store.applied_migrations() == [n for n, _ in migrations.MIGRATIONS]
        assert _schema(store.conn) == expected
        if index:
            assert len(store.search_messages("walrus").hits) == 1
            assert len(store.search_messages("東京タワー").hits) == 1
        store.check_index()
        store.close()


def test_failed_migration_rolls_back_and_raises(tmp_path: Path, monkeypatch: Any) -> None:
    def broken(conn: migrations.Transaction) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        conn.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, ("m999_broken", broken)])
    conn = _raw(tmp_path / "x.db")
    with pytest.raises(StoreError, match="m999_broken"):
        migrations.migrate(conn)
    assert "m999_broken" not in migrations.applied(conn)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name='half_done'").fetchone() is None


class _NoWalConnection(sqlite3.Connection):
    """Simulates a network filesystem that refuses WAL (no NFS is available in CI)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.replace(" ", "").lower() == "pragmajournal_mode=wal":
            raise sqlite3.OperationalError("locking protocol")
        return super().execute(sql, *args)


class _NoWalStore(SQLiteSessionStore):
    connection_factory = _NoWalConnection


def test_wal_refused_falls_back_to_delete_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "nfs" / "state.db"
    with caplog.at_level(logging.WARNING, logger="memoryport.storage.sessions"):
        first = _NoWalStore(path)
        second = _NoWalStore(path)
    warnings = [r for r in caplog.records if "WAL" in r.getMessage()]
    assert len(warnings) == 1 and "locking protocol" in warnings[0].getMessage()
    assert first.journal_mode == second.journal_mode == "delete"
    session = first.create_session()
    first.append_message(session.id, {"role": "user", "content": "still works"})
    assert second.search_messages("works").hits
    first.close()
    second.close()


def test_default_journal_is_wal(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    assert store.journal_mode == "wal"
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    store.close()


def test_unavailable_database_is_a_store_error(tmp_path: Path) -> None:
    garbage = tmp_path / "state.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="unavailable"):
        SQLiteSessionStore(garbage)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="unavailable"):
        SQLiteSessionStore(blocker / "sub" / "state.db")


def test_failing_fts_query_is_not_silent(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    session = store.create_session()
    store.append_message(session.id, {"role": "user", "content": "walrus"})
    store.conn.execute("DROP TABLE messages_fts")
    with pytest.raises(StoreError, match="search failed"):
        store.search_messages("walrus")
    store.close()


def test_update_triggers_are_narrow(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    session = store.create_session()
    mid = store.append_message(session.id, {"role": "user", "content": "narwhal"})
    store.conn.execute("UPDATE messages SET metadata = '{\"seen\":1}' WHERE id = ?", (mid,))
    store.conn.execute("UPDATE messages SET content = 'dugong' WHERE id = ?", (mid,))
    assert not store.search_messages("narwhal").hits and store.search_messages("dugong").hits
    sql = store.conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'messages_fts_au'"
    ).fetchone()[0]
    assert "UPDATE OF content, tool_name, tool_calls" in sql
    store.check_index()
    store.close()


def test_forget_removes_terms_from_the_index_itself(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    session = store.create_session(user_id="u")
    store.append_messages(session.id, [{"role": "user", "content": "zyzzyva 東京タワー"}])
    conn = store.conn
    conn.execute("CREATE VIRTUAL TABLE temp.v_words USING fts5vocab(main, messages_fts, row)")
    conn.execute("CREATE VIRTUAL TABLE temp.v_tri USING fts5vocab(main, messages_trigram, row)")
    assert conn.execute("SELECT doc FROM v_words WHERE term = 'zyzzyva'").fetchone() == (1,)
    assert conn.execute("SELECT doc FROM v_tri WHERE term = '東京タ'").fetchone() == (1,)
    store.forget_user("u")
    assert conn.execute("SELECT count(*) FROM v_words").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM v_tri").fetchone() == (0,)
    store.check_index()
    store.close()


def test_trigram_index_only_holds_cjk_messages(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    session = store.create_session()
    store.append_messages(
        session.id,
        [{"role": "user", "content": "plain english"}, {"role": "user", "content": "日本語"}],
    )
    rows = store.conn.execute("SELECT count(*) FROM messages_trigram_src").fetchone()
    assert rows == (1,)
    store.close()


def _writer(path: str, worker: int, count: int, queue: Any) -> None:
    try:
        store = SQLiteSessionStore(path, busy_timeout=1.0)
        session = store.create_session(f"w{worker}")
        for i in range(count):
            store.append_message(
                session.id, {"role": "user", "content": f"worker{worker} item {i}"}
            )
        store.append_messages(
            session.id, [{"role": "assistant", "content": f"batch{worker} {i}"} for i in range(50)]
        )
        store.close()
        queue.put(("ok", worker))
    except Exception as exc:
        queue.put(("error", repr(exc)))


def _searcher(path: str, rounds: int, queue: Any) -> None:
    try:
        store = SQLiteSessionStore(path, busy_timeout=1.0)
        for _ in range(rounds):
            store.search_messages("item", sort="newest", limit=5)
            store.list_sessions()
        store.close()
        queue.put(("ok", "searcher"))
    except Exception as exc:
        queue.put(("error", repr(exc)))


def test_four_writers_and_a_searcher_never_see_locked(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    SQLiteSessionStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, 150, queue)) for w in range(4)]
    procs.append(ctx.Process(target=_searcher, args=(path, 150, queue)))
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert [r for r in results if r[0] != "ok"] == []
    store = SQLiteSessionStore(path)
    assert sum(s.session.message_count for s in store.list_sessions()) == 4 * 200
    assert len(store.search_messages("item", limit=1000).hits) == 600
    store.check_index()
    store.close()


def test_relevance_on_very_common_words_stays_bounded(tmp_path: Path, monkeypatch: Any) -> None:
    from memoryport.storage.sessions.sqlite import rank as sqlite_rank

    monkeypatch.setattr(sqlite_rank, "RELEVANCE_WINDOW", 5)
    store = SQLiteSessionStore(tmp_path / "state.db")
    old = store.create_session("old", user_id="u1")
    rare_id = store.append_message(old.id, {"role": "user", "content": "common okapi"})
    new = store.create_session("new", user_id="u2")
    ids = store.append_messages(new.id, [{"role": "user", "content": "common"}] * 40)
    # an OR with a rarer term ranks that term's (oldest) match first
    hits = store.search_messages("common okapi", limit=3).hits
    assert hits[0].message.id == rare_id and len(hits) == 3
    # only common terms: the newest matches are ranked, and the page is still full
    assert {h.message.id for h in store.search_messages("common", limit=5).hits} <= set(ids)
    # scope filters that discard the newest window widen it until the page fills
    scoped = store.search_messages("common", user_id="u1", limit=5).hits
    assert [h.message.id for h in scoped] == [rare_id]
    assert len(store.search_messages("common", limit=30, offset=10).hits) == 30
    store.close()


def test_title_lookup_is_an_index_search(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "t.db", user_id="u1")
    store.create_session("t", title="Weekly Review")
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    assert [s.id for s in store.sessions_titled(" weekly REVIEW")] == ["t"]
    store.conn.set_trace_callback(None)
    [statement] = [s for s in seen if "FROM sessions" in s]
    plan = " ".join(r[3] for r in store.conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
    assert "USING INDEX sessions_title" in plan and "SCAN s" not in plan
    store.close()


def test_batched_append_indexes_in_bulk_and_leaves_no_flag(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "bulk.db")
    store.create_session("s")
    ids = store.append_messages("s", [{"role": "user", "content": f"okapi {i}"} for i in range(50)])
    one = store.append_message("s", {"role": "user", "content": "okapi single"})
    with pytest.raises(SessionNotFound):
        store.append_messages("nope", [{"role": "user", "content": "okapi"}] * 2)
    assert store.get_meta("fts_bulk_insert") is None
    hits = store.search_messages("okapi", sort="oldest", limit=100).hits
    assert [h.message.id for h in hits] == [*ids, one]
    store.check_index()
    store.forget_message(ids[3])
    store.rebuild_index()
    store.check_index()
    assert len(store.search_messages("okapi", limit=100).hits) == 50
    store.close()


def test_a_new_database_is_private_and_tilde_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    store = SQLiteSessionStore("~/mp/state.db")
    store.create_session("s1")
    store.close()
    created = tmp_path / "user" / "mp" / "state.db"
    assert store.path == str(created) and created.exists()
    assert not (tmp_path / "~").exists()
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    assert stat.S_IMODE(created.parent.stat().st_mode) == 0o700


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SQLiteSessionStore(path).close()
    os.chmod(path, 0o640)
    SQLiteSessionStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
