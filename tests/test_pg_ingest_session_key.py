"""m060: ``messages.session_id``'s foreign key replaced by statement-level triggers.

The rules the key enforced still hold, proven on a real server with real connections:
a message for a missing session is refused with a clear error (a whole statement at
once), a session deleted while an append is in flight leaves no orphan whichever side
commits first, deleting a session deletes its messages (also through an application
role bound by the row-level security policies), a message cannot be moved to a missing
session and a referenced session's id cannot change; an older store is upgraded in
place with its rows intact."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres

_TRIGGERS = {
    "messages_session_check", "messages_session_moved", "sessions_delete_messages",
    "sessions_key_kept",
}  # fmt: skip


@pytest.fixture
def pg_store(pg_server: pgserver.PgServer) -> Iterator[PostgresSessionStore]:
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema("key"), pool_size=2)
    yield store
    store.close()
    pgserver.drop_schema(pg_server.uri, store.schema)


def _q(store: PostgresSessionStore, text: str) -> sql.Composed:
    return sql.SQL(text).format(s=sql.Identifier(store.schema))


def _insert(store: PostgresSessionStore, session_id: str) -> sql.Composed:
    value = sql.Literal(session_id).as_string(None)
    return _q(
        store,
        "INSERT INTO {s}.messages (session_id, role, content, timestamp)"
        f" VALUES ({value}, 'user', 'hi', 1)",
    )


def _count(conn: psycopg.Connection[Any], store: PostgresSessionStore, where: str) -> int:
    row = conn.execute(_q(store, f"SELECT count(*) FROM {{s}}.messages m WHERE {where}")).fetchone()
    return int(row[0]) if row else -1


def _orphans(conn: psycopg.Connection[Any], store: PostgresSessionStore) -> int:
    return _count(
        conn, store, "NOT EXISTS (SELECT 1 FROM {s}.sessions s WHERE s.id = m.session_id)"
    )


def _key_state(conn: psycopg.Connection[Any], schema: str) -> tuple[int, set[str]]:
    table = sql.SQL("{}.messages").format(sql.Identifier(schema)).as_string(conn)
    keys = conn.execute(
        "SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'"
        " AND confrelid = replace(%s, 'messages', 'sessions')::regclass",
        (table, table),
    ).fetchone()
    triggers = conn.execute(
        "SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s"
        " AND NOT t.tgisinternal",
        (schema,),
    ).fetchall()
    return int(keys[0]) if keys else -1, {r[0] for r in triggers}


def _blocked(conn: psycopg.Connection[Any], pid: int) -> None:
    """Wait until backend ``pid`` waits for a lock (fails after 10 s)."""
    for _ in range(400):
        row = conn.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        if row is not None and row[0] == "Lock":
            return
        time.sleep(0.025)
    raise AssertionError(f"backend {pid} never waited for a lock")


def _in_thread(fn: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def test_a_fresh_store_has_the_triggers_and_no_per_row_key(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    assert "m060_session_key_per_statement" in pg_store.applied_migrations()
    with psycopg.connect(pg_server.uri) as conn:
        assert _key_state(conn, pg_store.schema) == (0, _TRIGGERS)


def test_a_message_for_a_missing_session_is_refused_whole(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    pg_store.create_session("here", source="cli")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.ForeignKeyViolation, match="no session 'gone'"):
            conn.execute(_q(pg_store, "INSERT INTO {s}.messages (session_id, role, content,"
                                      " timestamp) VALUES ('here', 'user', 'a', 1),"
                                      " ('gone', 'user', 'b', 2)"))  # fmt: skip
        assert _count(conn, pg_store, "true") == 0
    with pytest.raises(SessionNotFound, match="gone"):
        pg_store.append_messages("gone", [{"role": "user", "content": "x"}])
    assert pg_store.append_messages("here", [{"role": "user", "content": "kept"}])
    assert [m.content for m in pg_store.get_messages("here")] == ["kept"]


def test_an_append_in_flight_holds_off_the_delete_which_then_takes_its_messages(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    pg_store.create_session("s", source="cli")
    pg_store.append_messages("s", [{"role": "user", "content": "before"}])
    with psycopg.connect(pg_server.uri) as writer, \
            psycopg.connect(pg_server.uri, autocommit=True) as deleter, \
            psycopg.connect(pg_server.uri, autocommit=True) as watcher:  # fmt: skip
        writer.execute(_insert(pg_store, "s"))  # checked and KEY SHARE-locked, not committed
        pid = deleter.info.backend_pid
        thread, errors = _in_thread(
            lambda: deleter.execute(_q(pg_store, "DELETE FROM {s}.sessions WHERE id = 's'"))
        )
        _blocked(watcher, pid)
        writer.commit()
        thread.join(10)
        assert not thread.is_alive() and errors == []
        assert _count(watcher, pg_store, "session_id = 's'") == 0
        assert _orphans(watcher, pg_store) == 0


def test_a_delete_in_flight_makes_a_concurrent_append_fail_cleanly(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    pg_store.create_session("s", source="cli")
    pg_store.append_messages("s", [{"role": "user", "content": "before"}])
    with psycopg.connect(pg_server.uri) as deleter, \
            psycopg.connect(pg_server.uri, autocommit=True) as writer, \
            psycopg.connect(pg_server.uri, autocommit=True) as watcher:  # fmt: skip
        deleter.execute(_q(pg_store, "DELETE FROM {s}.sessions WHERE id = 's'"))
        pid = writer.info.backend_pid
        thread, errors = _in_thread(lambda: writer.execute(_insert(pg_store, "s")))
        _blocked(watcher, pid)
        deleter.commit()
        thread.join(10)
        assert not thread.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], psycopg.errors.ForeignKeyViolation)
        assert "no session 's'" in str(errors[0])
        assert _count(watcher, pg_store, "true") == 0 and _orphans(watcher, pg_store) == 0


def test_a_store_append_waiting_on_a_delete_reports_the_missing_session(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    pg_store.create_session("s", source="cli")
    with psycopg.connect(pg_server.uri) as deleter, \
            psycopg.connect(pg_server.uri, autocommit=True) as watcher:  # fmt: skip
        deleter.execute(_q(pg_store, "DELETE FROM {s}.sessions WHERE id = 's'"))
        batch = [{"role": "user", "content": f"m{i}"} for i in range(120)]  # several chunks
        thread, errors = _in_thread(lambda: pg_store.append_messages("s", batch) and None)
        for _ in range(400):
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND application_name = 'memoryport'"
            ).fetchone()
            if row and row[0]:
                break
            time.sleep(0.025)
        deleter.commit()
        thread.join(10)
        assert len(errors) == 1 and isinstance(errors[0], SessionNotFound)
        assert _count(watcher, pg_store, "true") == 0


def test_moving_a_message_or_renaming_a_referenced_session_is_refused(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    for sid in ("a", "b", "empty"):
        pg_store.create_session(sid, source="cli")
    (mid,) = pg_store.append_messages("a", [{"role": "user", "content": "moving"}])
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.ForeignKeyViolation, match="no session 'nowhere'"):
            conn.execute(_q(pg_store, "UPDATE {s}.messages SET session_id = 'nowhere'"))
        conn.execute(_q(pg_store, "UPDATE {s}.messages SET session_id = 'b'"))
        with pytest.raises(psycopg.errors.ForeignKeyViolation, match="'b' still has messages"):
            conn.execute(_q(pg_store, "UPDATE {s}.sessions SET id = 'c' WHERE id = 'b'"))
        conn.execute(_q(pg_store, "UPDATE {s}.sessions SET id = 'renamed' WHERE id = 'empty'"))
    assert [m.id for m in pg_store.get_messages("b")] == [mid]
    assert pg_store.get_session("renamed") is not None


@pytest.fixture
def roles(pg_server: pgserver.PgServer) -> Iterator[dict[str, str]]:
    """An owner role (not a superuser) and an application role."""
    owner, app = (f"mp_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app"))
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in (owner, app):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(conn.info.dbname), sql.Identifier(owner)))  # fmt: skip
    schema = pgserver.fresh_schema("keyrls")
    yield {"owner": make_conninfo(pg_server.uri, user=owner), "app": app, "schema": schema,
           "app_dsn": make_conninfo(pg_server.uri, user=app)}  # fmt: skip
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in (owner, app):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.mark.parametrize("runner", ["owner", "app"])
def test_deleting_a_session_under_the_policies_takes_its_messages_and_events(
    pg_server: pgserver.PgServer, roles: dict[str, str], runner: str
) -> None:
    """The owner bound by the forced policies, or the application role, scoped to one
    user: a plain ``DELETE`` of the user's session leaves no message or event behind."""
    schema = roles["schema"]
    PostgresSessionStore(roles["owner"], schema=schema, pool_size=1).close()
    if runner == "app":
        with psycopg.connect(roles["owner"], autocommit=True) as conn:
            migrations.grant_app_role(conn, schema, roles["app"])
    dsn = roles["app_dsn"] if runner == "app" else roles["owner"]
    ana = PostgresSessionStore(dsn, schema=schema, user_id="ana", pool_size=1)
    bob = PostgresSessionStore(dsn, schema=schema, user_id="bob", pool_size=1)
    try:
        for store, sid in ((ana, "a1"), (bob, "b1")):
            store.create_session(sid, source="cli")
            store.append_messages(sid, [{"role": "user", "content": "see you tomorrow at 5pm"}])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT set_config(%s, 'ana', false)", (migrations.SCOPE_SETTING,))
            for sid in ("a1", "b1"):  # b1 is invisible to ana: untouched
                conn.execute(sql.SQL("DELETE FROM {}.sessions WHERE id = %s").format(
                    sql.Identifier(schema)), (sid,))  # fmt: skip
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            rows = conn.execute(sql.SQL(
                "SELECT (SELECT array_agg(DISTINCT session_id) FROM {s}.messages),"
                " (SELECT count(*) FROM {s}.message_events e WHERE NOT EXISTS"
                " (SELECT 1 FROM {s}.messages m WHERE m.id = e.message_id))"
            ).format(s=sql.Identifier(schema))).fetchone()  # fmt: skip
        assert rows == (["b1"], 0)
        assert [m.content for m in bob.get_messages("b1")] == ["see you tomorrow at 5pm"]
    finally:
        ana.close()
        bob.close()


