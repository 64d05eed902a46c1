"""Row-level security on the PostgreSQL session store.

The server's test user is a superuser, which row-level security never applies to, so
these tests connect as ordinary roles: the tables' owner (the policies are ``FORCE``d, so
they bind the owner too) and an application role that only has table privileges.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations, rank

pytestmark = pytest.mark.postgres

TABLES = ("sessions", "messages", "message_events")
VIEW = migrations.SEARCH_VIEW


@pytest.fixture
def roles(pg_server: pgserver.PgServer) -> Iterator[dict[str, str]]:
    """DSNs of two fresh login roles: ``owner`` (may create schemas) and ``app``."""
    names = {kind: f"mp_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app")}
    schema = pgserver.fresh_schema("rls")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(conn.info.dbname), sql.Identifier(names["owner"])
            )
        )
    dsns = {kind: make_conninfo(pg_server.uri, user=name) for kind, name in names.items()}
    yield {**dsns, "schema": schema, "app_role": names["app"]}
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _grant_app(owner_dsn: str, schema: str, app_role: str) -> None:
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        migrations.grant_app_role(conn, schema, app_role)


def _fill(store: PostgresSessionStore, who: str) -> dict[str, object]:
    """A session tree, messages with a time expression, and an empty session of ``who``."""
    root = store.create_session(f"{who}-root", source="cli", title=f"{who} planning").id
    child = store.create_session(f"{who}-child", parent_session_id=root).id
    ids = store.append_messages(
        root, [{"role": "user", "content": f"{who} secret zebra yesterday"}] * 3
    )
    store.append_message(child, {"role": "assistant", "content": f"{who} zebra answer"})
    store.create_session(f"{who}-empty", started_at=1.0)
    return {"root": root, "child": child, "ids": ids}


def _raw_rows(dsn: str, schema: str, scope: str | None) -> dict[str, list[tuple[object, ...]]]:
    """``SELECT *`` of every table on a fresh connection with the given scope setting."""
    with psycopg.connect(dsn) as conn:
        if scope is not None:
            conn.execute("SELECT set_config(%s, %s, false)", (migrations.SCOPE_SETTING, scope))
        return {
            t: conn.execute(
                sql.SQL("SELECT * FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(t))
            ).fetchall()
            for t in (*TABLES, VIEW)
        }


def _check_isolated(alice: PostgresSessionStore, bob: dict[str, object]) -> None:
    """Every query of alice's store returns none of bob's rows."""
    bob_ids = bob["ids"]
    assert isinstance(bob_ids, list)
    listed = {s.session.id for s in alice.list_sessions()}
    assert listed == {"alice-root", "alice-child", "alice-empty"}
    assert all(h.message.content.startswith("alice") for h in alice.search_messages("zebra").hits)
    assert len(alice.search_messages("zebra", limit=50).hits) == 4
    assert alice.search_messages("bob").hits == []
    assert alice.sessions_titled("bob planning") == []
    for sid in (bob["root"], bob["child"]):
        assert isinstance(sid, str)
        with pytest.raises(SessionNotFound):
            alice.get_session(sid)
        with pytest.raises(SessionNotFound):
            alice.get_messages(sid)
        assert alice.children(sid) == []
    for mid in bob_ids:
        with pytest.raises(StoreError):
            alice.get_message(mid)
        assert alice.forget_message(mid) == 0
    assert alice.windows(bob_ids) == {}
    assert alice.snippets_for("zebra", bob_ids) == {}
    out = io.StringIO()
    alice.export_jsonl(out)
    assert "bob" not in out.getvalue() and "alice" in out.getvalue()
    assert [s.id for s in alice.prune_empty_sessions(older_than=0, dry_run=True)] == ["alice-empty"]


def test_the_owner_role_is_bound_by_the_policies(roles: dict[str, str]) -> None:
    schema = roles["schema"]
    alice = PostgresSessionStore(roles["owner"], schema=schema, user_id="alice", pool_size=1)
    bob_store = PostgresSessionStore(roles["owner"], schema=schema, user_id="bob", pool_size=1)
    try:
        _fill(alice, "alice")
        bob = _fill(bob_store, "bob")
        _check_isolated(alice, bob)
        assert len(bob_store.get_messages(str(bob["root"]))) == 3  # bob's rows are intact
        scoped = _raw_rows(roles["owner"], schema, "alice")
        assert scoped["sessions"] and scoped["messages"] and scoped["message_events"]
        assert "bob" not in json.dumps(scoped, default=str)
        assert _raw_rows(roles["owner"], schema, None) == {t: [] for t in (*TABLES, VIEW)}
        everyone = _raw_rows(roles["owner"], schema, "*")
        assert len(everyone["sessions"]) == 6 and len(everyone["messages"]) == 8
    finally:
        alice.close()
        bob_store.close()


def test_an_application_role_is_bound_by_the_policies(roles: dict[str, str]) -> None:
    schema = roles["schema"]
    PostgresSessionStore(roles["owner"], schema=schema, pool_size=1).close()  # migrate
    _grant_app(roles["owner"], schema, roles["app_role"])
    alice = PostgresSessionStore(roles["app"], schema=schema, user_id="alice", pool_size=1)
    bob_store = PostgresSessionStore(roles["app"], schema=schema, user_id="bob", pool_size=1)
    try:
        _fill(alice, "alice")
        bob = _fill(bob_store, "bob")
        _check_isolated(alice, bob)
        scoped = _raw_rows(roles["app"], schema, "alice")
        assert scoped["messages"] and "bob" not in json.dumps(scoped, default=str)
        assert sorted(scoped[VIEW]) == sorted(scoped["messages"])  # the search view too
        assert _raw_rows(roles["app"], schema, None) == {t: [] for t in (*TABLES, VIEW)}
        with psycopg.connect(roles["app"]) as conn:  # writing a row for another user fails
            conn.execute("SELECT set_config(%s, 'alice', false)", (migrations.SCOPE_SETTING,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {}.sessions (id, source, user_id, started_at, last_active_at)"
                        " VALUES ('x', 'cli', 'bob', 0, 0)"
                    ).format(sql.Identifier(schema))
                )
        unbound = PostgresSessionStore(roles["app"], schema=schema, pool_size=1)
        assert len(unbound.list_sessions(limit=50)) == 6  # an unbound store sees every user
        unbound.close()
    finally:
        alice.close()
        bob_store.close()


def _plan(dsn: str, query: sql.Composable, scope: str) -> str:
    """``EXPLAIN`` of ``query`` (``%s``: the tsquery ``'zebra'``) on a fresh connection
    with the given scope; sequential scans off, so a usable index is always taken."""
    with psycopg.connect(dsn, cursor_factory=psycopg.ClientCursor) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SELECT set_config(%s, %s, false)", (migrations.SCOPE_SETTING, scope))
        explained = sql.SQL("EXPLAIN ") + query
        return "\n".join(str(r[0]) for r in conn.execute(explained, ("zebra",)))


def test_word_searches_of_an_application_role_use_the_word_index(roles: dict[str, str]) -> None:
    """Policies hold a non-leakproof ``@@`` back from the GIN index; the search view, read
    with the rights of an owner the policies no longer bind, lets the index serve it."""
    schema = roles["schema"]
    PostgresSessionStore(roles["owner"], schema=schema, pool_size=1).close()  # migrate
    ranked = sql.SQL(rank._ALL).format(s=sql.Identifier(schema))  # the store's own query
    table = sql.SQL("SELECT id FROM {}.messages WHERE tsv @@ %s::tsquery").format(
        sql.Identifier(schema)
    )
    assert "messages_tsv" not in _plan(roles["owner"], ranked, "alice")  # FORCE: bound
    _grant_app(roles["owner"], schema, roles["app_role"])
    for scope in ("alice", "*"):
        assert "messages_tsv" in _plan(roles["app"], ranked, scope)
        assert "messages_tsv" not in _plan(roles["app"], table, scope)  # policies bind it
    alice = PostgresSessionStore(roles["app"], schema=schema, user_id="alice", pool_size=1)
    bob_store = PostgresSessionStore(roles["app"], schema=schema, user_id="bob", pool_size=1)
    try:
        _fill(alice, "alice")
        bob = _fill(bob_store, "bob")
        _check_isolated(alice, bob)
        for query in ("zebra", '"secret zebra"', "zeb*", "alice OR bob", "zebra?"):
            for sort in ("relevance", "newest", "oldest"):
                hits = alice.search_messages(query, sort=sort, limit=50).hits
                assert hits and all(h.message.content.startswith("alice") for h in hits)
    finally:
        alice.close()
        bob_store.close()


def test_the_search_view_refuses_writes_for_another_user(roles: dict[str, str]) -> None:
    """An application role may only read the view; given every privilege on it (``GRANT
    ... ON ALL TABLES``), its check option still refuses a row the policy would."""
    schema = roles["schema"]
    owner = PostgresSessionStore(roles["owner"], schema=schema, user_id="bob", pool_size=1)
    sid = owner.create_session("bob-s").id
    owner.close()
    _grant_app(roles["owner"], schema, roles["app_role"])
    insert = sql.SQL("INSERT INTO {}.{} (session_id, role, timestamp) VALUES (%s, 'user', 0)")
    statement = insert.format(sql.Identifier(schema), sql.Identifier(VIEW))
    with psycopg.connect(roles["app"]) as conn:
        conn.execute("SELECT set_config(%s, 'alice', false)", (migrations.SCOPE_SETTING,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement, (sid,))
        conn.rollback()
        ledger = sql.SQL("DELETE FROM {}._migrations").format(sql.Identifier(schema))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(ledger)
    with psycopg.connect(roles["owner"], autocommit=True) as conn:
        conn.execute(
            sql.SQL("GRANT ALL ON ALL TABLES IN SCHEMA {} TO {}").format(
                sql.Identifier(schema), sql.Identifier(roles["app_role"])
            )
        )
    with psycopg.connect(roles["app"]) as conn:
        conn.execute("SELECT set_config(%s, 'alice', false)", (migrations.SCOPE_SETTING,))
        with pytest.raises(psycopg.errors.WithCheckOptionViolation):
            conn.execute(statement, (sid,))
        conn.rollback()
        conn.execute("SELECT set_config(%s, 'alice', false)", (migrations.SCOPE_SETTING,))
        deleted = conn.execute(
            sql.SQL("DELETE FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(VIEW))
        )
        assert deleted.rowcount == 0
