"""``memoryport honcho ...`` (listed only while Honcho is active), ``memoryport setup
honcho`` (non-interactive and interactive), and ``status`` through CliRunner on real homes,
against the loopback Honcho double."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from doubles.honcho_server import HonchoDouble
from memoryport.cli import main

SECRET = "hch-secret-never-shown-1234"


@pytest.fixture
def double() -> Iterator[HonchoDouble]:
    server = HonchoDouble().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for name in ("HONCHO_API_KEY", "HONCHO_BASE_URL", "MEMORYPORT_HONCHO_HOST"):
        monkeypatch.delenv(name, raising=False)
    yield
    monkeypatch.delenv("HONCHO_API_KEY", raising=False)  # the CLI exports <home>/.env


def run(home: Path, *args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(main, ["--home", str(home), *args], input=input)


def _active(home: Path) -> Path:
    """A home where Honcho is the active provider (its command group is listed)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "honcho"}}))
    return home


def _host(home: Path, key: str = "memoryport") -> dict[str, Any]:
    return dict(json.loads((home / "honcho.json").read_text())["hosts"][key])


def test_the_group_is_listed_only_while_honcho_is_active(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert "honcho" not in run(home, "--help").output
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "honcho"}}))
    listed = run(home, "--help").output
    assert "honcho" in listed
    assert "dialectic" in run(home, "honcho", "tokens", "--help").output


def test_generic_setup_with_set_and_yes(tmp_path: Path, double: HonchoDouble) -> None:
    home = tmp_path / "home"
    result = run(home, "setup", "honcho", "--set", f"apiKey={SECRET}", "--set",
                 f"baseUrl={double.url}", "--set", "workspace=team", "--set",
                 "dialecticDepth=2", "--set", "recallMode=tools", "--yes", "--no-install")
    assert result.exit_code == 0, result.output
    host = _host(home)
    assert host == {"baseUrl": double.url, "workspace": "team", "dialecticDepth": 2,
                    "recallMode": "tools"}  # defaults are not pinned, the key never
    assert f"HONCHO_API_KEY={SECRET}" in (home / ".env").read_text()
    assert SECRET not in (home / "honcho.json").read_text() + (home / "config.yaml").read_text()
    status = json.loads(run(home, "honcho", "status", "--json").output)
    assert status["config"]["api_key"] == "set" and status["config"]["workspace"] == "team"
    assert status["server"]["reachable"] is True
    bad = run(home, "setup", "honcho", "--set", "dialecticDepth=9", "--yes", "--no-install")
    assert bad.exit_code != 0 and "dialecticDepth" in bad.output
    assert _host(home) == host  # unchanged


def test_generic_setup_interactively(tmp_path: Path, double: HonchoDouble) -> None:
    home = tmp_path / "home"
    answers = ["", double.url, "", "ws", "alice"] + [""] * 20
    result = run(home, "setup", "honcho", "--no-install", input="\n".join(answers) + "\n")
    assert result.exit_code == 0, result.output
    assert _host(home) == {"baseUrl": double.url, "workspace": "ws", "peerName": "alice"}


def test_provider_commands_edit_the_profile_host_block(tmp_path: Path,
                                                       double: HonchoDouble) -> None:
    home = _active(tmp_path / "home")
    result = run(home, "honcho", "setup", "--base-url", double.url, "--peer-name", "eri",
                 "--yes")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load((home / "config.yaml").read_text())["memory"]["provider"] == "honcho"
    assert run(home, "honcho", "mode", "context").exit_code == 0
    assert run(home, "honcho", "mode", "unified").exit_code == 0
    assert run(home, "honcho", "peer", "--ai", "helper").exit_code == 0
    assert run(home, "honcho", "tokens", "--context", "800", "--dialectic", "900").exit_code == 0
    assert run(home, "honcho", "disable").exit_code == 0
    host = _host(home)
    assert host == {"baseUrl": double.url, "peerName": "eri", "enabled": False,
                    "recallMode": "context", "observationMode": "unified", "aiPeer": "helper",
                    "contextTokens": 800, "dialecticMaxChars": 900}
    assert run(home, "honcho", "enable").exit_code == 0 and _host(home)["enabled"] is True
    bad = run(home, "honcho", "mode", "loud")
    assert bad.exit_code != 0 and "hybrid" in bad.output
    assert run(home, "honcho", "tokens", "--context", "3").exit_code != 0
    assert _host(home)["contextTokens"] == 800
    mapped = run(home, "honcho", "map", "proj-main", "--dir", str(tmp_path))
    assert mapped.exit_code == 0
    sessions = json.loads((home / "honcho.json").read_text())["sessions"]
    assert sessions == {str(tmp_path.resolve()): "proj-main"}


def test_sync_creates_host_blocks_for_every_profile(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for name in ("coder", "writer"):
        (home / "profiles" / name).mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "honcho"}}))
    result = run(home, "honcho", "sync")
    assert result.exit_code == 0, result.output
    hosts = json.loads((home / "honcho.json").read_text())["hosts"]
    assert hosts == {"memoryport": {"aiPeer": "memoryport"},
                     "memoryport.coder": {"aiPeer": "coder"},
                     "memoryport.writer": {"aiPeer": "writer"}}


def test_status_names_an_unreachable_server(tmp_path: Path, double: HonchoDouble) -> None:
    home = _active(tmp_path / "home")
    run(home, "honcho", "setup", "--base-url", double.url, "--api-key", SECRET, "--yes")
    double.fault = "5xx"
    out = run(home, "honcho", "status")
    assert f"UNREACHABLE: honcho at {double.url}" in out.output and SECRET not in out.output
    generic = json.loads(run(home, "status", "--json").output)["provider"]
    assert generic["config"].get("apiKey") in (None, "set") and SECRET not in json.dumps(generic)


def test_the_honcho_setup_wizard_interactively(tmp_path: Path, double: HonchoDouble) -> None:
    home = _active(tmp_path / "home")
    result = run(home, "honcho", "setup", input=f"y\n{double.url}\neri\ntools\n")
    assert result.exit_code == 0, result.output
    assert _host(home) == {"baseUrl": double.url, "peerName": "eri", "recallMode": "tools",
                           "enabled": True}
    result = run(home, "honcho", "setup", input="n\nsecret-from-prompt\n\nhybrid\n")
    assert result.exit_code == 0, result.output
    assert "HONCHO_API_KEY=secret-from-prompt" in (home / ".env").read_text()
    assert "secret-from-prompt" not in result.output
