"""The turn path's cost levers keep the holographic recall exact (real SQLite files).

* searches read on their own connection, so one never waits for a write in progress;
* the row cache (``storage.turns.rowcache``) and the word-index-only ranking of a one-user
  store return exactly what a freshly opened index (nothing cached) returns, whoever
  wrote the turns in between (this index, another one on the same file, a bulk import).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memoryport.errors import StoreError
from memoryport.storage.turns import TurnHit, TurnIndex, TurnInput, rowcache, schema
from memoryport.storage.turns.rowcache import CATCH_UP_MAX

WORDS = ("sqlite", "schema", "tea", "deadline", "pottery", "paris", "museum", "guitar", "vim",
         "emacs", "budget", "lunch", "garden", "concert", "python", "rust", "train", "beach")
NAMES = ("Alice", "Bob", "Caroline", "Dmitri")
START = 1_700_000_000.0


def _turn(rng: random.Random, session: str, user: str | None, at: float) -> TurnInput:
    words = rng.sample(WORDS, rng.randint(2, 6))
    if rng.random() < 0.3:
        words.insert(1, rng.choice(NAMES))
    return TurnInput(session, rng.choice(NAMES), " ".join(words), at, "", user)


def _key(hits: list[TurnHit]) -> list[tuple[int, float, str]]:
    return [(h.turn_id, h.score, h.text) for h in hits]


def _cold(path: Path, query: str, user: str | None) -> list[TurnHit]:
    """What an index that has cached nothing returns."""
    fresh = TurnIndex(path, dense=False)
    try:
        return fresh.search(query, limit=15, user_id=user)
    finally:
        fresh.close()


@pytest.mark.parametrize("users", [(None,), (None, "u2")], ids=["one-user", "two-users"])
def test_a_long_lived_index_ranks_exactly_as_a_fresh_one(
        tmp_path: Path, users: tuple[str | None, ...]) -> None:
    """Turns added by the searching index and by another one on the same file, sessions
    interleaved, blocks filling past their size: every search equals a cold one."""
    path = tmp_path / "holographic.db"
    rng = random.Random(12)
    warm = TurnIndex(path, dense=False)
    other = TurnIndex(path, dense=False)
    try:
        at = START
        for step in range(36):
            writer = warm if step % 3 else other
            batch = []
            for _ in range(rng.randint(1, 8)):
                at += 60
                batch.append(_turn(rng, f"s{rng.randint(1, 2)}", rng.choice(users), at))
            writer.add_turns(batch)
            for user in users:
                query = " ".join(rng.sample(WORDS, 3))
                if step % 4 == 0:
                    query = f"Where did {rng.choice(NAMES)} go for {query}?"
                assert _key(warm.search(query, limit=15, user_id=user)) == _key(
                    _cold(path, query, user)), (step, query, user)
    finally:
        warm.close()
        other.close()


def test_a_full_row_cache_starts_over_and_stays_exact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache bounded to a few rows (and a few hundred characters) is cleared again and
    again mid-search; every search still equals a cold one."""
    monkeypatch.setattr(rowcache, "ROWS_CACHE", 7)
    monkeypatch.setattr(rowcache, "ROWS_CHARS", 300)
    path = tmp_path / "holographic.db"
    rng = random.Random(8)
    with TurnIndex(path, dense=False) as warm:
        for step in range(12):
            warm.add_turns([_turn(rng, f"s{rng.randint(1, 2)}", None, START + step * 10 + i)
                            for i in range(rng.randint(3, 9))])
            query = " ".join(rng.sample(WORDS, 3))
            assert _key(warm.search(query, limit=15)) == _key(_cold(path, query, None))


