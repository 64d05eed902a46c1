"""``memoryport doctor`` says whether the active provider's backend answers (issues 16,
17: "reachability shows in status/doctor"), naming the URL when it does not — against a
real loopback MentisDB double that is up, then stopped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from doubles.mentisdb_server import MentisDBDouble
from memoryport.cli import main


@pytest.fixture
def double() -> Iterator[MentisDBDouble]:
    server = MentisDBDouble().start()
    yield server
    server.stop()
    for name in ("MENTISDB_API_KEY", "MENTISDB_URL", "MENTISDB_CHAIN_KEY"):
        os.environ.pop(name, None)


def _home(tmp_path: Path, url: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": "mentisdb"}, "mentisdb": {"url": url, "retry_base_s": 0.0}}))
    return home


def test_doctor_reports_the_backend_up_then_down_with_its_url(
    tmp_path: Path, double: MentisDBDouble
) -> None:
    home = _home(tmp_path, double.url)
    up = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert f"'mentisdb' reaches {double.url}" in up.output, up.output
    double.stop()
    down = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert down.exit_code == 1
    assert "'mentisdb' cannot reach" in down.output and double.url in down.output
    assert "Traceback" not in down.output
