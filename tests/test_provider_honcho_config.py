"""Honcho settings as seed 03 defines them: files, host blocks, the per-key order
(host block > root > env > default), every default and clamp, the session-name chain,
pass levels, and the text helpers (chunking, budget, bail-out). No server involved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryport.errors import ConfigError
from memoryport.providers.honcho import HonchoConfig, create_honcho_provider
from memoryport.providers.honcho.text import (
    CONTINUED,
    chunk,
    session_name,
    strong_signal,
    truncate_to_budget,
)
from memoryport.types import SessionContext


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user_home = tmp_path / "user-home"
    monkeypatch.setenv("HOME", str(user_home))
    for name in ("HONCHO_API_KEY", "HONCHO_BASE_URL", "HONCHO_ENVIRONMENT",
                 "MEMORYPORT_HONCHO_HOST", "HERMES_HONCHO_HOST"):
        monkeypatch.delenv(name, raising=False)
    return user_home


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_defaults_match_the_seed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = HonchoConfig.load(home)
    assert (config.host, config.workspace, config.ai_peer) == ("memoryport",) * 3
    assert not config.enabled and config.environment == "production"
    assert (config.recall_mode, config.observation_mode, config.write_frequency) == (
        "hybrid", "directional", "async")
    assert config.save_messages and config.session_strategy == "per-directory"
    assert (config.dialectic_depth, config.dialectic_reasoning_level,
            config.dialectic_dynamic) == (1, "low", True)
    assert (config.dialectic_max_chars, config.dialectic_max_input_chars,
            config.message_max_chars) == (600, 10_000, 25_000)
    assert (config.context_cadence, config.dialectic_cadence, config.context_tokens) == (
        1, 3, None)
    assert config.injection_frequency == "every-turn" and config.reasoning_level_cap == ""
    assert all(all(side.values()) for side in config.observation.values())
    assert not create_honcho_provider(home).is_available()  # not enabled: no key, no URL


def test_host_block_beats_root_beats_env_beats_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _write(home / "honcho.json", {"workspace": "root-ws", "recallMode": "tools",
                                  "hosts": {"memoryport": {"recallMode": "context"}}})
    monkeypatch.setenv("HONCHO_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("HONCHO_API_KEY", "env-key")
    config = HonchoConfig.load(home)
    assert config.recall_mode == "context"  # host block
    assert config.workspace == "root-ws"  # root
    assert config.base_url == "http://127.0.0.1:9" and config.api_key == "env-key"  # env
    assert config.enabled  # auto: a key or URL is present
    assert config.dialectic_depth == 1  # default
    (home / ".env").write_text("HONCHO_API_KEY=dotenv-key\n")
    monkeypatch.delenv("HONCHO_API_KEY")
    assert HonchoConfig.load(home).api_key == "dotenv-key"  # <home>/.env counts as env


def test_file_priority_and_profile_host_keys(tmp_path: Path, _isolated: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    coder = root / "profiles" / "coder"
    coder.mkdir(parents=True)
    _write(_isolated / ".honcho" / "config.json", {"workspace": "global"})
    assert HonchoConfig.load(coder).workspace == "global"
    _write(root / "honcho.json", {"workspace": "shared", "hosts": {
        "memoryport.coder": {"aiPeer": "coder"}, "memoryport": {"aiPeer": "main"}}})
    config = HonchoConfig.load(coder)
    assert (config.host, config.workspace, config.ai_peer) == (
        "memoryport.coder", "shared", "coder")
    assert HonchoConfig.load(root).ai_peer == "main"
    _write(coder / "honcho.json", {"workspace": "own"})
    assert HonchoConfig.load(coder).workspace == "own"
    monkeypatch.setenv("MEMORYPORT_HONCHO_HOST", "memoryport")
    assert HonchoConfig.load(root).host == "memoryport"


@pytest.mark.parametrize(("raw", "field", "expected"), [
    ({"dialecticDepth": 7}, "dialectic_depth", 3),
    ({"dialecticDepth": 0}, "dialectic_depth", 1),
    ({"contextCadence": 0}, "context_cadence", 1),
    ({"messageMaxChars": 90000}, "message_max_chars", 25_000),  # cloud limit
    ({"messageMaxChars": 90000, "baseUrl": "http://localhost:8000"}, "message_max_chars",
     90_000),  # self-hosted: no cloud clamp
    ({"dialecticMaxInputChars": 50000}, "dialectic_max_input_chars", 10_000),
    ({"recallMode": "auto"}, "recall_mode", "hybrid"),  # legacy name
    ({"writeFrequency": 4}, "write_frequency", 4),
    ({"writeFrequency": "5"}, "write_frequency", 5),
    ({"writeFrequency": "session"}, "write_frequency", "session"),
    ({"contextTokens": 0}, "context_tokens", None),
    ({"contextTokens": 10}, "context_tokens", 50),
    ({"enabled": False, "apiKey": "k"}, "enabled", False),
])
def test_clamps_and_aliases(tmp_path: Path, raw: dict[str, Any], field: str,
                            expected: Any) -> None:
    home = tmp_path / "home"
    _write(home / "honcho.json", raw)
    assert getattr(HonchoConfig.load(home), field) == expected


def test_bad_values_are_all_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write(home / "honcho.json", {"recallMode": "loud", "writeFrequency": "hourly",
                                  "dialecticDepthLevels": ["low", "huge"],
                                  "saveMessages": "maybe", "apiKey": "k"})
    with pytest.raises(ConfigError) as caught:
        HonchoConfig.load(home)
    message = str(caught.value)
    for key in ("recallMode", "writeFrequency", "dialecticDepthLevels", "saveMessages"):
        assert key in message
    provider = create_honcho_provider(home)  # still constructible; initialize says why
    with pytest.raises(ConfigError, match="recallMode"):
        provider.initialize("s", home=str(home))
    (home / "honcho.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not readable JSON"):
        HonchoConfig.load(home)


def test_observation_presets_and_granular_override(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write(home / "honcho.json", {"observationMode": "unified"})
    assert HonchoConfig.load(home).observation == {
        "user": {"observeMe": True, "observeOthers": False},
        "ai": {"observeMe": False, "observeOthers": True}}
    _write(home / "honcho.json", {"observation": {"user": {"observeOthers": False}}})
    observation = HonchoConfig.load(home).observation
    assert observation["user"] == {"observeMe": True, "observeOthers": False}
    assert observation["ai"] == {"observeMe": True, "observeOthers": True}


def test_session_name_chain(tmp_path: Path) -> None:
    repo = tmp_path / "myrepo"
    sub = repo / "src"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    base = HonchoConfig(workspace="ws")

    def name(config: HonchoConfig, **ctx: Any) -> str:
        context = SessionContext(agent_workspace=str(ctx.pop("cwd", sub)), **ctx)
        return session_name(config, context, "eri")

    mapped = HonchoConfig(workspace="ws", sessions={str(sub.resolve()): "my-main"})
    assert name(mapped, session_title="t", session_id="s1") == "my-main"  # 1 map
    assert name(base, session_title="refactor auth", gateway_session_key="g") == \
        "refactor-auth"  # 2 title
    assert name(base, gateway_session_key="agent-main-telegram-dm-1") == \
        "agent-main-telegram-dm-1"  # 3 gateway
    assert name(HonchoConfig(session_strategy="per-session"), session_id="20260415_a3f2") \
        == "20260415_a3f2"  # 4
    assert name(HonchoConfig(session_strategy="per-repo")) == "myrepo"  # 5
    assert name(HonchoConfig(session_strategy="per-repo"), cwd=tmp_path) == \
        tmp_path.name  # not a repo: per-directory
    assert name(base) == "src"  # 6 per-directory
    assert name(HonchoConfig(session_strategy="global", workspace="ws")) == "ws"  # 7
    assert name(HonchoConfig(session_peer_prefix=True)) == "eri-src"


def test_pass_levels_are_proportional_explicit_and_capped() -> None:
    assert HonchoConfig(dialectic_depth=2, dialectic_reasoning_level="high").pass_levels() \
        == ["minimal", "high"]
    assert HonchoConfig(dialectic_depth=3, dialectic_depth_levels=("low", "max"),
                        reasoning_level_cap="high").pass_levels() == ["low", "high", "low"]


def test_chunking_budget_and_bail_out() -> None:
    text = " ".join(f"w{i}" for i in range(300))
    pieces = chunk(text, 120)
    assert all(len(p) <= 120 for p in pieces)
    assert pieces[0].endswith(CONTINUED) and pieces[-1].startswith(CONTINUED)
    rebuilt = " ".join(p.replace(CONTINUED, "").strip() for p in pieces)
    assert rebuilt.split() == text.split()
    assert chunk("short", 120) == ["short"]
    cut = truncate_to_budget("alpha beta gamma delta " * 20, 10)
    assert len(cut) <= 42 and cut.endswith("…") and " gam …" not in cut
    assert strong_signal("x" * 301) and not strong_signal("x" * 250)
    assert strong_signal("Facts:\n- writes Rust daily at work on billing\n- prefers short answers"
                         " always and wants the code first\n")


def test_a_hermes_written_file_keeps_its_workspace(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    _write(home / "honcho.json", {"apiKey": "k", "hosts": {
        "hermes": {"aiPeer": "hermes", "recallMode": "tools"}}})
    config = HonchoConfig.load(home)
    assert (config.host, config.workspace, config.ai_peer, config.recall_mode) == (
        "hermes", "hermes", "hermes", "tools")
    _write(home / "honcho.json", {"hosts": {"hermes": {}, "memoryport": {"aiPeer": "mp"}}})
    assert HonchoConfig.load(home).host == "memoryport"  # our own block wins
    monkeypatch.setenv("HERMES_HONCHO_HOST", "hermes.coder")
    assert HonchoConfig.load(home).host == "hermes.coder"