def test_a_bulk_import_by_another_index_is_seen_whole(tmp_path: Path) -> None:
    """More turns than one catch-up reads (another process importing a conversation):
    the warm index still ranks exactly as a fresh one."""
    path = tmp_path / "holographic.db"
    rng = random.Random(5)
    warm = TurnIndex(path, dense=False)
    other = TurnIndex(path, dense=False)
    try:
        warm.add_turns([_turn(rng, "s1", None, START + i) for i in range(40)])
        assert warm.search("sqlite schema tea")
        other.add_turns([_turn(rng, f"s{1 + i // 300}", None, START + 100 + i)
                         for i in range(CATCH_UP_MAX + 200)])
        for query in ("sqlite schema tea", "pottery paris museum", "Where did Bob go?"):
            assert _key(warm.search(query, limit=15)) == _key(_cold(path, query, None))
    finally:
        warm.close()
        other.close()


def test_a_search_does_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    """While this index's own write waits on the database (another connection holds the
    write lock), a search answers from the committed turns at once."""
    path = tmp_path / "holographic.db"
    index = TurnIndex(path, dense=False)
    index.add_turns([TurnInput("s1", "Alice", "the sqlite schema is settled", START)])
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    errors: list[BaseException] = []

    def write() -> None:
        try:
            index.add_turns([TurnInput("s1", "Bob", "sqlite schema version two", START + 1)])
        except (StoreError, sqlite3.Error) as exc:  # pragma: no cover - shown on failure
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        time.sleep(0.3)  # let the writer take the index's write lock and wait on the file
        hits = index.search("sqlite schema")
        still_writing = writer.is_alive()
    finally:
        blocker.execute("COMMIT")
        writer.join()
        blocker.close()
    assert still_writing, "the search waited for the write to finish"
    assert [h.text for h in hits] == ["the sqlite schema is settled"]
    assert not errors
    assert {h.text for h in index.search("sqlite schema")} == {
        "the sqlite schema is settled", "sqlite schema version two"}
    index.close()


def test_an_older_store_merges_its_word_indexes_two_at_a_time(tmp_path: Path) -> None:
    """A store made before ``m004`` gets FTS5 ``automerge`` 2 when opened (a storage
    matter: the index that merged and a fresh one rank its turns alike)."""
    path = tmp_path / "holographic.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema.migrate(conn, stop_before="m004_fts_automerge")
    conn.close()
    rng = random.Random(3)
    with TurnIndex(path, dense=False) as index:
        index.add_turns([_turn(rng, f"s{i % 3}", None, START + i) for i in range(200)])
        before = _key(index.search("sqlite tea museum", limit=15))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for table in ("turns_fts", "blocks_fts"):
            assert conn.execute(f"SELECT v FROM {table}_config WHERE k = 'automerge'"
                                ).fetchone() == (2,)
        assert "m004_fts_automerge" in schema.applied(conn)
    finally:
        conn.close()
    assert _key(_cold(path, "sqlite tea museum", None)) == before


@pytest.mark.parametrize("limit", [1, 6, 15, 400])
def test_search_returns_the_full_ordering_of_its_candidates(tmp_path: Path, limit: int) -> None:
    """Only the candidates scoring at least the limit-th best score are ordered in full:
    the hits are still the head of every candidate sorted by score, then the turn's own
    BM25, then the older turn (a store full of ties: the same words over and over)."""
    from memoryport.storage.turns.rank import combine

    index = TurnIndex(tmp_path / "holographic.db", dense=False)
    try:
        rng = random.Random(5)
        for n in range(160):
            text = " ".join(rng.sample(WORDS[:5], 3))  # few words: many equal scores
            index.add_turns([TurnInput(f"s{n % 3}", "Alice", text, START + n),
                             TurnInput(f"s{n % 3}", "Bob", f"{text} ({n})", START + n)])
        for query in ("sqlite schema tea", "What did Alice say about the deadline?", "pottery"):
            rows, parts = index.candidates(query)
            scores = combine(parts, index.weights)
            full = sorted(range(len(rows)),
                          key=lambda i: (-scores[i], -parts[i].main, rows[i][0], i))
            want = [(rows[i][0], round(scores[i], 6)) for i in full[:limit]]
            got = [(h.turn_id, h.score) for h in index.search(query, limit=limit)]
            assert got == want and len(got) == min(limit, len(rows))
    finally:
        index.close()


