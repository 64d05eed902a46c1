"""`make run` installs the agent extra, runs the worked example and says how to activate."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")


def _make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if MAKE is None:
        pytest.fail("`make` is not installed; the Makefile is the documented entry point")
    return subprocess.run(
        [MAKE, "--no-print-directory", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240,
    )


def test_make_run_installs_the_agent_extra() -> None:
    """The install step of `make run` brings the agent extra, so `memoryport chat` works."""
    plan = _make("-n", "-B", "run")
    assert plan.returncode == 0, plan.stderr
    installs = [line for line in plan.stdout.splitlines() if "pip install" in line and "-e" in line]
    assert installs and all("[agent]" in line for line in installs), plan.stdout


def test_make_run_runs_the_quickstart_and_prints_how_to_activate(tmp_path: Path) -> None:
    """The main job still runs; the last lines say how to activate the environment."""
    env = {**os.environ, "MEMORYPORT_HOME": str(tmp_path / "home")}
    # -o: do not (re)install here; the install step is covered by the dry run above.
    result = _make("run", "-o", ".venv/.installed-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "=== system prompt of the next session" in result.stdout
    assert "source .venv/bin/activate" in result.stdout
    assert "memoryport chat" in result.stdout
    assert (tmp_path / "home").is_dir()


def test_make_stress_is_one_command() -> None:
    """`make stress` runs the stress scripts through the package entry point."""
    plan = _make("-n", "stress", "-o", ".venv/.installed-run")
    assert plan.returncode == 0, plan.stderr
    assert "-m benchmarks.stress" in plan.stdout
