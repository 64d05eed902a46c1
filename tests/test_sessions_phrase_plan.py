"""Phrase relevance search returns what exact BM25 over every match returns.

The SQLite store ranks a phrase in one ``bm25()`` pass and computes the page's snippets
in one ``rowid BETWEEN`` scan when the ranking pass showed few matches lie between the
page's rows (instead of one doclist seek per hit). These tests compare ids, order,
scores and snippets with the plain plan (BM25 over all matches, ties oldest first, one
``snippet()`` per row) on a generated corpus, and count the statements a page takes.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.storage.sessions.sqlite import rank as sqlite_rank

PHRASES = ['"support group"', '"art class"', "support", '"new painting" OR pottery']
FILLER = [
    *("went", "to", "the", "park", "and", "talked", "about", "a", "book", "with"),
    *("friends", "after", "lunch", "today"),
]


def _corpus(path: Path) -> SQLiteSessionStore:
    """About 3,000 messages in 40 sessions; the phrases occur scattered, in short and
    long messages, once or twice, stemmed (``groups``), reversed (``group support``, not
    a phrase match), and in sessions of a hidden source (``tool``)."""
    rng = random.Random(11)
    store = SQLiteSessionStore(path)
    extras = ["support group", "support groups", "group support", "art class", "pottery"]
    for s in range(40):
        sid = store.create_session(
            f"s{s:02d}", source="tool" if s % 9 == 4 else "cli", user_id=f"u{s % 3}"
        ).id
        messages: list[dict[str, Any]] = []
        for i in range(75):
            words = rng.sample(FILLER, rng.randint(2, len(FILLER)))
            if rng.random() < 0.12:
                for _ in range(rng.choice([1, 1, 1, 2])):
                    words.insert(rng.randrange(len(words) + 1), rng.choice(extras))
            role = "user" if i % 2 == 0 else "assistant"
            messages.append({"role": role, "content": " ".join(words)})
        store.append_messages(sid, messages)
    return store


def _plain_plan(
    conn: sqlite3.Connection, expr: str, window: int | None
) -> list[tuple[int, float, str]]:
    """Exact BM25 over every match (or the newest ``window``), ties oldest first, visible
    sources only, one ``snippet()`` statement per row."""
    sql = "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?"
    if window is not None:
        sql += f" ORDER BY rowid DESC LIMIT {window}"
    rows = sorted(conn.execute(sql, (expr,)).fetchall(), key=lambda r: (r[1], r[0]))
    hidden = {
        r[0]
        for r in conn.execute(
            "SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.source = 'tool'"
        )
    }
    snippet = (
        "SELECT snippet(messages_fts, -1, '>>>', '<<<', '...', 24) FROM messages_fts"
        " WHERE messages_fts MATCH ? AND rowid = ?"
    )
    return [
        (rowid, -score, conn.execute(snippet, (expr, rowid)).fetchone()[0])
        for rowid, score in rows
        if rowid not in hidden
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The generated corpus, shared by this module's tests (they only read it)."""
    opened = _corpus(tmp_path_factory.mktemp("phrase") / "state.db")
    yield opened
    opened.close()


@pytest.mark.parametrize("query", PHRASES)
@pytest.mark.parametrize(("limit", "offset"), [(20, 0), (7, 5), (200, 0)])
def test_relevance_page_matches_exact_bm25_over_every_match(
    store: SQLiteSessionStore, query: str, limit: int, offset: int
) -> None:
    result = store.search_messages(query, limit=limit, offset=offset)
    expected = _plain_plan(store.conn, result.query, None)[offset : offset + limit]
    assert len(expected) >= min(limit, 5)  # the corpus really has these matches
    got = [(h.message.id, h.score, h.snippet) for h in result.hits]
    assert got == expected


def test_newest_window_matches_the_plain_plan(
    store: SQLiteSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_rank, "RELEVANCE_WINDOW", 40)
    result = store.search_messages('"support group"', limit=20)
    assert [(h.message.id, h.score, h.snippet) for h in result.hits] == _plain_plan(
        store.conn, result.query, 40
    )[:20]


def test_scattered_phrase_page_takes_one_snippet_scan(store: SQLiteSessionStore) -> None:
    """The old plan ran one ``snippet()`` seek per hit (20 statements for this page)."""
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        hits = store.search_messages('"support group"', limit=20).hits
    finally:
        store.conn.set_trace_callback(None)
    ids = [h.message.id for h in hits]
    assert len(hits) == 20 and max(ids) - min(ids) > 1000  # scattered across the store
    assert all(">>>" in h.snippet for h in hits)
    assert sum("snippet(" in statement for statement in seen) == 1
