"""``memoryport doctor`` finds m060's triggers and the store's indexes dropped or disabled
by hand on a real server, and ``memoryport sessions rebuild-index`` (the fix it names)
puts them back exactly as the migrations made them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.cli import main
from memoryport.errors import SessionNotFound
from memoryport.storage.postgres_repair import INDEXES, TRIGGERS
from memoryport.storage.sessions.postgres import PostgresSessionStore

pytestmark = pytest.mark.postgres

_DEFINITIONS = (
    "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_class c"
    " WHERE c.relkind = 'i' AND c.relnamespace = 'memoryport'::regnamespace"
    " UNION ALL SELECT t.tgname, pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text"
    " FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
    " WHERE c.relnamespace = 'memoryport'::regnamespace AND NOT t.tgisinternal"
    " UNION ALL SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
    " WHERE p.pronamespace = 'memoryport'::regnamespace"
)


@pytest.fixture
def owner(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A DSN of an ordinary role owning schema ``memoryport`` (doctor's one schema)."""
    role = f"mp_trg_{uuid.uuid4().hex[:8]}"
    pgserver.drop_schema(pg_server.uri, "memoryport")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        grant = sql.SQL("GRANT CREATE ON DATABASE postgres TO {}")
        conn.execute(grant.format(sql.Identifier(role)))
    dsn = make_conninfo(pg_server.uri, user=role)
    PostgresSessionStore(dsn).close()  # migrates schema "memoryport" as the role
    try:
        yield dsn
    finally:
        pgserver.drop_schema(pg_server.uri, "memoryport")
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _home(tmp_path: Path, dsn: str) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    config = {"storage": {"backend": "postgres", "dsn": dsn}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


def _doctor(home: Path) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(main, ["--home", str(home), "doctor", "--json"])
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def _definitions(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {name: definition for name, definition in conn.execute(_DEFINITIONS).fetchall()}


def test_doctor_reports_a_dropped_or_disabled_trigger_and_rebuild_index_restores_it(
    tmp_path: Path, owner: str
) -> None:
    home = _home(tmp_path, owner)
    checks = _doctor(home)
    assert checks["postgres triggers"]["status"] == "ok", checks["postgres triggers"]
    assert checks["postgres indexes"]["status"] == "ok"
    before = _definitions(owner)
    assert set(TRIGGERS) <= set(before) and set(INDEXES) <= set(before)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("DROP TRIGGER messages_session_check ON memoryport.messages")
        conn.execute("ALTER TABLE memoryport.sessions DISABLE TRIGGER sessions_delete_messages")
        conn.execute("DROP INDEX memoryport.messages_time")
        conn.execute("DROP INDEX memoryport.sessions_title")
    checks = _doctor(home)
    triggers = checks["postgres triggers"]
    assert triggers["status"] == "fail"
    assert "messages_session_check missing" in triggers["detail"]
    assert "sessions_delete_messages disabled" in triggers["detail"]
    assert "memoryport sessions rebuild-index" in triggers["fix"]
    indexes = checks["postgres indexes"]
    assert indexes["status"] == "fail"
    assert "messages_time" in indexes["detail"] and "sessions_title" in indexes["detail"]
    assert "memoryport sessions rebuild-index" in indexes["fix"]

    result = CliRunner().invoke(main, ["--home", str(home), "sessions", "rebuild-index"])
    assert result.exit_code == 0, result.output

    checks = _doctor(home)
    assert checks["postgres triggers"]["status"] == "ok", checks["postgres triggers"]
    assert checks["postgres indexes"]["status"] == "ok", checks["postgres indexes"]
    assert _definitions(owner) == before  # as the migrations made them, enabled
    store = PostgresSessionStore(owner)
    try:  # the rules the triggers keep hold again
        with pytest.raises(SessionNotFound):
            store.append_messages("nobody", [{"role": "user", "content": "hi"}])
        sid = store.create_session("s1", source="cli").id
        store.append_messages(sid, [{"role": "user", "content": "hello"}])
        store.forget_session(sid)
        with psycopg.connect(owner, autocommit=True) as conn:
            left = conn.execute("SELECT count(*) FROM memoryport.messages").fetchone()
        assert left == (0,)
    finally:
        store.close()


def test_rebuild_index_changes_nothing_on_a_sound_store(tmp_path: Path, owner: str) -> None:
    before = _definitions(owner)
    result = CliRunner().invoke(
        main, ["--home", str(_home(tmp_path, owner)), "sessions", "rebuild-index"]
    )
    assert result.exit_code == 0, result.output
    assert _definitions(owner) == before


def test_every_index_definition_matches_the_migrations(tmp_path: Path, owner: str) -> None:
    """Every index of ``INDEXES`` dropped at once comes back identical to the migrations'."""
    before = _definitions(owner)
    with psycopg.connect(owner, autocommit=True) as conn:
        for index in INDEXES:
            conn.execute(sql.SQL("DROP INDEX memoryport.{}").format(sql.Identifier(index)))
        for trigger in TRIGGERS:
            conn.execute(
                sql.SQL("DROP FUNCTION memoryport.{}() CASCADE").format(sql.Identifier(trigger))
            )
    result = CliRunner().invoke(
        main, ["--home", str(_home(tmp_path, owner)), "sessions", "rebuild-index"]
    )
    assert result.exit_code == 0, result.output
    assert _definitions(owner) == before
