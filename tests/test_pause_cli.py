"""``memoryport pause`` / ``resume`` (issue 18): the switch from the command line, shown by
``status`` and honoured by the CLI's own writes (edit/restore refuse while paused)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memoryport.cli import main


def _run(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.output


def test_pause_refuses_cli_writes_shows_in_status_and_resume_restores(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _run(home, "memory", "add", "Deploys on Fridays")[0] == 0
    code, out = _run(home, "pause", "--recall")
    assert code == 0 and "Paused: writes and recall" in out
    code, out = _run(home, "status", "--no-probe")
    assert "Paused: writes and recall (by cli" in out
    code, out = _run(home, "memory", "add", "Second entry")
    assert code != 0 and "paused" in out.lower()
    code, out = _run(home, "memory", "restore", "memory:1", "--before")
    assert code != 0 and "paused" in out.lower() and "resume" in out
    entries = json.loads(_run(home, "memory", "list", "--json")[1])
    assert json.dumps(entries).count("Deploys on Fridays") == 1  # nothing changed
    assert "Second entry" not in json.dumps(entries)
    code, out = _run(home, "resume", "--json")
    assert code == 0 and json.loads(out)["active"] is False
    assert _run(home, "memory", "add", "Second entry")[0] == 0
    assert "Paused" not in _run(home, "status", "--no-probe")[1]


def test_pausing_nothing_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "pause", "--no-writes")
    assert code == 2 and "nothing to pause" in out
