"""The bulk path of ``memoryport migrate hermes`` (issue 15): batches through
``SessionStore.sync_sessions``, a reader process ahead of the writer, long sessions in
slices, a SIGKILL mid-import then a re-run giving exactly the full import once, the index
searchable afterwards, and every stored value equal to a plain one-session-at-a-time
import."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryport.admin.migrate import HermesOptions, migrate_hermes
from memoryport.admin.sessions import SessionStore, open_store
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from test_migrate_hermes import SCHEMAS

REPO = Path(__file__).resolve().parents[1]
PER_SESSION = 20


def build_big(path: Path, sessions: int) -> int:
    """A Hermes v21 ``state.db`` of ``sessions`` sessions of :data:`PER_SESSION` messages
    (every fifth one a compression child of the one before); returns the message count.
    Message ``k`` of session ``i`` says ``word{i}x{k}`` so each is findable alone."""
    conn = sqlite3.connect(path)
    conn.executescript(";\n".join(SCHEMAS["v21"]))
    conn.executemany(
        "INSERT INTO sessions (id, source, user_id, parent_session_id, started_at, title)"
        " VALUES (?, 'cli', 'ana', ?, ?, ?)",
        ((f"s{i:05d}", f"s{i - 1:05d}" if i % 5 == 4 else None, 1.7e9 + i * 100, f"T{i}")
         for i in range(sessions)),
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp, token_count)"
        " VALUES (?, ?, ?, ?, 3)",
        ((f"s{i:05d}", ("user", "assistant")[k % 2], f"talk about word{i}x{k} today",
          1.7e9 + i * 100 + k) for i in range(sessions) for k in range(PER_SESSION)),
    )  # fmt: skip
    conn.commit()
    conn.close()
    return sessions * PER_SESSION


def stored_messages(home: Path) -> int:
    path = home / "state.db"
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        conn.close()


CHILD = """
import sys, time
from pathlib import Path
from memoryport.admin.migrate import HermesOptions, hermes_sessions, migrate_hermes
hermes_sessions.BATCH_MESSAGES = 200
hermes_sessions.INLINE_MESSAGES = 0  # the reader process
migrate_hermes(Path(sys.argv[2]), HermesOptions(source=Path(sys.argv[1])),
               progress=lambda *_: time.sleep(0.2))
