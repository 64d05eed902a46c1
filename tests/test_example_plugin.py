"""The example provider plugin in ``examples/notes_provider``: installable as a plugin
folder, practised with ``providers`` and ``setup``, and conformant (issue 10)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fixtures.helpers import isolate
from memoryport.api import open_memory
from memoryport.cli import main
from memoryport.plugins import load
from memoryport.testing import ProviderConformance

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "notes_provider"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def install(home: Path) -> Path:
    """What docs/plugins.md tells the user to do: copy the folder to <home>/plugins/notes."""
    return Path(shutil.copytree(EXAMPLE, home / "plugins" / "notes"))


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_providers_list_show_and_setup_on_the_example(home: Path) -> None:
    install(home)
    listed = invoke("providers", "list", "--json")
    assert listed.exit_code == 0, listed.output
    row = next(p for p in json.loads(listed.stdout)["providers"] if p["name"] == "notes")
    assert row["source"] == "user" and row["version"] == "1.0.0"
    shown = invoke("providers", "show", "notes", "--check")
    assert shown.exit_code == 0, shown.output
    assert "loaded: yes" in shown.stdout and "notes_add, notes_search" in shown.stdout
    done = invoke("setup", "notes", "--set", "max_notes=2", "--yes")
    assert done.exit_code == 0, done.output
    assert "Activated 'notes'" in done.stdout
    status = invoke("config", "get", "notes.max_notes")
    assert status.stdout.strip() == "2", status.output
    bad = invoke("setup", "notes", "--set", "max_notes=lots", "--yes")
    assert bad.exit_code != 0 and "max_notes" in bad.output


def test_the_configured_example_runs_a_turn(home: Path) -> None:
    install(home)
    assert invoke("setup", "notes", "--set", "max_notes=2", "--yes").exit_code == 0
    memory = open_memory()
    try:
        memory.start_session()
        for text in ("Ada drinks green tea", "Ada codes in Rust", "Ada lives in Lisbon"):
            saved = json.loads(memory.call_tool("notes_add", {"text": text}))
            assert saved["saved"] == text
        found = json.loads(memory.call_tool("notes_search", {"query": "ada"}))
        assert found["notes"] == ["Ada codes in Rust", "Ada lives in Lisbon"]  # max_notes=2
        turn = memory.begin_turn("Where does Ada live? Lisbon?")
        assert any("Lisbon" in text for _, text in turn.contexts)
        memory.end_turn(turn, "In Lisbon.")
    finally:
        memory.close()
    assert (home / "notes" / "notes.json").exists()


def test_providers_show_builtin_is_installed() -> None:
    shown = invoke("providers", "show", "builtin")
    assert shown.exit_code == 0, shown.output
    assert "not installed" not in shown.output
    assert "always installed" in shown.stdout
    data = json.loads(invoke("providers", "show", "builtin", "--json").stdout)
    assert data["installed"] is True


class TestExampleConforms(ProviderConformance):
    """The kit a provider author runs, applied to the example as installed."""

    def make_provider(self, home: Path) -> Any:
        install(home)
        result = load("notes", home)
        assert result.ok, result.traceback
        return result.provider
