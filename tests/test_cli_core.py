"""CLI: root options, config, providers, status, doctor and provider command groups."""

from __future__ import annotations

import json
import os
import stat
import warnings
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from fixtures.helpers import install_plugin, isolate
from memoryport.cli import main
from memoryport.config import load_config, resolve_home, write_env


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


# ----------------------------------------------------------------- root options


def test_home_and_profile_options(home: Path, tmp_path: Path) -> None:
    assert run("config", "path").output.strip() == str(home / "config.yaml")
    other = tmp_path / "other"
    assert run("--home", str(other), "config", "path").output.strip() == str(other / "config.yaml")
    out = run("--profile", "work", "config", "path").output.strip()
    assert out == str(home / "profiles" / "work" / "config.yaml")
    assert "MEMORYPORT_PROFILE" not in os.environ  # restored after the command


def test_profile_from_env(home: Path) -> None:
    result = CliRunner().invoke(main, ["config", "path"], env={"MEMORYPORT_PROFILE": "p1"})
    assert result.output.strip() == str(home / "profiles" / "p1" / "config.yaml")


def test_bad_profile_name_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["--profile", "../x", "config", "path"])
    assert result.exit_code == 2
    assert "profile" in result.output


def test_profiles_are_isolated_through_the_cli(home: Path) -> None:
    assert run("--profile", "a", "config", "set", "memory.provider", "mem0").exit_code == 0
    assert run("--profile", "a", "config", "get", "memory.provider").output.strip() == "mem0"
    # the default (issue 12): the bundled fact store
    assert run("--profile", "b", "config", "get", "memory.provider").output.strip() == "holographic"
    assert run("config", "get", "memory.provider").output.strip() == "holographic"


# ----------------------------------------------------------------- config


def test_config_get_set_show(home: Path) -> None:
    assert run("config", "get", "memory.memory_char_limit").output.strip() == "2200"
    result = run("config", "set", "memory.memory_char_limit", "3000")
    assert result.output.strip() == "memory.memory_char_limit = 3000"
    got = json.loads(run("config", "get", "memory.memory_char_limit", "--json").output)
    assert got == {"key": "memory.memory_char_limit", "value": 3000}
    assert "memory_char_limit: 3000" in run("config", "show").output
    shown = json.loads(run("config", "show", "--json").output)
    assert shown["sessions"]["hidden_sources"] == ["tool", "subagent"]
    assert json.loads(run("config", "path", "--json").output)["home"] == str(home)


def test_config_set_errors_are_clean(home: Path) -> None:
    result = CliRunner().invoke(main, ["config", "set", "memory.memory_char_limit", "lots"])
    assert result.exit_code == 1
    assert "Error: memory.memory_char_limit: 'lots' is not valid; expected an integer" in (
        result.output
    )
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["config", "get", "nodot"])
    assert result.exit_code == 1 and "SECTION.KEY" in result.output