def test_an_older_store_is_upgraded_in_place(pg_server: pgserver.PgServer) -> None:
    schema = pgserver.fresh_schema("keyold")
    s = sql.Identifier(schema)
    try:
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            migrations.migrate(conn, schema, stop_before="m060_session_key_per_statement")
            assert _key_state(conn, schema) == (1, set())
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.sessions (id, source, started_at,"
                    " last_active_at) VALUES ('s', 'cli', 1, 1)"
                ).format(s)
            )
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.messages (session_id, role, content, timestamp)"
                    " VALUES ('s', 'user', 'kept through', 1)"
                ).format(s)
            )
        store = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
        try:
            assert store.applied_migrations()[-1] == "m060_session_key_per_statement"
            assert [m.content for m in store.get_messages("s")] == ["kept through"]
            with pytest.raises(SessionNotFound):
                store.append_messages("gone", [{"role": "user", "content": "x"}])
        finally:
            store.close()
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            assert _key_state(conn, schema) == (0, _TRIGGERS)
            conn.execute(sql.SQL("DELETE FROM {}.sessions").format(s))
            assert conn.execute(
                sql.SQL("SELECT count(*) FROM {}.messages").format(s)
            ).fetchone() == (0,)
    finally:
        pgserver.drop_schema(pg_server.uri, schema)
