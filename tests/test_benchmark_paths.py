"""Benchmarks find their data relative to the repository, never at a machine path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"""["'(]/(?:work|home|Users|root)/[^"')\s]*\.(?:json|jsonl|csv)""")


def test_no_absolute_machine_path_for_data_files() -> None:
    """No benchmark, test or doc names a data file by an absolute path on one machine."""
    offenders = []
    for folder in ("benchmarks", "tests", "docs", "examples"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in {".py", ".md"} or path == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if MACHINE_PATH.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_locomo_default_data_resolves_from_the_repository(tmp_path: Path) -> None:
    """The default data file is ../shared/data/locomo-dev.json beside the repo, from any cwd."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import locomo_retrieval as l; "
        "print(l.DEFAULT_DATA)"
    )
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "benchmarks")],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert Path(out) == (REPO.parent / "shared" / "data" / "locomo-dev.json").resolve()


def test_locomo_missing_data_file_is_a_clear_error(tmp_path: Path) -> None:
    """A missing data file names the path and how to point at another one; exit code 2."""
    missing = tmp_path / "absent.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_retrieval.py"), "--data", str(missing)],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert result.returncode == 2
    assert str(missing) in result.stderr
    assert "--data" in result.stderr and "MEMORYPORT_LOCOMO_DATA" in result.stderr
