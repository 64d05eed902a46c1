"""``memoryport doctor`` on a PostgreSQL store: version, extensions, indexes, policies, latency."""

from __future__ import annotations

import json
import uuid
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
from memoryport.storage.sessions.postgres import PostgresSessionStore

pytestmark = pytest.mark.postgres


def _doctor(home: Path, dsn: str) -> dict[str, dict[str, Any]]:
    home.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"backend": "postgres", "dsn": dsn}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["--home", str(home), "doctor", "--json"])
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_reports_the_server_and_the_store(
    tmp_path: Path, pg_server: pgserver.PgServer
) -> None:
    role = f"mp_doc_{uuid.uuid4().hex[:8]}"
    # doctor checks the store's one schema, "memoryport"; other tests on this shared
    # server may have left theirs (curated rows live there too): start without it
    pgserver.drop_schema(pg_server.uri, "memoryport")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE postgres TO {}").format(sql.Identifier(role))
        )
    dsn = make_conninfo(pg_server.uri, user=role)
    try:
        checks = _doctor(tmp_path, dsn)
        assert checks["postgres version"]["status"] == "ok"
        assert f"PostgreSQL {pg_server.version}." in checks["postgres version"]["detail"]
        assert "pg_trgm" in checks["postgres extensions"]["detail"]
        assert "vector" in checks["postgres extensions"]["detail"]
        assert checks["postgres schema"]["status"] == "warn"  # nothing opened it yet
        assert checks["postgres latency"]["status"] == "ok"
        assert "median round trip" in checks["postgres latency"]["detail"]
        PostgresSessionStore(dsn).close()  # creates schema "memoryport" as the role
        checks = _doctor(tmp_path, dsn)
        assert checks["postgres indexes"]["status"] == "ok"
        assert checks["postgres policies"]["status"] == "ok"
        assert "message_events, messages, sessions" in checks["postgres policies"]["detail"]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP INDEX memoryport.messages_time")
            conn.execute("ALTER TABLE memoryport.messages NO FORCE ROW LEVEL SECURITY")
        checks = _doctor(tmp_path, dsn)
        assert checks["postgres indexes"]["status"] == "fail"
        assert "messages_time" in checks["postgres indexes"]["detail"]
        assert checks["postgres policies"]["status"] == "fail"
        assert "messages" in checks["postgres policies"]["detail"]
    finally:
        pgserver.drop_schema(pg_server.uri, "memoryport")
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_doctor_warns_when_the_role_bypasses_the_policies(
    tmp_path: Path, pg_server: pgserver.PgServer
) -> None:
    PostgresSessionStore(pg_server.uri).close()
    try:
        check = _doctor(tmp_path, pg_server.uri)["postgres policies"]
        assert check["status"] == "warn" and "bypasses them" in check["detail"]
    finally:
        pgserver.drop_schema(pg_server.uri, "memoryport")
