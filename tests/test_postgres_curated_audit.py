"""The audit log on both backends, and a home configured for PostgreSQL end to end:
tool writes, ``memoryport memory history``/``restore``/``why``, the audit trail and
``memoryport export`` all work with curated memory and the audit log in the database."""

from __future__ import annotations

import json
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import memoryport
import pgserver
from memoryport.admin import audit
from memoryport.cli import main
from memoryport.providers.curated import create_builtin_provider
from memoryport.storage.audit import AuditLog
from memoryport.storage.postgres_audit import PostgresAuditLog
from memoryport.storage.postgres_curated_schema import close_databases
from memoryport.testing import ProviderConformance

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["sqlite", "postgres"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AuditLog]:
    """An empty audit log on the backend under test."""
    if request.param == "sqlite":
        yield AuditLog(tmp_path / "audit.db")
        return
    server: pgserver.PgServer = request.getfixturevalue("pg_server")
    schema = pgserver.fresh_schema("aud")
    yield PostgresAuditLog(server.uri, schema=schema, profile="p1")
    close_databases(schema)
    pgserver.drop_schema(server.uri, schema)


def test_events_filters_retention_and_held_syncs(log: AuditLog) -> None:
    first = log.append(shell="cli", kind="write", action="memory.add", ts=1_000.0,
                       target="memory", revision="memory:1")  # fmt: skip
    second = log.append(shell="mcp", kind="read", action="session_search", user_id="ana")
    assert [e.id for e in log.events()] == [second, first]
    assert [e.id for e in log.events(shell="cli")] == [first]
    assert [e.action for e in log.events(kind="read")] == ["session_search"]
    assert log.events(since=2_000.0)[0].id == second and log.count() == 2
    assert log.retention_days() == 90
    assert log.set_retention_days(1) == 1  # the event at ts=1000 is pruned
    assert log.count() == 1 and log.retention_days() == 1
    with pytest.raises(ValueError, match="keep forever"):
        log.set_retention_days(-1)
    held = log.hold("ana", "s1", {"turn": 1})
    log.hold("ana", "s1", {"turn": 2})
    assert log.has_held("ana") and not log.has_held("bob") and log.held_count() == 2
    claimed = log.claim_held("ana")
    assert claimed[0].id == held and [h.payload for h in claimed] == [
        {"turn": 1}, {"turn": 2}]
    assert log.claim_held("ana") == [] and log.held_count() == 0


@pytest.fixture
def pg_home(pg_server: pgserver.PgServer, tmp_path: Path) -> Iterator[Path]:
    """A profile home whose config.yaml puts all of memory in the suite's PostgreSQL."""
    profile = f"p{uuid.uuid4().hex[:10]}"
    home = tmp_path / "profiles" / profile
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(
        json.dumps({"storage": {"backend": "postgres", "dsn": pg_server.uri}}), encoding="utf-8"
    )
    yield home
    close_databases("memoryport")
    pgserver.drop_schema(pg_server.uri, "memoryport")  # the default schema, as other tests do


def _cli(home: Path, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, [*args, "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


def test_a_postgres_home_keeps_history_audit_and_export(pg_home: Path, tmp_path: Path) -> None:
    with memoryport.open(pg_home, platform="mcp") as memory:
        memory.start_session(source="mcp")
        memory.call_tool("memory", {"action": "add", "target": "memory", "content": "Uses uv."})
        memory.call_tool("memory", {"action": "add", "target": "memory", "content": "Ruff."})
    assert not (pg_home / "memories").exists() and not (pg_home / "audit.db").exists()
    writes = [e for e in audit.events(pg_home) if e.kind == "write"]
    assert [e.revision for e in writes] == ["memory:2", "memory:1"]
    history = _cli(pg_home, "memory", "history")
    assert [r["id"] for r in history["revisions"]] == ["memory:2", "memory:1"]  # type: ignore[index]
    why = _cli(pg_home, "why", "memory:2")
    assert why["source"] == "memory_tool" and why["session_id"] and why["ref"] == "memory:2"
    restored = CliRunner().invoke(main, ["memory", "restore", "memory:1", "--home", str(pg_home)])
    assert restored.exit_code == 0, restored.output
    listed = _cli(pg_home, "memory", "list", "--target", "memory")
    assert "Uses uv." in json.dumps(listed) and "Ruff." not in json.dumps(listed)
    archive = tmp_path / "out.zip"
    exported = CliRunner().invoke(main, ["export", "--out", str(archive), "--home", str(pg_home)])
    assert exported.exit_code == 0, exported.output
    with zipfile.ZipFile(archive) as zipped:
        names = zipped.namelist()
        assert zipped.read("curated/memories/MEMORY.md").decode() == "Uses uv."
        assert "curated/memories/.history/MEMORY.md.jsonl" in names


def test_memory_edit_edits_the_database_text(
    pg_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CliRunner().invoke(main, ["memory", "add", "Old fact.", "--home", str(pg_home)]
                              ).exit_code == 0  # fmt: skip
    seen = tmp_path / "seen.md"
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, shutil\nfrom pathlib import Path\n"
        f"shutil.copy(sys.argv[-1], {str(seen)!r})\n"
        "Path(sys.argv[-1]).write_text('Old fact.\\n§\\nNew fact.', encoding='utf-8')\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)
    result = CliRunner().invoke(main, ["memory", "edit", "--home", str(pg_home)])
    assert result.exit_code == 0, result.output
    assert seen.read_text(encoding="utf-8") == "Old fact."  # the editor got the row's text
    listed = _cli(pg_home, "memory", "list", "--target", "memory")
    assert "New fact." in json.dumps(listed)
    assert not (pg_home / "memories").exists()


def test_a_file_home_exported_imports_into_a_postgres_home(
    pg_home: Path, tmp_path: Path
) -> None:
    files_home = tmp_path / "files-home"
    for text in ("Uses uv.", "Deploys on Fridays."):
        added = CliRunner().invoke(main, ["memory", "add", text, "--home", str(files_home)])
        assert added.exit_code == 0, added.output
    archive = tmp_path / "move.zip"
    out = CliRunner().invoke(main, ["export", "--out", str(archive), "--home", str(files_home)])
    assert out.exit_code == 0, out.output
    result = CliRunner().invoke(main, ["import", str(archive), "--home", str(pg_home)])
    assert result.exit_code == 0, result.output
    listed = json.dumps(_cli(pg_home, "memory", "list", "--target", "memory"))
    assert "Uses uv." in listed and "Deploys on Fridays." in listed
    assert not (pg_home / "memories" / "MEMORY.md").exists()


class TestBuiltinProviderOnPostgres(ProviderConformance):
    """The curated provider passes the conformance kit with its memory in PostgreSQL."""

    @pytest.fixture
    def home(self, pg_home: Path) -> Path:
        """A profile home whose config.yaml says ``storage.backend: postgres``."""
        return pg_home

    def make_provider(self, home: Path) -> Any:
        """The built-in provider of that home (its backend comes from config.yaml)."""
        return create_builtin_provider(home)

    def test_writes_land_in_the_database(self, ready: Any, home: Path) -> None:
        ready.handle_tool_call("memory", {"action": "add", "target": "user", "content": "Ana."})
        assert not (home / "memories").exists()
        assert type(ready.store.backend).__name__ == "PostgresCuratedBackend"
        assert ready.store.entries("user") == ["Ana."]
