"""Hermes plugins unmodified (issue 10): a malformed plugin.yaml, a user folder wrapping an
installed entry point of the same name, tools registered through ``ctx.register_tool``,
and every keyword Hermes passes to ``initialize``; through the public API and the CLI."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from fake_openai import FakeOpenAI, Reply
from fixtures.helpers import PLUGIN_FIXTURES, install_plugin, isolate
from memoryport.api import open_memory
from memoryport.cli import main
from memoryport.plugins import discover, load
from memoryport.plugins.hermes_compat import SHIM_NAMES


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def activate(home: Path, name: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": name}}))


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


# ----------------------------------------------------------------- malformed plugin.yaml


def test_plugin_yaml_with_an_unquoted_colon_warns_and_loads(home: Path) -> None:
    install_plugin(home, "ctx_tools")
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load((home / "plugins" / "ctx_tools" / "plugin.yaml").read_text())
    code, out, err = invoke("providers", "list", "--json")
    assert code == 0, err
    data = json.loads(out)
    row = next(p for p in data["providers"] if p["name"] == "ctx_tools")
    assert row["source"] == "user"
    assert row["version"] == "0.4.0"
    assert row["description"].startswith("Notes: kept in a JSON file")
    assert any("not valid YAML" in p and "ctx_tools" in p for p in data["problems"])
    code, out, err = invoke("providers", "show", "ctx_tools", "--check")
    assert code == 0, out + err
    assert "loaded: yes" in out


# ----------------------------------------------------------------- ctx.register_tool


def test_tools_registered_through_ctx_reach_the_model_and_work(home: Path) -> None:
    install_plugin(home, "ctx_tools")
    activate(home, "ctx_tools")
    memory = open_memory(platform="cli")
    try:
        memory.start_session()
        names = {s["name"] for s in memory.tool_schemas()}
        assert {"note_add", "note_find"} <= names
        assert "note_hidden" not in names  # its check_fn says no, as in Hermes
        added = json.loads(memory.call_tool("note_add", {"text": "Ada uses helix"}))
        assert added == {"added": "Ada uses helix", "task": memory.session_id}
        found = json.loads(memory.call_tool("note_find", {"query": "helix"}))
        assert found == {"found": ["Ada uses helix"]}
    finally:
        memory.close()
    assert json.loads((home / "ctx_tools.json").read_text()) == ["Ada uses helix"]
    code, out, _ = invoke("providers", "show", "ctx_tools", "--check", "--json")
    assert code == 0
    assert set(json.loads(out)["tools"]) == {"note_add", "note_find"}


def test_ctx_tool_routing_keeps_the_provider_class(home: Path) -> None:
    install_plugin(home, "ctx_tools")
    result = load("ctx_tools", home)
    assert result.ok, result.traceback
    provider = result.provider
    assert type(provider).__name__ == "CtxToolsProvider"
    from memoryport.provider import MemoryProvider

    assert isinstance(provider, MemoryProvider)
    assert any("register_hook" in w for w in result.warnings)
    assert not any("register_tool" in w for w in result.warnings)


# ----------------------------------------------------------------- folder wraps entry point


@pytest.fixture
def installed_wrapped_mem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``wrapped_mem`` installed as pip lays it out: package + dist-info with entry point."""
    site = tmp_path / "site"
    shutil.copytree(PLUGIN_FIXTURES / "_packages" / "wrapped_mem", site / "wrapped_mem")
    info = site / "wrapped_mem-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: wrapped-mem\nVersion: 1.0.0\nSummary: test package\n"
    )
    (info / "entry_points.txt").write_text(
        "[hermes_agent.memory_providers]\nwrapped = wrapped_mem:register\n"
    )
    (info / "RECORD").write_text(
        "wrapped_mem/__init__.py,,\nwrapped_mem/plugin.yaml,,\n"
        "wrapped_mem-1.0.0.dist-info/METADATA,,\n"
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        yield site
    finally:
        for name in [m for m in sys.modules if m.startswith("wrapped_mem")]:
            del sys.modules[name]


def test_user_folder_wrapping_an_entry_point_wins_and_works(
    home: Path, installed_wrapped_mem: Path
) -> None:
    found = discover(home)
    assert found.providers["wrapped"].source == "hermes_entry_point"  # no folder yet
    install_plugin(home, "wrapped")
    activate(home, "wrapped")
    code, out, err = invoke("providers", "list", "--json")
    assert code == 0, err
    data = json.loads(out)
    row = next(p for p in data["providers"] if p["name"] == "wrapped")
    assert row["source"] == "user" and row["version"] == "2.0.0"
    assert any("'wrapped'" in p and "shadowed" in p for p in data["problems"])  # reported
    memory = open_memory(platform="cli")
    try:
        memory.start_session()
        for name in SHIM_NAMES:
            assert name not in sys.modules
        # the wrapped package imports tools.registry lazily, inside handle_tool_call
        result = json.loads(memory.call_tool("wrapped_remember", {"fact": "Ada likes tea"}))
        assert result == {"label": "configured-by-folder", "facts": ["Ada likes tea"]}
        turn = memory.begin_turn("does Ada like tea?")
        assert any("Ada likes tea" in text for _, text in turn.contexts)
        memory.end_turn(turn, "Yes.")
    finally:
        memory.close()


# ----------------------------------------------------------------- initialize keywords


def test_initialize_gets_every_keyword_hermes_passes(home: Path) -> None:
    profile_home = home / "profiles" / "work"
    install_plugin(profile_home, "strict_kwargs")
    activate(profile_home, "strict_kwargs")
    memory = open_memory(profile="work", platform="api")
    try:
        memory.provider_kwargs["user_name"] = "Ada"
        memory.start_session()
        assert "strict_kwargs" in {getattr(p, "name", "") for p in memory.providers}
    finally:
        memory.close()
    seen = json.loads((profile_home / "strict_kwargs.json").read_text())
    assert seen == {
        "agent_identity": "work",
        "agent_workspace": "hermes",
        "user_id_alt": "",
        "user_name": "Ada",
        "chat_name": "",
        "warning_callback": False,
        "status_callback": False,
    }


def test_chat_passes_the_cli_callbacks(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(home, "strict_kwargs")
    monkeypatch.setenv("FAKE_KEY", "k")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAI([Reply(content="hello")]) as server:
        config = {
            "memory": {"provider": "strict_kwargs"},
            "agent": {"model": "m", "base_url": server.base_url, "api_key_env": "FAKE_KEY"},
        }
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(yaml.safe_dump(config))
        code, out, err = invoke("chat", "-m", "hi")
    assert code == 0, out + err
    seen = json.loads((home / "strict_kwargs.json").read_text())
    assert seen["agent_identity"] == "default"
    assert seen["warning_callback"] is True and seen["status_callback"] is True
    assert "warning: warning_callback from strict_kwargs" in err
    assert "status_callback from strict_kwargs" in err
