"""The stress scripts (benchmarks/stress) run in one command and report 0 lost, 0 corrupt.

Small sizes here: the point is that every scenario runs end to end against the real stores
with real worker processes and real SIGKILLs; `make stress` runs the full sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = {
    "concurrent-adds",
    "kill-curated",
    "kill-session",
    "first-open",
    "disk-full-curated",
    "disk-full-session",
}


def _stress(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    report = tmp_path / "stress.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.stress", "--json", str(report), *args],
        cwd=REPO, capture_output=True, text=True, timeout=280,
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return result, data


def test_every_scenario_runs_and_shows_no_loss_or_corruption(tmp_path: Path) -> None:
    """One command, small sizes: six rows, each with acknowledged == stored, 0 corrupt."""
    result, data = _stress(
        tmp_path, "--kills", "3", "--trials", "2", "--processes", "3", "--adds", "5",
        "--headroom-session", "65536", "--seed", "7",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row["scenario"]: row for row in data["scenarios"]}
    assert len(rows) == len(SCENARIOS)
    for row in rows.values():
        assert row["ok"], row
        assert row["lost"] == 0 and row["corrupt"] == 0, row
        assert row["acknowledged"] > 0, row
    for store in ("curated", "session"):
        name = f"disk full (RLIMIT_FSIZE), {store} store"
        assert rows[name]["errors"] > 0, rows[name]  # the limit was reached and writes refused
    assert "acknowledged" in result.stdout and "stored" in result.stdout
    assert "all scenarios: 0 lost, 0 corrupt" in result.stdout


def test_run_all_is_also_a_script(tmp_path: Path) -> None:
    """`python benchmarks/stress/run_all.py --only ...` works from any directory."""
    report = tmp_path / "one.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "stress" / "run_all.py"),
         "--only", "kill-curated", "--kills", "2", "--json", str(report)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = json.loads(report.read_text())["scenarios"]
    assert row["runs"] == 2 and row["lost"] == 0 and row["corrupt"] == 0


def test_bad_option_is_a_clear_error(tmp_path: Path) -> None:
    """An out-of-range count names the option and the range; nothing runs."""
    result, data = _stress(tmp_path, "--kills", "0")
    assert result.returncode == 2
    assert "--kills" in result.stderr and "out of range" in result.stderr
    assert data == {}
