"""``memoryport storage copy --to postgresql://... --switch`` moves curated memory and the
audit log too:
every target with its history as it was, per-user profiles (hashed directory names
matched back through the history), and a rerun copies nothing twice."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import pgserver
from memoryport.admin import audit
from memoryport.cli import main
from memoryport.providers.curated import CuratedMemory
from memoryport.storage.audit import DB_NAME, AuditLog
from memoryport.storage.postgres_curated_schema import close_databases
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

pytestmark = pytest.mark.postgres


@pytest.fixture
def target(pg_server: pgserver.PgServer) -> Iterator[str]:
    """The server's DSN; its default schema is dropped afterwards."""
    yield pg_server.uri
    close_databases("memoryport")
    pgserver.drop_schema(pg_server.uri, "memoryport")


def _copy(home: Path, dsn: str, *extra: str) -> dict[str, object]:
    args = ["--home", str(home), "storage", "copy", "--to", dsn, "--json", *extra]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


def test_copy_moves_curated_memory_with_its_history(target: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    SQLiteSessionStore(home / "state.db").close()
    CuratedMemory(home).add("memory", "The repo uses uv.")
    CuratedMemory(home).replace("memory", "uv", "The repo uses uv and ruff.")
    alice = CuratedMemory(home, user_id="alice")
    alice.add("user", "Alice prefers tea.")
    odd = CuratedMemory(home, user_id="Bob Smith")  # a hashed directory name
    odd.add("user", "Bob likes trains.")
    before = CuratedMemory(home).history("memory")
    log = AuditLog(home / DB_NAME)
    log.append(shell="cli", kind="write", action="memory.add", revision="memory:1",
               ts=time.time() - 60)
    log.append(shell="mcp", kind="read", action="session_search", user_id="alice")
    log.hold("alice", "s1", {"query": "q", "response": "r"})
    log.close()

    report = _copy(home, target, "--switch")
    assert report["audit_events"] == 2
    assert report["curated"] == {"targets": 3, "revisions": 4, "skipped": []}
    moved = CuratedMemory(home)  # config.yaml now says postgres
    assert type(moved.backend).__name__ == "PostgresCuratedBackend"
    assert moved.entries("memory") == ["The repo uses uv and ruff."]
    assert [(r.rev, r.action, r.after, r.ts) for r in moved.history("memory")] == [
        (r.rev, r.action, r.after, r.ts) for r in before
    ]
    assert CuratedMemory(home, user_id="alice").entries("user") == ["Alice prefers tea."]
    assert CuratedMemory(home, user_id="Bob Smith").entries("user") == ["Bob likes trains."]
    events = audit.events(home)
    assert [(e.action, e.revision) for e in events] == [
        ("session_search", ""), ("memory.add", "memory:1")]
    assert audit.audit_log(home).has_held("alice")
    moved.add("memory", "Deploys on Fridays.")  # writes go on from the copied revision
    assert moved.latest_rev("memory") == 3

    again = _copy(home, target)
    assert again["curated"]["targets"] == 0 and again["audit_events"] == 0  # type: ignore[index]
    assert len(again["curated"]["skipped"]) == 3  # type: ignore[index]
    assert CuratedMemory(home).entries("memory") == ["The repo uses uv and ruff.",
                                                     "Deploys on Fridays."]  # fmt: skip
