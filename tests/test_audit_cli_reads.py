"""Issue 18: reads (and forgets) through the CLI are in the audit log like tool calls,
UI and MCP actions — shell ``cli``, the action and what was read — and a read of a home
that does not exist creates nothing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memoryport.cli import main


def _run(home: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_reads_are_audited_with_what_was_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _run(home, "memory", "add", "Deploys on Fridays")
    _run(home, "memory", "list")
    _run(home, "sessions", "search", "walrus")
    _run(home, "facts", "list")
    _run(home, "why", "memory:1")
    events = json.loads(_run(home, "audit", "--shell", "cli", "--json"))["events"]
    actions = {(e["kind"], e["action"], e["target"]) for e in events}
    assert ("read", "memory list", "") in actions
    assert ("read", "sessions search", "walrus") in actions
    assert ("read", "facts list", "") in actions
    assert ("read", "why", "memory:1") in actions


def test_reading_a_missing_home_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    CliRunner().invoke(main, ["--home", str(missing), "facts", "list"])
    CliRunner().invoke(main, ["--home", str(missing), "memory", "list"])
    assert not missing.exists()