def test_config_warns_on_unknown_keys(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("memory:\n  provder: x\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may escape as a Python warning
        result = run("config", "get", "memory.provider")
    assert result.exit_code == 0 and result.stdout.strip() == "holographic"  # the default
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines  # once per command, one clean line
    assert lines[0].startswith("warning: ") and "unknown key 'memory.provder' ignored" in lines[0]
    assert "ConfigWarning" not in result.stderr


def test_doctor_reports_an_unknown_key_once(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("memory:\n  provder: x\n")
    result = CliRunner().invoke(main, ["doctor"])
    assert result.output.count("memory.provder") == 1


# ----------------------------------------------------------------- providers


def test_providers_list_and_show(home: Path) -> None:
    install_plugin(home, "hermes_style")
    install_plugin(home, "broken")
    result = run("providers", "list")
    assert "hermes_style\tuser\t1.2.0" in result.output
    assert "broken" in result.output  # listed from metadata; never imported
    data = json.loads(run("providers", "list", "--json").output)
    names = {p["name"]: p for p in data["providers"]}
    assert names["hermes_style"]["manifest"]["pip_dependencies"] == ["pyyaml"]
    shown = run("providers", "show", "hermes_style")
    assert "config api_key [required, secret]" in shown.output
    assert "external dependency: true-binary" in shown.output
    checked = json.loads(run("providers", "show", "hermes_style", "--check", "--json").output)
    assert checked["loaded"] is True and checked["tools"] == ["note_add"]
    assert checked["available"] is False
    broken = json.loads(run("providers", "show", "broken", "--check", "--json").output)
    assert broken["loaded"] is False and "exploded" in broken["error"]
    missing = CliRunner().invoke(main, ["providers", "show", "nope"])
    assert missing.exit_code == 1 and "not installed" in missing.output


# ----------------------------------------------------------------- status


def test_status_builtin_only(home: Path) -> None:
    memories = home / "memories"
    memories.mkdir(parents=True)
    (home / "config.yaml").write_text('memory:\n  provider: ""\n')  # the fact store off
    (memories / "MEMORY.md").write_text("Project uses tabs\n§\nDeploys on Fridays\n")
    data = json.loads(run("status", "--json").output)
    assert data["provider"] is None
    memory = data["builtin"]["targets"]["memory"]
    assert memory["entries"] == 2 and memory["limit"] == 2200 and memory["used"] > 0
    text = run("status").output
    assert "Provider: none (built-in only)" in text
    assert "memory: 2 entries" in text


def test_status_with_provider_masks_secrets_and_probes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(home, "hermes_style")
    run("config", "set", "memory.provider", "hermes_style")
    run("config", "set", "hermes_style.region", "eu-west")
    missing = json.loads(run("status", "--json").output)["provider"]
    assert missing["available"] is False
    assert missing["missing_env"] == ["HERMES_STYLE_API_KEY"]
    assert missing["config"]["api_key"] == "missing"
    write_env(home, {"HERMES_STYLE_API_KEY": "sk-very-secret"})
    monkeypatch.setenv("HERMES_STYLE_API_KEY", "sk-very-secret")
    result = run("status")
    assert "sk-very-secret" not in result.output
    assert "config api_key: set" in result.output
    assert "config region: eu-west" in result.output
    assert "available: yes" in result.output
    assert "prefetch: calls=1 errors=0" in result.output
    data = json.loads(run("status", "--json").output)["provider"]
    assert data["health"]["hermes_style"]["hooks"]["initialize"]["calls"] == 1
    assert data["config_problems"] == []


def test_status_reports_import_traceback_without_crashing(home: Path) -> None:
    install_plugin(home, "broken")
    run("config", "set", "memory.provider", "broken")
    result = run("status")
    assert result.exit_code == 1  # a provider that fails to import is a failure
    assert "'broken' failed to load" in result.stderr
    assert "load error:" in result.output
    assert "Traceback" in result.output and "exploded at import" in result.output


def test_status_missing_plugin(home: Path) -> None:
    run("config", "set", "memory.provider", "ghost")
    result = run("status", "--json", "--no-probe")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["provider"]["installed"] is False
    assert "plugin: MISSING" in run("status", "--no-probe").output


# ----------------------------------------------------------------- doctor


def test_doctor_healthy_home(home: Path) -> None:
    home.mkdir(mode=0o700, parents=True)
    home.chmod(0o700)
    result = run("doctor")
    assert result.exit_code == 0, result.output
    assert "[ok  ] sqlite fts5" in result.output
    assert "[ok  ] sqlite wal" in result.output
    assert "No problems found." in result.output
    data = json.loads(run("doctor", "--json").output)
    assert data["ok"] is True
    assert [p for p in home.iterdir() if p.name.startswith(".doctor")] == []


def test_doctor_finds_problems_and_exits_nonzero(home: Path) -> None:
    home.mkdir(parents=True)
    home.chmod(0o777)
    write_env(home, {"K": "v"})
    (home / ".env").chmod(0o644)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "ghost"}}))
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1
    assert f"fix: chmod 700 {home}" in result.output
    assert f"fix: chmod 600 {home / '.env'}" in result.output
    assert "'ghost' is selected but not installed" in result.output
    data = json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)
    assert data["ok"] is False


def test_doctor_bad_config_and_state_db(home: Path) -> None:
    import sqlite3

    home.mkdir(mode=0o700, parents=True)
    home.chmod(0o700)
    (home / "config.yaml").write_text("memory:\n  nudge_interval: often\n")
    conn = sqlite3.connect(home / "state.db")
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    conn.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 0)")
    conn.commit()
    conn.close()
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1
    assert "memory.nudge_interval: 'often'" in result.output
    assert "m999_from_the_future" in result.output and "upgrade memoryport" in result.output


# ----------------------------------------------------------------- provider commands


def test_only_the_active_providers_commands_are_shown(home: Path) -> None:
    install_plugin(home, "hermes_style")
    assert "hermes_style" not in run("--help").output
    assert CliRunner().invoke(main, ["hermes_style", "count"]).exit_code == 2
    run("config", "set", "memory.provider", "hermes_style")
    assert "hermes_style" in run("--help").output
    store = home / "hermes_style"
    store.mkdir()
    (store / "notes.json").write_text('["a", "b"]')
    result = run("hermes_style", "count")  # argparse-style Hermes register_cli
    assert result.output.strip() == "count: 2 notes"
    other = resolve_home(profile="other")
    assert "hermes_style" not in run("--profile", "other", "--help").output
    assert load_config(other).memory.provider == "holographic"  # the default, untouched


def test_env_file_written_by_cli_is_private(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(home, "hermes_style")
    run("setup", "hermes_style", "--set", "api_key=abc", "--yes", "--no-install")
    assert stat.S_IMODE((home / ".env").stat().st_mode) == 0o600


def test_config_set_provider_warns_when_not_installed(tmp_path: Path) -> None:
    runner = CliRunner()
    home = tmp_path / "home"
    result = runner.invoke(main, ["--home", str(home), "config", "set", "memory.provider", "nope"])
    assert result.exit_code == 0
    assert "warning: no memory provider named 'nope' is installed yet" in result.output
    assert "memoryport providers list" in result.output
    cleared = runner.invoke(main, ["--home", str(home), "config", "set", "memory.provider", ""])
    assert cleared.exit_code == 0 and "warning" not in cleared.output