"""


def assert_whole(home: Path, total: int, sessions: int) -> None:
    """Every Hermes message exactly once, per session in order, and all findable."""
    with open_store(home) as store:
        conn = sqlite3.connect(home / "state.db")
        ids = [r[0] for r in conn.execute(
            "SELECT json_extract(metadata, '$.hermes.id') FROM messages ORDER BY id")]
        conn.close()
        assert len(ids) == total and len(set(ids)) == total
        for i in (0, sessions // 2, sessions - 1):
            session = store.get_session(f"s{i:05d}")
            assert session.message_count == PER_SESSION
            contents = [m.content for m in store.get_messages(session.id)]
            assert contents == [f"talk about word{i}x{k} today" for k in range(PER_SESSION)]
            hits = store.search_messages(f"word{i}x{PER_SESSION - 1}").hits
            assert [h.message.session_id for h in hits] == [session.id]
        assert store.get_session("s00004").parent_session_id == "s00003"
        store.check_index()


def test_sigkill_mid_import_then_rerun_imports_everything_exactly_once(tmp_path: Path) -> None:
    source, home = tmp_path / "hermes", tmp_path / "home"
    source.mkdir()
    sessions = 150
    total = build_big(source / "state.db", sessions)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(source), str(home)], env=env)
    try:
        deadline = time.monotonic() + 60
        while stored_messages(home) < 400 and child.poll() is None:
            assert time.monotonic() < deadline, "the import never committed a batch"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    partial = stored_messages(home)
    assert child.returncode == -signal.SIGKILL and 0 < partial < total
    assert partial % PER_SESSION == 0  # whole sessions only
    report = migrate_hermes(home, HermesOptions(source=source))
    assert report.counts["messages"] == total - partial
    assert report.counts["sessions_unchanged"] == partial // PER_SESSION
    assert_whole(home, total, sessions)
    again = migrate_hermes(home, HermesOptions(source=source))
    assert again.counts["messages"] == 0 and again.counts["sessions_unchanged"] == sessions
    assert_whole(home, total, sessions)


def test_batches_with_progress_and_growth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryport.admin.migrate import hermes_sessions

    monkeypatch.setattr(hermes_sessions, "BATCH_MESSAGES", 100)
    monkeypatch.setattr(hermes_sessions, "INLINE_MESSAGES", 0)
    source, home = tmp_path / "hermes", tmp_path / "home"
    source.mkdir()
    total = build_big(source / "state.db", 30)
    seen: list[tuple[str, int, int]] = []
    report = migrate_hermes(home, HermesOptions(source=source),
                            progress=lambda *a: seen.append(a))  # fmt: skip
    assert report.counts["messages"] == total and report.counts["sessions"] == 30
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and done[-1] == total and len(done) >= total // 100
    assert {t for _, _, t in seen} == {total}
    assert_whole(home, total, 30)
    conn = sqlite3.connect(source / "state.db")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES"
                 " ('s00007', 'user', 'one more zanzibar', 1.8e9)")  # fmt: skip
    conn.execute("UPDATE sessions SET title = 'Renamed' WHERE id = 's00007'")
    conn.commit()
    conn.close()
    grown = migrate_hermes(home, HermesOptions(source=source))
    assert grown.counts["messages"] == 1 and grown.counts["sessions_unchanged"] == 29
    with open_store(home) as store:
        session = store.get_session("s00007")
        assert (session.title, session.message_count) == ("Renamed", PER_SESSION + 1)
        assert session.last_active_at == 1.8e9
        hits = store.search_messages("zanzibar").hits
        assert [h.message.session_id for h in hits] == ["s00007"]


def test_reader_process_passes_batches_errors_and_stops(tmp_path: Path) -> None:
    from memoryport.admin.migrate.hermes_db import HermesDB
    from memoryport.admin.migrate.hermes_reader import plain_batches, read_in_process
    from memoryport.errors import StoreError
    from memoryport.storage.sessions.rows import derive

    path = tmp_path / "state.db"
    build_big(path, 12)
    todo = [(f"s{i:05d}", None, 0, PER_SESSION) for i in range(12)]
    with HermesDB(path) as db:
        inline = list(plain_batches(db, todo, 50))
        ahead = [[(r, [(*m, derive(m[1], m[6], m[3])) for m in ms], b)
                  for r, ms, b in batch] for batch in inline]  # fmt: skip
        assert list(read_in_process(db, todo, 50)) == ahead  # with what the store derives
        assert [len(b) for b in inline] == [3, 3, 3, 3]  # whole sessions, ~50 messages each
        with pytest.raises(IndexError):  # raised in the reader, re-raised here
            list(read_in_process(db, [*todo[:4], ("missing", None, 0, 1)], 50))
        batches = read_in_process(db, todo, 20)
        assert next(batches) == ahead[0][:1]
        batches.close()  # stops the reader before returning
        path.rename(tmp_path / "moved.db")  # the reader opens the path: gone
        with pytest.raises(StoreError, match="cannot read the Hermes database"):
            list(read_in_process(db, todo, 20))


def test_sync_sessions_creates_grows_and_refuses_an_unknown_parent(store: SessionStore) -> None:
    """On both backends (SQLite's one-transaction path, PostgreSQL's per-session default)."""
    from memoryport.errors import SessionNotFound
    from memoryport.storage.sessions.records import MessageInput, SessionRecord

    root = SessionRecord(id="r", source="cli", user_id="ana", started_at=10.0, title="R")
    child = SessionRecord(id="c", source="cli", parent_session_id="r", started_at=20.0)
    said = [MessageInput("user", "hello lisbon", timestamp=11.0),
            MessageInput("assistant", "ok", timestamp=12.0)]  # fmt: skip
    first = store.sync_sessions([(root, said), (child, said[:1])])
    assert (first.sessions_created, first.messages_created) == (2, 3)
    assert store.get_session("c").user_id == "ana"  # inherited from its parent
    assert store.get_session("r").last_active_at == 12.0
    more = [*said, MessageInput("user", "and porto", timestamp=30.0)]
    again = store.sync_sessions([(root, more), (child, said[:1])])
    assert (again.sessions_grown, again.messages_appended, again.sessions_unchanged) == (
        1, 1, 1)  # fmt: skip
    assert [m.content for m in store.get_messages("r")][-1] == "and porto"
    orphan = SessionRecord(id="o", source="cli", parent_session_id="gone", started_at=1.0)
    with pytest.raises(SessionNotFound, match="gone"):
        store.sync_sessions([(SessionRecord(id="x", source="cli"), said), (orphan, said)])
    if isinstance(store, SQLiteSessionStore):
        with pytest.raises(SessionNotFound):
            store.get_session("x")  # the whole batch was rolled back
    assert store.search_messages("porto").hits[0].message.session_id == "r"
    store.check_index()


def test_archive_import_keeps_free_ids_and_renumbers_taken_ones(tmp_path: Path) -> None:
    from memoryport.storage.sessions.records import MessageInput

    with open_store(tmp_path / "a") as a, open_store(tmp_path / "b") as b:
        a.create_session("s1", source="cli")
        a.append_messages("s1", [MessageInput("user", f"apple {k}") for k in range(3)])
        out = io.StringIO()
        a.export_jsonl(out)
        lines = out.getvalue().splitlines()
        b.create_session("other", source="cli")
        b.append_messages("other", [MessageInput("user", "pear")])  # takes id 1
        report = b.import_jsonl(lines)
        assert (report.sessions_imported, report.messages_imported) == (1, 3)
        ids = [m.id for m in b.get_messages("s1")]
        assert ids == sorted(ids) and 1 not in ids  # id 1 was taken: renumbered in order
        assert [m.content for m in b.get_messages("s1")] == ["apple 0", "apple 1", "apple 2"]
        assert len(b.search_messages("apple").hits) == 3
        assert b.import_jsonl(lines).sessions_skipped == 1
        b.check_index()
    with open_store(tmp_path / "c") as c:
        c.import_jsonl(lines)
        assert [m.id for m in c.get_messages("s1")] == [1, 2, 3]  # free: kept
        c.append_messages("s1", [MessageInput("user", "apple 3")])
        assert [m.id for m in c.get_messages("s1")] == [1, 2, 3, 4]
        c.check_index()


def test_without_a_python_to_start_the_reader_imports_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryport.admin.migrate import hermes_sessions

    monkeypatch.setattr(hermes_sessions, "INLINE_MESSAGES", 0)
    monkeypatch.setattr(hermes_sessions, "BATCH_MESSAGES", 50)
    monkeypatch.setattr(sys, "executable", "")  # an embedded interpreter
    source, home = tmp_path / "hermes", tmp_path / "home"
    source.mkdir()
    total = build_big(source / "state.db", 10)
    report = migrate_hermes(home, HermesOptions(source=source))
    assert report.counts["messages"] == total
    assert_whole(home, total, 10)


def test_a_reader_process_that_dies_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryport.admin.migrate import hermes_sessions
    from memoryport.errors import StoreError

    monkeypatch.setattr(hermes_sessions, "INLINE_MESSAGES", 0)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # starts, exits at once
    source, home = tmp_path / "hermes", tmp_path / "home"
    source.mkdir()
    build_big(source / "state.db", 3)
    with pytest.raises(StoreError, match=r"reader process ended unexpectedly \(exit code 1\)"):
        migrate_hermes(home, HermesOptions(source=source))
    assert stored_messages(home) == 0
