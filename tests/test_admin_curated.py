"""``memoryport.admin.curated``: shells read curated memory and change it the tool's way.

``memoryport memory edit`` used to rewrite ``MEMORY.md`` behind every provider's back; it
now saves through ``memoryport.open()`` like the ``memory`` tool, so the active provider
(the real ``write_recorder`` plugin from tests/fixtures/plugins) sees each change.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from fixtures.helpers import install_plugin, isolate, private_tempdir
from memoryport.admin import curated
from memoryport.cli import main
from memoryport.config import MemorySettings
from memoryport.errors import MemoryStoreError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    private_tempdir(tmp_path, monkeypatch)
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def recorder(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "writes.jsonl"
    monkeypatch.setenv("WRITE_RECORDER_LOG", str(log))
    install_plugin(home, "write_recorder")
    assert run("config", "set", "memory.provider", "write_recorder").exit_code == 0
    return log


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def recorded(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def use_editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_text: str) -> None:
    """$EDITOR = a real script that replaces the edited file with ``new_text``."""
    payload = tmp_path / "payload.md"
    payload.write_text(new_text, encoding="utf-8")
    script = tmp_path / "editor.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            Path(sys.argv[-1]).write_bytes(Path({str(payload)!r}).read_bytes())
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)


def test_memory_edit_reaches_the_active_providers_on_memory_write(
    home: Path, recorder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("memory", "add", "Project uses pytest.").exit_code == 0
    assert run("memory", "add", "Old fact to drop.").exit_code == 0
    before = len(recorded(recorder))
    use_editor(tmp_path, monkeypatch, "Project uses pytest.\n§\nDeploys go through CI.\n")
    result = run("memory", "edit")
    assert result.exit_code == 0, result.output
    assert "File saved." in result.output
    lines = recorded(recorder)[before:]
    assert [(r["action"], r["target"], r["content"]) for r in lines] == [
        ("remove", "memory", "Old fact to drop."),
        ("add", "memory", "Deploys go through CI."),
    ]
    assert all(r["source"] == "cli" and r["initialized"] for r in lines)
    text = (home / "memories" / "MEMORY.md").read_text(encoding="utf-8")
    assert "Deploys go through CI." in text and "Old fact" not in text


def test_refused_edit_reaches_no_provider(
    home: Path, recorder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("memory", "add", "Project uses pytest.").exit_code == 0
    before = len(recorded(recorder))
    use_editor(tmp_path, monkeypatch, "x" * 5000)  # over the whole MEMORY.md budget
    result = run("memory", "edit")
    assert result.exit_code == 1
    assert "Nothing was changed" in result.output
    assert len(recorded(recorder)) == before


def test_save_edit_refuses_a_file_changed_meanwhile(home: Path) -> None:
    store = curated.open_curated(home, settings=MemorySettings())
    store.add("memory", "First fact.")
    original = (home / "memories" / "MEMORY.md").read_text(encoding="utf-8")
    store.add("memory", "Written by someone else meanwhile.")
    with pytest.raises(MemoryStoreError, match="changed by another writer"):
        curated.save_edit(home, "", "memory", ["Edited fact."], expected_raw=original)
    assert store.entries("memory") == ["First fact.", "Written by someone else meanwhile."]


def test_review_edit_reports_problems_and_save_edit_writes(home: Path) -> None:
    store = curated.open_curated(home, "alice")
    review = curated.review_edit(store, "user", "y" * 5000, "")
    assert review.problems
    good = curated.review_edit(store, "user", "Alice likes tea.\n§\nAlice uses vim.\n", "")
    assert good.problems == []
    result = curated.save_edit(home, "alice", "user", good.entries, expected_raw="")
    assert result.entry_count == 2
    assert store.entries("user") == ["Alice likes tea.", "Alice uses vim."]
    assert curated.target_paths(store, "user") == {"user": str(store.path("user"))}


def test_call_memory_tool_returns_the_tools_result(home: Path) -> None:
    added = curated.call_memory_tool(home, "", {"action": "add", "content": "A fact."})
    assert added["success"] is True
    refused = curated.call_memory_tool(home, "", {"action": "remove", "old_text": "nothing"})
    assert refused["success"] is False and refused["error"]
    info = curated.target_info(curated.open_curated(home), "memory")
    assert info["entries"] == ["A fact."] and info["entry_count"] == 1


def test_usage_summary_reports_each_target(home: Path) -> None:
    curated.call_memory_tool(home, "", {"action": "add", "content": "A fact."})
    summary = curated.usage_summary(home, MemorySettings())
    assert summary["active"] is True
    assert summary["targets"]["memory"]["entries"] == 1
    assert summary["targets"]["user"]["entries"] == 0
