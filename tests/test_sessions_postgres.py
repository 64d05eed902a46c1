"""PostgreSQL-specific behaviour of the session store, against real servers.

The shared contract runs for PostgreSQL through ``conftest.BACKENDS``; this file covers
what only PostgreSQL has: migrations under a lock, the pool under concurrent threads
and processes, several "machines" on one store, index use, the optional ``pg_trgm``
index (on the distribution's PostgreSQL with contrib), and NUL-safe text.
"""

from __future__ import annotations

import io
import multiprocessing
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import pgserver
from memoryport.errors import MigrationError
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def trgm_server() -> Iterator[pgserver.PgServer]:
    """The distribution's PostgreSQL with contrib (so ``pg_trgm`` exists); never skipped."""
    server = pgserver.start_system_server()
    yield server
    server.stop()


@pytest.fixture
def schemas(pg_server: pgserver.PgServer) -> Iterator[list[str]]:
    """Schema names handed out to one test; all dropped afterwards."""
    made: list[str] = []
    yield made
    for schema in made:
        pgserver.drop_schema(pg_server.uri, schema)


def _open(uri: str, schemas: list[str], **kwargs: Any) -> PostgresSessionStore:
    if "schema" not in kwargs:
        kwargs["schema"] = pgserver.fresh_schema()
        schemas.append(kwargs["schema"])
    return PostgresSessionStore(uri, pool_size=kwargs.pop("pool_size", 2), **kwargs)


def _catalog(uri: str, schema: str) -> dict[str, Any]:
    """Columns, indexes and constraints of a schema, with the schema name masked."""
    with psycopg.connect(uri) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default,"
            " generation_expression FROM information_schema.columns WHERE table_schema = %s"
            " ORDER BY 1, 2",
            (schema,),
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s ORDER BY 1",
            (schema,),
        ).fetchall()
        constraints = conn.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE connamespace = %s::regnamespace ORDER BY 1",
            (schema,),
        ).fetchall()
    text = repr((columns, indexes, constraints)).replace(schema, "<schema>")
    return {"catalog": text}


