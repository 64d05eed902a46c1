"""``sync_sessions`` on PostgreSQL: one transaction per batch (all or nothing), ids in
input order, searchable at once, safe when two processes re-run one import, and held to
the row-level security policies when an application role writes."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.errors import SessionNotFound, StoreError
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations
from memoryport.storage.sessions.records import MessageInput, SessionRecord

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_server: pgserver.PgServer) -> Iterator[PostgresSessionStore]:
    store = PostgresSessionStore(pg_server.uri, schema=pgserver.fresh_schema(), pool_size=2)
    yield store
    store.close()
    pgserver.drop_schema(pg_server.uri, store.schema)


def _said(*texts: str, start: float = 100.0) -> list[MessageInput]:
    return [MessageInput("user", t, timestamp=start + i) for i, t in enumerate(texts)]


def test_a_batch_with_an_unknown_parent_changes_nothing(pg_store: PostgresSessionStore) -> None:
    kept = SessionRecord(id="kept", source="cli", started_at=1.0)
    pg_store.sync_sessions([(kept, _said("alpha one"))])
    grown = [*_said("alpha one"), *_said("bravo grows", start=500.0)]
    orphan = SessionRecord(id="orphan", source="cli", parent_session_id="gone", started_at=2.0)
    fresh = SessionRecord(id="fresh", source="cli", started_at=3.0)
    with pytest.raises(SessionNotFound, match="gone"):
        pg_store.sync_sessions([(fresh, _said("charlie new")), (kept, grown),
                                (orphan, _said("delta"))])  # fmt: skip
    assert [s.session.id for s in pg_store.list_sessions()] == ["kept"]
    assert [m.content for m in pg_store.get_messages("kept")] == ["alpha one"]
    assert pg_store.get_session("kept").message_count == 1
    for word in ("charlie", "bravo", "delta"):
        assert pg_store.search_messages(word).hits == []


def test_ids_ascend_in_input_order_across_sessions_and_search_sees_them_at_once(
    pg_store: PostgresSessionStore,
) -> None:
    root = SessionRecord(id="r", source="cli", user_id="ana", started_at=1.0, tool_call_count=2)
    child = SessionRecord(id="c", source="cli", parent_session_id="r", started_at=2.0)
    report = pg_store.sync_sessions([
        (root, _said("we met yesterday", "echo zulu")),
        (child, _said("foxtrot", "golf zulu", "hotel")),
    ])  # fmt: skip
    assert (report.sessions_created, report.messages_created) == (2, 5)
    ids = [m.id for m in pg_store.get_messages("r") + pg_store.get_messages("c")]
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert pg_store.get_session("c").user_id == "ana"  # inherited from its parent
    session = pg_store.get_session("r")
    assert (session.message_count, session.tool_call_count, session.last_active_at) == (
        2, 2, 101.0)  # fmt: skip
    hits = pg_store.search_messages("zulu", sort="oldest").hits
    assert [h.message.id for h in hits] == [ids[1], ids[3]]
    assert pg_store.search_messages("what did we do yesterday").hits[0].message.id == ids[0]
    pg_store.check_index()


def test_two_processes_re_running_one_import_write_each_message_once(
    pg_server: pgserver.PgServer, pg_store: PostgresSessionStore
) -> None:
    entries = [
        (SessionRecord(id=f"s{i}", source="cli", started_at=float(i)),
         _said(*(f"line {i} {j}" for j in range(30))))
        for i in range(20)
    ]  # fmt: skip
    other = PostgresSessionStore(pg_server.uri, schema=pg_store.schema, pool_size=1)
    gate = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(store: PostgresSessionStore) -> None:
        gate.wait()
        try:
            store.sync_sessions(entries)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in (pg_store, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other.close()
    assert errors == []
    assert sum(s.session.message_count for s in pg_store.list_sessions(limit=100)) == 600
    assert len(pg_store.get_messages("s7")) == 30


@pytest.fixture
def app_dsn(pg_server: pgserver.PgServer) -> Iterator[tuple[str, str]]:
    """``(app DSN, schema)``: a store set up by an owner role, used by an app role."""
    owner, app = (f"mp_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app"))
    schema = pgserver.fresh_schema("sync")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in (owner, app):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(conn.info.dbname), sql.Identifier(owner)))  # fmt: skip
    owner_dsn = make_conninfo(pg_server.uri, user=owner)
    PostgresSessionStore(owner_dsn, schema=schema, pool_size=1).close()
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        migrations.grant_app_role(conn, schema, app)
    yield make_conninfo(pg_server.uri, user=app), schema
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in (owner, app):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_an_app_role_syncs_only_its_user_and_a_refused_session_undoes_the_batch(
    app_dsn: tuple[str, str],
) -> None:
    dsn, schema = app_dsn
    ana = PostgresSessionStore(dsn, schema=schema, user_id="ana", pool_size=1)
    bob = PostgresSessionStore(dsn, schema=schema, user_id="bob", pool_size=1)
    try:
        ana.sync_sessions([(SessionRecord(id="shared", source="cli"), _said("ana secret"))])
        fresh = SessionRecord(id="bob-1", source="cli", started_at=1.0)
        taken = SessionRecord(id="shared", source="cli", started_at=2.0)
        with pytest.raises(StoreError):  # the id is ana's: bob cannot see or take it
            bob.sync_sessions([(fresh, _said("bob words")), (taken, _said("bob again"))])
        assert bob.list_sessions() == [] and bob.search_messages("secret").hits == []
        with pytest.raises(StoreError, match="bound to user 'ana'"):
            ana.sync_sessions([(SessionRecord(id="x", source="cli", user_id="bob"), [])])
        assert [s.session.id for s in ana.list_sessions()] == ["shared"]
        assert ana.get_session("shared").user_id == "ana"
        assert [h.message.content for h in ana.search_messages("secret").hits] == ["ana secret"]
    finally:
        ana.close()
        bob.close()


def _events(store: PostgresSessionStore) -> list[tuple[int, str, str]]:
    with psycopg.connect(store._pool.conninfo) as conn:
        return conn.execute(
            sql.SQL("SELECT message_id, precision, words FROM {}.message_events ORDER BY 1")
            .format(sql.Identifier(store.schema))
        ).fetchall()  # fmt: skip


def test_event_windows_go_to_their_own_messages_on_every_write_path(
    pg_store: PostgresSessionStore,
) -> None:
    sid = pg_store.create_session("a", source="cli").id
    first = pg_store.append_messages(sid, [
        {"role": "user", "content": "yesterday", "timestamp": 1.7e9},
        {"role": "user", "content": "plain"},
    ])  # fmt: skip
    then = pg_store.append_messages(sid, [
        {"role": "user", "content": "plain again"},
        {"role": "user", "content": "last week", "timestamp": 1.7e9},
        {"role": "user", "content": "tomorrow", "timestamp": 1.7e9},
    ])  # fmt: skip
    grown = SessionRecord(id="a", source="cli")
    new = SessionRecord(id="b", source="cli", started_at=1.0)
    said = [MessageInput("user", f"text {i}", timestamp=1.7e9) for i in range(7)]
    said[6] = MessageInput("user", "in 2019", timestamp=1.7e9)  # the 5 stored are skipped
    pg_store.sync_sessions([
        (new, [MessageInput("user", "today", timestamp=1.7e9), MessageInput("user", "x")]),
        (grown, said),
    ])  # fmt: skip
    last = pg_store.get_messages("a")[-1].id
    today = pg_store.get_messages("b")[0].id
    assert [(i, w) for i, _, w in _events(pg_store)] == sorted([
        (first[0], "yesterday"), (then[1], "last week"), (then[2], "tomorrow"),
        (today, "today"), (last, "in 2019"),
    ])  # fmt: skip
