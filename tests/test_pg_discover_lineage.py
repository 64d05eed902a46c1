"""``session_search`` reads the current conversation's lineage root together with the
first other lineage it resolves: one store call (one round trip on PostgreSQL) fewer in
discover, browse, a period browse and read, and none at all when nothing needs resolving.
The answers stay the same on SQLite and PostgreSQL: the current conversation (its whole
lineage) is never a result, by title or by message, and reading it is refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest

import pgserver
from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

pytestmark = pytest.mark.postgres

T0 = time.mktime((2024, 5, 10, 12, 0, 0, 0, 0, -1))
# id, parent, title, message texts
SESSIONS = [
    ("root", None, "paddle", ["kayak trip planning", "canoe rental prices"]),
    ("cur", "root", "", ["kayak questions again", "canoe or not"]),
    ("titled", None, "kayak", ["nothing about boats here", "lunch plans"]),
    ("a1", None, "", ["kayak with friends", "canoe on the lake"]),
    ("a2", "a1", "", ["kayak once more", "canoe again"]),
    ("b", None, "", ["kayak down the river", "canoe and paddle board"]),
]
CURRENT = {"root", "cur"}
ROOT = {sid: parent or sid for sid, parent, _, _ in SESSIONS}


class _Recorded(PostgresSessionStore):
    """The store with the statements its cursors run kept in ``statements``
    (instrumentation only: every statement still runs on the server)."""

    statements: ClassVar[list[str]] = []

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        super()._configure(conn)
        statements = self.statements

        class Recording(psycopg.Cursor[Any]):
            def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
                text = query.as_string(self) if hasattr(query, "as_string") else str(query)
                statements.append(text)
                return super().execute(query, params, **kw)

        conn.cursor_factory = Recording


def _fill(store: SessionStore) -> None:
    for n, (sid, parent, title, texts) in enumerate(SESSIONS):
        start = T0 + n * 3600
        store.create_session(sid, title=title, parent_session_id=parent, started_at=start)
        store.append_messages(
            sid,
            [
                {"role": "user", "content": text, "timestamp": start + 60 * (i + 1)}
                for i, text in enumerate(texts)
            ],
        )


@pytest.fixture
def stores(tmp_path: Path, pg_server: pgserver.PgServer) -> Iterator[list[SessionStore]]:
    schema = pgserver.fresh_schema("lineage")
    made: list[SessionStore] = [
        SQLiteSessionStore(tmp_path / "sessions.db"),
        _Recorded(pg_server.uri, schema=schema, pool_size=1),
    ]
    try:
        for store in made:
            _fill(store)
        yield made
    finally:
        for store in made:
            store.close()
        pgserver.drop_schema(pg_server.uri, schema)


def _call(store: SessionStore, **args: Any) -> dict[str, Any]:
    provider = create_sessions_provider(store)
    provider.initialize("cur")
    out: dict[str, Any] = json.loads(provider.handle_tool_call("session_search", args))
    return out


def _ids(out: dict[str, Any]) -> list[str]:
    return [r["session_id"] for r in out["results"]]


def _roots(out: dict[str, Any]) -> list[str]:
    """The results' lineage roots, sorted (which session of a lineage is shown depends
    on the backend's ranking)."""
    return sorted(ROOT[sid] for sid in _ids(out))


CALLS: list[dict[str, Any]] = [
    {"query": "kayak", "limit": 5},
    {"query": "paddle", "limit": 5},
    {"query": "canoe", "limit": 5},
    {"query": "zebra"},
    {},
    {"query": "what did we talk about in May 2024?", "limit": 5},
    {"session_id": "a1"},
    {"session_id": "root"},
]


def _answers(store: SessionStore) -> list[Any]:
    out = []
    for args in CALLS:
        answer = _call(store, **args)
        if "results" in answer:
            out.append((answer.get("mode"), _roots(answer)))
        else:
            out.append((answer.get("mode"), answer["success"], answer.get("error_type")))
    return out


def test_the_current_conversation_is_never_a_result_on_either_backend(
    stores: list[SessionStore],
) -> None:
    sqlite, postgres = stores
    kayak = _call(sqlite, query="kayak", limit=5)
    assert kayak["results"][0]["session_id"] == "titled"
    assert kayak["results"][0]["matched_role"] == "session_title"
    assert _roots(kayak) == ["a1", "b", "titled"]  # one per lineage, not root/cur
    paddle = _call(sqlite, query="paddle", limit=5)  # root's title: current lineage
    assert _ids(paddle) == ["b"] and paddle["results"][0]["matched_role"] == "user"
    assert not CURRENT & set(_ids(_call(sqlite, query="canoe", limit=5)))
    assert _roots(_call(sqlite)) == ["a1", "b", "titled"]
    period = _call(sqlite, query="what did we talk about in May 2024?", limit=5)
    assert period["mode"] == "browse" and _roots(period) == ["a1", "b", "titled"]
    assert _call(sqlite, session_id="a1")["success"]
    refused = _call(sqlite, session_id="root")
    assert not refused["success"] and "current conversation" in refused["error"]
    assert _answers(sqlite) == _answers(postgres)


def test_one_lineage_lookup_serves_the_current_session_and_the_results(
    stores: list[SessionStore],
) -> None:
    postgres = stores[1]
    lookups = []
    for args in CALLS:
        _call(postgres, **args)  # (the lookups by id are prepared on first use)
        _Recorded.statements.clear()
        _call(postgres, **args)
        lookups.append(sum("WITH RECURSIVE up" in s for s in _Recorded.statements))
    # before: the current session's lineage was a call of its own in every mode
    # kayak: titled candidates + hits; paddle: title candidate (root) + hits; canoe:
    # hits; zebra: nothing to resolve; browse; period browse; read a1; read root
    assert lookups == [2, 2, 1, 0, 1, 1, 1, 1]