def test_every_older_version_migrates_to_the_blank_schema(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    blank = _open(pg_server.uri, schemas)
    expected = _catalog(pg_server.uri, blank.schema)
    blank.close()
    for name, _ in migrations.MIGRATIONS:
        schema = pgserver.fresh_schema("old")
        schemas.append(schema)
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            migrations.migrate(conn, schema, stop_before=name)
            assert name in migrations.pending(conn, schema)
        store = _open(pg_server.uri, schemas, schema=schema)
        assert store.applied_migrations() == [n for n, _ in migrations.MIGRATIONS]
        assert _catalog(pg_server.uri, schema) == expected
        store.close()


def test_a_failing_migration_rolls_back_alone(
    pg_server: pgserver.PgServer, schemas: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def m999_broken(cur: psycopg.Cursor[Any], schema: psycopg.sql.Identifier) -> None:
        cur.execute(psycopg.sql.SQL("CREATE TABLE {s}.half_done (x int)").format(s=schema))
        cur.execute("SELECT 1/0")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, ("m999", m999_broken)])
    schema = pgserver.fresh_schema()
    schemas.append(schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        with pytest.raises(MigrationError, match="m999"):
            migrations.migrate(conn, schema)
        assert migrations.pending(conn, schema) == ["m999"]
        missing = conn.execute("SELECT to_regclass(%s)", (f"{schema}.half_done",)).fetchone()
        assert missing == (None,)


def test_concurrent_threads_share_one_pool(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    store = _open(pg_server.uri, schemas, pool_size=4)
    shared = store.create_session("shared").id
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            own = store.create_session(f"own-{n}").id
            for i in range(25):
                store.append_message(shared, {"role": "user", "content": f"thread {n} note {i}"})
                store.append_messages(own, [{"role": "user", "content": f"solo {i}"}] * 2)
                store.search_messages(f"thread {n}")
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.get_session(shared).message_count == 8 * 25
    ids = [m.id for m in store.get_messages(shared)]
    assert len(ids) == len(set(ids)) == 200
    assert all(store.get_session(f"own-{n}").message_count == 50 for n in range(8))
    store.close()


def _process_writer(uri: str, schema: str, worker: int, count: int) -> None:
    store = PostgresSessionStore(uri, schema=schema, pool_size=1)
    store.create_session(f"w{worker}", source="cli")
    for i in range(count):
        store.append_message(f"w{worker}", {"role": "user", "content": f"machine {worker} #{i}"})
        store.append_message("common", {"role": "assistant", "content": f"from {worker}"})
    store.close()


def test_processes_migrate_and_write_one_blank_schema_at_once(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    schema = pgserver.fresh_schema()
    schemas.append(schema)
    seed = PostgresSessionStore(pg_server.uri, schema=schema, pool_size=1)
    seed.create_session("common")
    seed.close()
    other = pgserver.fresh_schema()  # a blank schema that several processes migrate at once
    schemas.append(other)
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_process_writer, args=(pg_server.uri, schema, w, 30)) for w in range(3)
    ]
    procs += [
        ctx.Process(target=PostgresSessionStore, args=(pg_server.uri,), kwargs={"schema": other})
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    store = _open(pg_server.uri, schemas, schema=schema)
    assert store.get_session("common").message_count == 90
    assert len(store.search_messages("machine", limit=200).hits) == 90
    blank = _open(pg_server.uri, schemas, schema=other)
    assert blank.schema_version() == len(migrations.MIGRATIONS)


def test_two_machines_see_each_others_writes(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    laptop = _open(pg_server.uri, schemas, user_id="team")
    server = _open(pg_server.uri, schemas, schema=laptop.schema, user_id="team")
    sid = laptop.create_session(title="deploy").id
    [mid] = laptop.append_messages(sid, [{"role": "user", "content": "rotate the kafka certs"}])
    hits = server.search_messages("kafka certificates").hits
    assert [h.message.id for h in hits] == [mid]
    assert server.forget_message(mid) == 1
    assert laptop.search_messages("kafka").hits == []
    assert laptop.get_session(sid).message_count == 0


def test_word_search_uses_the_gin_index(pg_server: pgserver.PgServer, schemas: list[str]) -> None:
    store = _open(pg_server.uri, schemas)
    sid = store.create_session().id
    store.append_messages(sid, [{"role": "user", "content": f"filler {i}"} for i in range(300)])
    with psycopg.connect(pg_server.uri) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            psycopg.sql.SQL(
                "EXPLAIN SELECT id FROM {s}.messages WHERE tsv @@ to_tsquery({cfg}, 'filler')"
            ).format(
                s=psycopg.sql.Identifier(store.schema),
                cfg=migrations.ts_config(psycopg.sql.Identifier(store.schema)),
            )
        ).fetchall()
    assert "messages_tsv" in " ".join(r[0] for r in plan)


def test_search_text_folds_paths_and_diacritics(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    store = _open(pg_server.uri, schemas)
    sid = store.create_session().id
    ids = store.append_messages(
        sid,
        [
            {"role": "user", "content": "edit /usr/lib/foo.py then mail ops@example.com"},
            {"role": "user", "content": "the café near the office"},
            {
                "role": "tool",
                "content": "",
                "tool_name": "run_shell",
                "tool_calls": [{"function": {"name": "kubectl_apply"}}],
            },
        ],
    )
    assert [h.message.id for h in store.search_messages("foo.py").hits] == [ids[0]]
    assert [h.message.id for h in store.search_messages("example").hits] == [ids[0]]
    assert [h.message.id for h in store.search_messages("cafe").hits] == [ids[1]]
    assert [h.message.id for h in store.search_messages("kubectl", roles=["tool"]).hits] == [ids[2]]
    hit = store.search_messages("café").hits[0]
    assert ">>>" in hit.snippet


def test_nul_and_private_use_text_round_trips(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    store = _open(pg_server.uri, schemas)
    text = "a\x00b \ue000\ue001 \ue000\x00 end\ue000"
    sid = store.create_session(title="t\x00").id
    mid = store.append_message(sid, {"role": "user", "content": text, "reasoning": "\x00"})
    assert store.get_message(mid).content == text
    assert store.get_message(mid).reasoning == "\x00"
    out = io.StringIO()
    store.export_jsonl(out)
    copy = _open(pg_server.uri, schemas)
    copy.import_jsonl(out.getvalue().splitlines())
    again = io.StringIO()
    copy.export_jsonl(again)
    assert again.getvalue() == out.getvalue()
    assert copy.get_session(sid).title == "t\x00"


def test_import_moves_the_id_sequence_past_imported_ids(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    source = _open(pg_server.uri, schemas)
    sid = source.create_session().id
    source.append_messages(sid, [{"role": "user", "content": f"m{i}"} for i in range(5)])
    out = io.StringIO()
    source.export_jsonl(out)
    target = _open(pg_server.uri, schemas)
    target.import_jsonl(out.getvalue().splitlines())
    new = target.create_session().id
    fresh = target.append_message(new, {"role": "user", "content": "after import"})
    assert fresh > max(m.id for m in target.get_messages(sid))


def test_rebuild_and_check_index(pg_server: pgserver.PgServer, schemas: list[str]) -> None:
    store = _open(pg_server.uri, schemas)
    sid = store.create_session().id
    store.append_messages(sid, [{"role": "user", "content": "index me"}])
    store.check_index()
    store.rebuild_index()
    store.check_index()
    assert [h.message.content for h in store.search_messages("index").hits] == ["index me"]
    assert store.trigram_indexed is pg_server.has_pg_trgm


CJK = ["東京都の天気は晴れです", "大阪の会議は明日", "東京タワーに行った", "no cjk here 東"]


def test_pg_trgm_index_serves_cjk_search(
    trgm_server: pgserver.PgServer, pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    assert trgm_server.has_pg_trgm
    indexed = PostgresSessionStore(trgm_server.uri, schema=pgserver.fresh_schema(), pool_size=1)
    plain = _open(pg_server.uri, schemas)
    try:
        assert indexed.trigram_indexed
        results = []
        for store in (indexed, plain):
            sid = store.create_session("cjk").id
            store.append_messages(sid, [{"role": "user", "content": c} for c in CJK])
            results.append(
                [
                    [h.message.content for h in store.search_messages(q, sort=sort).hits]
                    for q in ("東京都", "東京", "東京 OR 大阪の会", "東", "tower 東京タワ")
                    for sort in ("relevance", "newest")
                ]
            )
        assert results[0] == results[1]
        assert results[0][0] == [CJK[0]]
        with psycopg.connect(trgm_server.uri) as conn:
            conn.execute("SET enable_seqscan = off")
            # the trigram search's condition: the index's predicate (m051), word for word
            plan = conn.execute(
                psycopg.sql.SQL(
                    f"EXPLAIN SELECT id FROM {{s}}.messages m WHERE {migrations.cjk_rows('m.')}"
                    " AND m.content ILIKE '%%東京都%%'"
                ).format(s=psycopg.sql.Identifier(indexed.schema)),
            ).fetchall()
            definition = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = %s"
                " AND indexname = 'messages_content_trgm'",
                (indexed.schema,),
            ).fetchone()
        assert "messages_content_trgm" in " ".join(r[0] for r in plan)
        assert definition is not None and "octet_length(content)" in definition[0]
    finally:
        indexed.close()
        pgserver.drop_schema(trgm_server.uri, indexed.schema)


def test_missing_driver_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from memoryport.errors import ConfigError\n"
        "try:\n"
        "    import memoryport.storage.sessions.postgres\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "install memoryport[postgres]" in result.stdout


def test_title_lookup_uses_the_title_index(
    pg_server: pgserver.PgServer, schemas: list[str]
) -> None:
    store = _open(pg_server.uri, schemas, user_id="u1")
    store.create_session("t", title="Weekly Review")
    with psycopg.connect(pg_server.uri) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            psycopg.sql.SQL(
                "EXPLAIN SELECT id FROM {s}.sessions s WHERE lower(btrim(s.title)) = lower(%s)"
                " AND s.user_id = %s"
            ).format(s=psycopg.sql.Identifier(store.schema)),
            ("weekly review", "u1"),
        ).fetchall()
    assert "sessions_title" in " ".join(r[0] for r in plan)
    assert [s.id for s in store.sessions_titled("WEEKLY review")] == ["t"]
    store.close()
