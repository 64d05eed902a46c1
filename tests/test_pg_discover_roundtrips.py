"""Discover on PostgreSQL: few round trips, reads outside transaction blocks, isolation kept.

The store's pooled connections autocommit: a read is its statements alone (no ``BEGIN``
and ``COMMIT`` round trips), a write keeps its explicit transaction. The row-level
security scope is a setting of each connection, fixed for its life, so two stores bound
to different users, called in turn, still see only their own rows. Short CJK queries
walk the CJK rows' own time index (m050) and return what SQLite returns.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest
from psycopg import pq, sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.errors import SessionNotFound
from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

pytestmark = pytest.mark.postgres


@pytest.fixture
def roles(pg_server: pgserver.PgServer) -> Iterator[dict[str, str]]:
    """An owner (creates the schema) and an application role; DSNs and names."""
    names = {kind: f"mp_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app")}
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(conn.info.dbname), sql.Identifier(names["owner"])
            )
        )
    schema = pgserver.fresh_schema("trips")
    yield {
        "owner": make_conninfo(pg_server.uri, user=names["owner"]),
        "app": make_conninfo(pg_server.uri, user=names["app"]),
        "app_role": names["app"],
        "schema": schema,
    }
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


class _Traced(PostgresSessionStore):
    """The store with libpq's protocol trace of its connections going to ``trace``, and
    the statements its cursors run kept in ``statements`` (instrumentation only)."""

    trace: Any = None
    statements: ClassVar[list[tuple[str, Any]]] = []

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        super()._configure(conn)
        statements = self.statements

        class Recording(psycopg.Cursor[Any]):
            def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
                text = query.as_string(self) if hasattr(query, "as_string") else str(query)
                statements.append((text, params))
                return super().execute(query, params, **kw)

        conn.cursor_factory = Recording
        if self.trace is not None:
            conn.pgconn.trace(self.trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)


def _app_store(roles: dict[str, str], *, traced: bool = False, **kwargs: Any) -> Any:
    """The owner migrates and grants; the store then runs as the application role."""
    PostgresSessionStore(roles["owner"], schema=roles["schema"], pool_size=1).close()
    with psycopg.connect(roles["owner"], autocommit=True) as conn:
        migrations.grant_app_role(conn, roles["schema"], roles["app_role"])
    kind = _Traced if traced else PostgresSessionStore
    return kind(roles["app"], schema=roles["schema"], pool_size=1, **kwargs)


def _round_trips(lines: list[str]) -> int:
    """Times the client sent after the server had answered (each is one wait)."""
    trips, last = 0, "B"
    for line in lines:
        direction = line.split("\t", 1)[0].strip()
        if direction == "F" and last == "B":
            trips += 1
        if direction in ("F", "B"):
            last = direction
    return trips


def _discover(store: SessionStore, **args: Any) -> dict[str, Any]:
    provider = create_sessions_provider(store)
    provider.initialize("current")
    out: dict[str, Any] = json.loads(provider.handle_tool_call("session_search", args))
    return out


def _fill(store: SessionStore, users: tuple[str, ...] = ("a",)) -> None:
    for n in range(12):
        user = users[n % len(users)]
        store.create_session(f"{user}{n}", source="cli", user_id=user)
        store.append_messages(
            f"{user}{n}",
            [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"{user} planning the trip, day {i} of session {n}"
                    if i == 5
                    else f"{user} chat, day {i} of session {n}",
                    "timestamp": 1.7e9 + n * 1000 + i,
                }
                for i in range(20)
            ],
        )


def test_a_discover_call_reads_without_transaction_blocks_in_few_round_trips(
    roles: dict[str, str],
) -> None:
    with tempfile.NamedTemporaryFile("w+", suffix=".trace") as trace:
        _Traced.trace = trace
        try:
            store = _app_store(roles, traced=True)
        finally:
            _Traced.trace = None
        try:
            _fill(store)
            _discover(store, query="planning trip")  # (the lookups are prepared once)
            trace.flush()
            start = os.path.getsize(trace.name)
            out = _discover(store, query="planning trip")
            assert out["success"] and out["count"] == 3, out
            trace.flush()
            with open(trace.name) as f:
                f.seek(start)
                lines = f.read().splitlines()
            sent = [line for line in lines if line.split("\t", 1)[0].strip() == "F"]
            assert not [line for line in sent if "BEGIN" in line or "COMMIT" in line], sent
            # title lookup, the lineage of the current session, the candidates with the
            # estimates, the scope, the re-rank's context, the page, the hits' lineage,
            # snippets and windows: 23-42 round trips before the reads autocommitted
            assert _round_trips(lines) <= 12, _round_trips(lines)
            start = os.path.getsize(trace.name)
            store.append_messages("a0", [{"role": "user", "content": "one more"}])
            trace.flush()
            with open(trace.name) as f:
                f.seek(start)
                written = f.read()
            assert written.count("\tSync") == 1  # a write: one transaction, committed at Sync
        finally:
            store.close()


def test_stores_of_two_users_called_in_turn_see_only_their_own_rows(
    roles: dict[str, str],
) -> None:
    admin = _app_store(roles)
    alice = PostgresSessionStore(roles["app"], schema=roles["schema"], user_id="a", pool_size=2)
    bob = PostgresSessionStore(roles["app"], schema=roles["schema"], user_id="b", pool_size=2)
    try:
        _fill(admin, ("a", "b"))
        for _ in range(6):
            for store, user in ((alice, "a"), (bob, "b"), (admin, None)):
                out = _discover(store, query="planning trip", limit=10)
                owners = {r["session_id"][0] for r in out["results"]}
                assert owners == ({user} if user else {"a", "b"}), out
                hits = store.search_messages("trip", sort="newest", limit=50).hits
                assert {h.message.content[0] for h in hits} == ({user} if user else {"a", "b"})
                listed = {s.session.user_id for s in store.list_sessions(limit=50)}
                assert listed == ({user} if user else {"a", "b"})
        with pytest.raises(SessionNotFound):
            bob.append_messages("a0", [{"role": "user", "content": "not bob's"}])
        assert "not bob's" not in {m.content for m in alice.get_messages("a0")}
    finally:
        bob.close()
        alice.close()
        admin.close()


_CJK_TEXTS = ["東京タワーに行きました", "京都の寺が好きです", "我们明天去东京塔看看", "東京は広い"]


def _fill_cjk(stores: list[SessionStore]) -> None:
    for store in stores:
        for n in range(8):
            store.create_session(f"s{n}", source="cli")
            store.append_messages(
                f"s{n}",
                [
                    {
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": (f"paris {i} " if (n * 60 + i) % 11 == 0 else "")
                        + (
                            _CJK_TEXTS[(n + i) % 4]
                            if (n * 60 + i) % 7 == 0
                            else f"note {i} of {n}, paris"
                        ),
                        "timestamp": 1.7e9 + ((n * 60 + i) * 7919) % 480,
                    }
                    for i in range(60)
                ],
            )


@pytest.mark.parametrize("sort", ["relevance", "newest", "oldest"])
def test_short_cjk_queries_walk_only_cjk_rows_and_match_sqlite(
    roles: dict[str, str], tmp_path: Path, sort: str
) -> None:
    """``京`` and ``東京`` (the ``like`` plan) walk ``messages_cjk_time``; an OR with a
    word that is not CJK (``京 OR paris``) or a NOT may match other rows and walks
    every message. Every page is SQLite's."""
    lite = SQLiteSessionStore(tmp_path / "lite.db")
    pg = _app_store(roles, traced=True)
    try:
        _fill_cjk([lite, pg])
        for query in ("京", "東京", "京 OR paris", "paris AND 京", "paris NOT 京"):
            pg.statements.clear()
            got = [h.message.id for h in pg.search_messages(query, sort=sort, limit=15).hits]
            want = [h.message.id for h in lite.search_messages(query, sort=sort, limit=15).hits]
            assert got == want and got, (query, got, want)
            walks = [s for s in pg.statements if "ORDER BY m.timestamp" in s[0]]
            # (an AND that finds nothing falls back to the OR of its words: walks[1:])
            cjk = query in ("京", "東京", "paris AND 京")
            assert walks and (migrations.CJK_REGEX in walks[0][0]) == cjk, query
        with psycopg.connect(roles["app"], autocommit=True) as conn:
            conn.execute("SELECT set_config(%s, '*', false)", (migrations.SCOPE_SETTING,))
            conn.execute("SET enable_seqscan = off")  # 480 rows: show the index can serve it
            pg.statements.clear()
            pg.search_messages("東京", sort=sort, limit=15)
            text, params = next(s for s in pg.statements if "ORDER BY m.timestamp" in s[0])
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + text, params))
            assert "messages_cjk_time" in plan, plan
    finally:
        pg.close()
        lite.close()
