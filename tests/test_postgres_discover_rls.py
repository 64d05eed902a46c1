"""Discover's queries on PostgreSQL under row-level security, as an application role.

The exact-title lookup reads ``sessions`` through the ``session_search`` view (m040), so
the title index serves it although the policies bind the role; a very common word's
newest window is read backwards by primary key (``IS TRUE`` keeps the GIN index out); the
scope (roles, hidden sources) is checked only as far as the page needs. Each keeps the
results SQLite gives for the same messages.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations
from memoryport.storage.sessions.postgres.rank import RELEVANCE_WINDOW
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
    schema = pgserver.fresh_schema("disc")
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


def _app_store(roles: dict[str, str], **kwargs: str) -> PostgresSessionStore:
    """The owner migrates and grants; the store then runs as the application role."""
    PostgresSessionStore(roles["owner"], schema=roles["schema"], pool_size=1).close()
    with psycopg.connect(roles["owner"], autocommit=True) as conn:
        migrations.grant_app_role(conn, roles["schema"], roles["app_role"])
    return PostgresSessionStore(roles["app"], schema=roles["schema"], pool_size=1, **kwargs)


def test_the_title_lookup_uses_the_title_index_and_sees_only_its_users_sessions(
    roles: dict[str, str],
) -> None:
    admin = _app_store(roles)
    for n in range(40):
        admin.create_session(f"s{n}", source="cli", user_id="a" if n % 2 else "b")
        admin.update_session(f"s{n}", title="Trip planning" if n % 10 == 3 else f"other {n}")
    bound = PostgresSessionStore(roles["app"], schema=roles["schema"], user_id="b", pool_size=1)
    try:
        assert [s.id for s in admin.sessions_titled("  trip PLANNING ", user_id="a")] == [
            "s33",
            "s23",
            "s13",
            "s3",
        ]
        assert bound.sessions_titled("Trip planning") == []  # every one is user a's
        assert [s.id for s in bound.sessions_titled("other 8")] == ["s8"]
        with psycopg.connect(roles["app"], autocommit=True) as conn:
            conn.execute("SELECT set_config(%s, 'a', false)", (migrations.SCOPE_SETTING,))
            conn.execute("SET enable_seqscan = off")  # 40 rows: show the index can serve it
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    sql.SQL(
                        "EXPLAIN SELECT id FROM {}.{} s WHERE lower(btrim(s.title)) = %s"
                    ).format(
                        sql.Identifier(roles["schema"]), sql.Identifier(migrations.SESSION_VIEW)
                    ),
                    ("trip planning",),
                )
            )
            assert "sessions_title" in plan, plan
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    sql.SQL("UPDATE {}.{} SET title = 'x'").format(
                        sql.Identifier(roles["schema"]), sql.Identifier(migrations.SESSION_VIEW)
                    )
                )
    finally:
        bound.close()
        admin.close()


def _fill(stores: list[SessionStore], total: int, doubles: set[int]) -> None:
    rng = random.Random(11)
    stamps = [1.6e9 + rng.uniform(0, 1e7) for _ in range(total)]
    for store in stores:
        for n in range(0, total, 500):
            sid = f"s{n // 500}"
            store.create_session(sid, source="tool" if n // 500 == 7 else "cli")
            store.append_messages(
                sid,
                [
                    {
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": ("common common" if i in doubles else "common")
                        + (" so what? fine" if i % 997 == 0 else "")
                        + f" word{i}",
                        "timestamp": stamps[i],
                    }
                    for i in range(n, min(n + 500, total))
                ],
            )


def test_a_very_common_word_ranks_like_sqlite_under_the_policies(
    roles: dict[str, str], tmp_path: Path, pg_server: pgserver.PgServer
) -> None:
    """10,500 messages all holding the word: its newest window is read backwards by
    primary key; hidden sources and a role filter leave part of it out. The scope is
    checked only as far as the page needs, yet the page is SQLite's."""
    total = RELEVANCE_WINDOW * 7
    doubles = {300 + 40 * i for i in range(10)} | {total - 2 - 40 * i for i in range(12)}
    lite = SQLiteSessionStore(tmp_path / "lite.db")
    pg = _app_store(roles)
    try:
        _fill([lite, pg], total, doubles)
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute(sql.SQL("ANALYZE {}.messages").format(sql.Identifier(roles["schema"])))
        for store in (lite, pg):
            name = type(store).__name__
            hits = store.search_messages("common", roles=["user"], limit=5).hits
            # the newest window's doubles by a user (even position), newest first on ties
            assert {h.message.content.split()[-1] for h in hits} <= {
                f"word{i}" for i in doubles if i % 2 == 0 and i > total - 1500
            }, name
            assert len(hits) == 5 and all(h.message.role == "user" for h in hits), name
            literal = store.search_messages("what?", roles=["assistant"], limit=10).hits
            assert {h.message.content.split()[-1] for h in literal} == {
                f"word{i}" for i in range(0, total, 997) if i % 2
            }, name
        assert {h.message.content for h in pg.search_messages("common", limit=12).hits} == {
            h.message.content for h in lite.search_messages("common", limit=12).hits
        }
        with psycopg.connect(roles["app"], autocommit=True) as conn:
            conn.execute("SELECT set_config(%s, '*', false)", (migrations.SCOPE_SETTING,))
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    sql.SQL(
                        "EXPLAIN SELECT m.id FROM {}.message_search m"
                        " WHERE (m.tsv @@ 'common'::tsquery) IS TRUE ORDER BY m.id DESC LIMIT 1500"
                    ).format(sql.Identifier(roles["schema"]))
                )
            )
            assert "Index Scan Backward using messages_pkey" in plan and "messages_tsv" not in plan
    finally:
        pg.close()
        lite.close()
