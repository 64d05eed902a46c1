"""``memoryport storage copy --to postgresql://...``: SQLite history into PostgreSQL."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import pgserver
from memoryport.admin.storage import copy_sessions
from memoryport.cli import main
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

pytestmark = pytest.mark.postgres


@pytest.fixture
def target(pg_server: pgserver.PgServer) -> Iterator[str]:
    """The server's DSN; the store's default schema is dropped afterwards."""
    yield pg_server.uri
    pgserver.drop_schema(pg_server.uri, "memoryport")


def _home(tmp_path: Path) -> Path:
    """A home whose state.db has a child started before its parent, a hidden source, NUL
    text and an empty session."""
    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteSessionStore(home / "state.db")
    store.create_session("parent", source="cli", user_id="ann", started_at=200.0)
    store.create_session("child", parent_session_id="parent", started_at=100.0)
    store.create_session("tooling", source="tool", user_id="bo", started_at=150.0)
    store.create_session("empty", source="cli", started_at=50.0)
    store.append_messages("parent", [{"role": "user", "content": f"kafka {i}"} for i in range(5)])
    store.append_message("child", {"role": "assistant", "content": "nul \x00 inside"})
    store.append_message("tooling", {"role": "tool", "content": "tool output"})
    store.close()
    return home


def _export(store: SQLiteSessionStore | PostgresSessionStore) -> list[object]:
    out = io.StringIO()
    store.export_jsonl(out)
    return [json.loads(line) for line in out.getvalue().splitlines()[1:]]


def test_copy_keeps_everything_in_small_chunks_and_reruns_skip(tmp_path: Path, target: str) -> None:
    home = _home(tmp_path)
    seen: list[tuple[int, int]] = []
    report = copy_sessions(
        home, target, chunk_sessions=1, progress=lambda d, t: seen.append((d, t))
    )
    assert (report.sessions, report.messages, report.skipped) == (4, 7, 0)
    assert seen[0] == (0, 7) and seen[-1] == (7, 7)
    source = SQLiteSessionStore(home / "state.db", hidden_sources=())
    copy = PostgresSessionStore(target, hidden_sources=())
    try:
        assert _export(copy) == _export(source)
        assert copy.get_session("child").parent_session_id == "parent"
        assert [h.message.content for h in copy.search_messages("kafka", limit=9).hits]
    finally:
        source.close()
        copy.close()
    again = copy_sessions(home, target)
    assert (again.sessions, again.skipped) == (0, 4)


def test_cli_copy_switches_the_home_to_postgres(tmp_path: Path, target: str) -> None:
    home = _home(tmp_path)
    runner = CliRunner()
    result = runner.invoke(
        main, ["--home", str(home), "storage", "copy", "--to", target, "--switch", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sessions"] == 4 and data["messages"] == 7 and data["switched"] is True
    config = yaml.safe_load((home / "config.yaml").read_text())
    assert config["storage"] == {"backend": "postgres", "dsn": target}
    listed = runner.invoke(main, ["--home", str(home), "sessions", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert {s["id"] for s in json.loads(listed.stdout)["sessions"]} >= {"parent", "child"}


def test_cli_copy_errors_say_what_to_do(tmp_path: Path) -> None:
    runner = CliRunner()
    empty = tmp_path / "empty"
    result = runner.invoke(main, ["--home", str(empty), "storage", "copy", "--to", "x"])
    assert result.exit_code == 1 and "nothing to copy" in result.stderr
    home = _home(tmp_path)
    bad = "postgresql://bob:hunter2@127.0.0.1:1/db"
    result = runner.invoke(main, ["--home", str(home), "storage", "copy", "--to", bad])
    assert result.exit_code == 1 and "cannot connect to PostgreSQL" in result.stderr
    assert "hunter2" not in result.output and not (home / "config.yaml").exists()
