"""A read-only home: `doctor` and `config set` say "read-only" instead of crashing.

The suite runs as root in CI, where permissions do not stop anything. So the command
runs in a forked child that, when the test runs as root, drops to the unprivileged
``nobody`` user (``os.setuid``) before running the CLI: the permission check is real.
Not as root, the home is simply ``chmod 555``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fixtures.helpers import as_unprivileged
from memoryport.cli import main


@pytest.fixture
def ro_home() -> Iterator[Path]:
    """A home with a config.yaml that the user running the CLI cannot write."""
    base = Path(tempfile.mkdtemp(prefix="mp-ro-"))  # under /tmp: `nobody` can reach it
    base.chmod(0o755)
    home = base / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  nudge_interval: 4\n")
    (home / "config.yaml").chmod(0o644)
    home.chmod(0o755 if os.geteuid() == 0 else 0o555)
    # Warm up as ourselves: every module the commands import lazily is loaded before the
    # child gives up root (the interpreter's own files are not readable by `nobody`).
    scratch = base / "scratch"
    for args in (["doctor"], ["config", "set", "memory.nudge_interval", "3"], ["status"]):
        CliRunner().invoke(main, ["--home", str(scratch), *args])
    shutil.rmtree(scratch)
    try:
        yield home
    finally:
        home.chmod(0o755)
        shutil.rmtree(base)


def run_unprivileged(home: Path, *args: str) -> dict[str, Any]:
    """Run ``memoryport --home HOME ARGS`` in a child process that cannot write ``home``."""

    def invoke() -> dict[str, Any]:
        result = CliRunner().invoke(main, ["--home", str(home), *args])
        error = result.exception
        return {
            "uid": os.getuid(),
            "exit_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "exception": None if isinstance(error, SystemExit | None) else repr(error),
        }

    report = as_unprivileged(invoke)
    assert report["uid"] != 0 or os.geteuid() != 0
    assert report["exception"] is None, report
    assert "Traceback" not in report["stdout"] + report["stderr"]
    return report


def test_config_set_in_a_read_only_home_says_read_only(ro_home: Path) -> None:
    before = (ro_home / "config.yaml").read_bytes()
    report = run_unprivileged(ro_home, "config", "set", "memory.nudge_interval", "9")
    assert report["exit_code"] == 1
    assert "read-only" in report["stderr"] and str(ro_home) in report["stderr"]
    assert "chmod u+w" in report["stderr"] or "--home" in report["stderr"]
    assert (ro_home / "config.yaml").read_bytes() == before
    assert sorted(p.name for p in ro_home.iterdir()) == ["config.yaml"]  # no temp files left


def test_doctor_in_a_read_only_home_reports_it(ro_home: Path) -> None:
    report = run_unprivileged(ro_home, "doctor", "--json")
    assert report["exit_code"] == 1
    checks = json.loads(report["stdout"])["checks"]
    home = [c for c in checks if c["name"] == "home" and c["status"] == "fail"]
    assert home and "read-only" in home[0]["detail"]
    assert not [c for c in checks if "ModuleNotFoundError" in c["detail"]]  # honest harness
    wal = next(c for c in checks if c["name"] == "sqlite wal")
    assert wal["status"] == "warn" and "read-only" in wal["detail"]


def test_reading_still_works_in_a_read_only_home(ro_home: Path) -> None:
    report = run_unprivileged(ro_home, "config", "get", "memory.nudge_interval")
    assert report["exit_code"] == 0 and report["stdout"].strip() == "4"
    shown = run_unprivileged(ro_home, "config", "show")
    assert shown["exit_code"] == 0 and "nudge_interval: 4" in shown["stdout"]