def _held_sync(tmp_path: Path) -> tuple[Any, sqlite3.Connection, threading.Thread]:
    """A provider whose sync_turn of a new turn is held up by another connection's write
    lock on its database (released by the caller), running on its own thread."""
    from memoryport.providers.holographic import HolographicProvider
    from memoryport.providers.holographic.provider import DB_NAME

    home = tmp_path / "home"
    home.mkdir()
    provider = HolographicProvider()
    provider.initialize("s1", home=str(home))
    provider.sync_turn("We painted the garden shed blue.", "Nice.", session_id="s0")
    blocker = sqlite3.connect(home / DB_NAME, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    sync = threading.Thread(target=provider.sync_turn, daemon=True,
                            args=("My cat is called Miso.", "A lovely name."),
                            kwargs={"session_id": "s1"})
    sync.start()
    return provider, blocker, sync


def test_recall_waits_for_the_turn_still_being_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall that starts while sync_turn is still storing the previous turn waits for
    it (instead of racing it for the CPU), so it sees that turn and the fact it states."""
    from memoryport.providers.holographic import provider as module

    monkeypatch.setattr(module, "SYNC_WAIT", 30.0)
    provider, blocker, sync = _held_sync(tmp_path)
    try:
        time.sleep(0.1)  # the sync is waiting for the write lock
        threading.Timer(0.2, blocker.execute, ("COMMIT",)).start()
        text = provider.prefetch("What is my cat called?", session_id="s1")
        facts, turns = text.split("Earlier turns")
        assert "My cat is called Miso (" in facts  # the fact the turn states
        assert "user: My cat is called Miso." in turns  # and the turn itself
        sync.join(10)
    finally:
        blocker.close()
        provider.shutdown()


def test_recall_waits_for_a_stuck_sync_only_so_long(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync held up past SYNC_WAIT does not hold up the recall: it answers with what is
    stored, and the turn is stored once the lock is free."""
    from memoryport.providers.holographic import provider as module

    monkeypatch.setattr(module, "SYNC_WAIT", 0.05)
    provider, blocker, sync = _held_sync(tmp_path)
    try:
        time.sleep(0.1)
        text = provider.prefetch("What did we paint blue?", session_id="s1")
        assert "garden shed" in text and "Miso" not in text
        assert sync.is_alive()  # still waiting for the lock: the recall did not wait
        blocker.execute("COMMIT")
        sync.join(10)
        assert "Miso" in provider.prefetch("What is my cat called?", session_id="s1")
    finally:
        blocker.close()
        provider.shutdown()


def _block_postings(path: Path) -> list[tuple[Any, ...]]:
    """Every (term, block, offset) of the session-block word index, read back."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, blocks_fts, instance)")
        return conn.execute("SELECT term, doc, offset FROM temp.v ORDER BY 1, 2, 3").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("bounds", [(32, 2_000_000), (1, 50)], ids=["default", "tiny"])
def test_block_text_kept_by_the_writer_matches_the_stored_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bounds: tuple[int, int]) -> None:
    """The writer reuses the text it last wrote for a block only while nobody else has
    appended to it: two indexes appending to the same sessions in turn (and a batch
    spanning two blocks) leave exactly the block index of the same turns stored at once,
    also when the kept texts overflow their bounds at every write."""
    monkeypatch.setattr(rowcache, "BLOCK_TEXTS", bounds[0])
    monkeypatch.setattr(rowcache, "BLOCK_CHARS", bounds[1])
    rng = random.Random(3)
    turns = [_turn(rng, f"s{rng.randint(0, 2)}", None, START + n) for n in range(2 * 64 + 40)]
    one, two = TurnIndex(tmp_path / "a.db", dense=False), TurnIndex(tmp_path / "a.db", dense=False)
    at_once = TurnIndex(tmp_path / "b.db", dense=False)
    try:
        at = 0
        while at < len(turns):
            size = rng.choice((1, 1, 2, 70))
            (one if rng.random() < 0.5 else two).add_turns(turns[at:at + size])
            at += size
        at_once.add_turns(turns)
    finally:
        one.close()
        two.close()
        at_once.close()
    assert _block_postings(tmp_path / "a.db") == _block_postings(tmp_path / "b.db")
