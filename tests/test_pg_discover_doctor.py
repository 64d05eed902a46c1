"""``memoryport doctor`` checks the index discover's short CJK queries walk
(``messages_cjk_time``, m050) beside the other indexes the session store relies on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from click.testing import CliRunner

import pgserver
from memoryport.admin.doctor_postgres import EXPECTED_INDEXES
from memoryport.cli import main
from memoryport.storage.sessions.postgres import PostgresSessionStore

pytestmark = pytest.mark.postgres


def _index_check(home: Path, dsn: str) -> dict[str, Any]:
    home.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"backend": "postgres", "dsn": dsn}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["--home", str(home), "doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    check: dict[str, Any] = checks["postgres indexes"]
    return check


def test_doctor_fails_without_the_cjk_time_index(
    tmp_path: Path, pg_server: pgserver.PgServer
) -> None:
    assert "messages_cjk_time" in EXPECTED_INDEXES
    # doctor checks the store's one schema, "memoryport": start from a fresh one
    pgserver.drop_schema(pg_server.uri, "memoryport")
    PostgresSessionStore(pg_server.uri).close()
    try:
        check = _index_check(tmp_path, pg_server.uri)
        assert check["status"] == "ok"
        assert check["detail"].startswith(f"{len(EXPECTED_INDEXES)} indexes valid")
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute("DROP INDEX memoryport.messages_cjk_time")
        check = _index_check(tmp_path, pg_server.uri)
        assert check["status"] == "fail"
        assert check["detail"] == "missing: messages_cjk_time; invalid: none"
    finally:
        pgserver.drop_schema(pg_server.uri, "memoryport")
