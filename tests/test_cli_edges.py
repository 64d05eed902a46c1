"""CLI edges a new user hits first: .env loading, private home, exit codes, help texts."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from fixtures.helpers import install_plugin, isolate
from memoryport.cli import main
from memoryport.config import ensure_home, write_env


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("HERMES_STYLE_API_KEY", raising=False)
    return isolate(tmp_path, monkeypatch)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ----------------------------------------------------------------- .env (item 1)


def test_a_secret_setup_stored_is_seen_by_status_and_doctor(home: Path) -> None:
    install_plugin(home, "hermes_style")
    result = run("setup", "hermes_style", "--set", "api_key=secret123", "--yes")
    assert result.exit_code == 0, result.output
    assert "not available yet" not in result.output
    assert "available: yes" in run("status", "--no-probe").output
    doctor = run("doctor")
    assert "'hermes_style' is available" in doctor.output and doctor.exit_code == 0
    assert "HERMES_STYLE_API_KEY" not in os.environ  # restored after each command


def test_the_environment_wins_over_dotenv(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(home, "hermes_style")
    run("config", "set", "memory.provider", "hermes_style")
    write_env(home, {"HERMES_STYLE_API_KEY": "from-dotenv"})
    monkeypatch.setenv("HERMES_STYLE_API_KEY", "")  # set (empty) in the environment: wins
    assert "available: no" in run("status", "--no-probe").output
    assert os.environ["HERMES_STYLE_API_KEY"] == ""


def test_profile_dotenv_is_loaded_for_that_profile_only(home: Path) -> None:
    install_plugin(home / "profiles" / "p", "hermes_style")
    run("--profile", "p", "config", "set", "memory.provider", "hermes_style")
    write_env(home / "profiles" / "p", {"HERMES_STYLE_API_KEY": "k"})
    assert "available: yes" in run("--profile", "p", "status", "--no-probe").output
    assert "HERMES_STYLE_API_KEY" not in os.environ


# ----------------------------------------------------------------- private home (item 2)


def test_the_cli_creates_a_private_home(home: Path) -> None:
    assert run("--profile", "work", "config", "set", "memory.nudge_interval", "3").exit_code == 0
    for directory in (home, home / "profiles", home / "profiles" / "work"):
        assert mode(directory) == 0o700, directory
    assert run("memory", "add", "a fact").exit_code == 0
    assert mode(home / "memories") == 0o700
    assert run("sessions", "list").exit_code == 0
    assert mode(home / "state.db") == 0o600
    doctor = run("doctor").output
    assert "readable by others" not in doctor and "writable by others" not in doctor


def test_existing_directories_keep_their_mode(tmp_path: Path) -> None:
    existing = tmp_path / "shared"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    assert ensure_home(existing / "home") == existing / "home"
    assert mode(existing) == 0o755 and mode(existing / "home") == 0o700
    result = run("--home", str(existing), "config", "set", "memory.nudge_interval", "3")
    assert result.exit_code == 0
    assert mode(existing) == 0o755


def test_the_api_creates_a_private_home(tmp_path: Path) -> None:
    import memoryport

    memory = memoryport.open(tmp_path / "new" / "home")
    memory.close()
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new" / "home") == 0o700
    assert mode(tmp_path / "new" / "home" / "state.db") == 0o600


# ----------------------------------------------------------------- exit codes (items 9, 10)


def test_status_exits_1_on_a_config_error(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("memory: {memory_char_limit: lots}\n")
    for args in (("status", "--no-probe"), ("status", "--no-probe", "--json")):
        result = run(*args)
        assert result.exit_code == 1
        assert "memory.memory_char_limit: 'lots' is not valid; expected an integer" in (
            result.stderr
        )


def test_providers_show_check_exits_1_when_the_plugin_fails_to_load(home: Path) -> None:
    install_plugin(home, "broken")
    assert run("providers", "show", "broken").exit_code == 0  # metadata only
    result = run("providers", "show", "broken", "--check")
    assert result.exit_code == 1 and "loaded: no" in result.output
    install_plugin(home, "hermes_style")
    assert run("providers", "show", "hermes_style", "--check").exit_code == 0


def test_chat_without_a_key_on_the_openai_endpoint_says_what_to_set(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"agent": {"api_key_env": "MY_KEY"}}))
    result = run("chat", "-m", "hi")
    assert result.exit_code == 1
    assert "MY_KEY" in result.stderr and "--base-url" in result.stderr
    assert "Traceback" not in result.output


def test_a_custom_base_url_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryport.agent import ChatClient
    from memoryport.errors import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ChatClient("m", base_url="http://127.0.0.1:1/v1")  # local servers ignore the key
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        ChatClient("m")


# ----------------------------------------------------------------- help (item 12)


def test_config_help_lists_full_short_helps() -> None:
    out = run("config", "--help").output
    get_line = next(line for line in out.splitlines() if line.strip().startswith("get"))
    assert "e.g" not in get_line and get_line.rstrip().endswith("setting.")
