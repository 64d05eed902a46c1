"""The CLI on a PostgreSQL session backend: bad DSNs, ``doctor``, and PG* vars in ``.env``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict

import pgserver
from memoryport.cli import main
from memoryport.config import write_env
from memoryport.errors import StoreError
from memoryport.storage.sessions.postgres import PostgresSessionStore

_BAD_DSN = "postgresql://bob:hunter2@127.0.0.1:1/mydb"  # nothing listens on port 1


def _use_postgres(home: Path, dsn: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"backend": "postgres", "dsn": dsn}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def test_a_bad_dsn_fails_in_one_line_without_the_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _use_postgres(tmp_path, _BAD_DSN)
    with caplog.at_level(logging.INFO):
        result = CliRunner().invoke(main, ["--home", str(tmp_path), "sessions", "list"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: cannot connect to PostgreSQL at bob@127.0.0.1:1/mydb")
    assert "storage.dsn" in lines[0] and "hunter2" not in result.output
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]


def test_the_store_checks_the_connection_before_opening_a_pool() -> None:
    with pytest.raises(StoreError) as info:
        PostgresSessionStore(_BAD_DSN)
    assert "cannot connect to PostgreSQL at bob@127.0.0.1:1/mydb" in str(info.value)
    with pytest.raises(StoreError, match="not a valid PostgreSQL connection string"):
        PostgresSessionStore("host=x bogus_option=1 password=hunter2")


def test_doctor_checks_the_postgres_backend(tmp_path: Path, pg_server: pgserver.PgServer) -> None:
    _use_postgres(tmp_path, _BAD_DSN)
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "doctor", "--json"])
    assert result.exit_code == 1
    check = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "sessions")
    assert check["status"] == "fail" and "127.0.0.1:1" in check["detail"]
    assert "storage.dsn" in check["fix"] and "hunter2" not in result.output
    _use_postgres(tmp_path, pg_server.uri)
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "doctor", "--json"])
    check = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "sessions")
    assert check["status"] == "ok" and "reachable" in check["detail"]


def test_sessions_use_pg_variables_from_dotenv(
    tmp_path: Path, pg_server: pgserver.PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = conninfo_to_dict(pg_server.uri)
    names = {
        "host": "PGHOST",
        "port": "PGPORT",
        "user": "PGUSER",
        "dbname": "PGDATABASE",
        "password": "PGPASSWORD",
    }
    for var in names.values():
        monkeypatch.delenv(var, raising=False)
    _use_postgres(tmp_path, "postgresql://")  # everything else comes from <home>/.env
    write_env(tmp_path, {var: str(params[key]) for key, var in names.items() if key in params})
    try:
        result = CliRunner().invoke(main, ["--home", str(tmp_path), "sessions", "list", "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == {"sessions": [], "count": 0}
    finally:
        pgserver.drop_schema(pg_server.uri, "memoryport")
