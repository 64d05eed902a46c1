"""The ``mem0`` provider: the real open-source ``mem0.Memory`` offline (local Qdrant under
the home, the built-in ``hash`` embedder, ``infer=False``, telemetry off), and platform mode
through the real ``MemoryClient`` against a loopback double of the Mem0 API's few routes
(the platform is a paid cloud service)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from doubles.mentisdb_server import FaultyServer
from memoryport import open as open_memory
from memoryport.cli import main
from memoryport.errors import ConfigError, ProviderError
from memoryport.providers.mem0 import HashEmbedder, Mem0Provider, create_mem0_provider
from memoryport.providers.mem0.backend import oss_config
from memoryport.providers.mem0.settings import Settings
from memoryport.testing import ProviderConformance

os.environ.setdefault("MEM0_TELEMETRY", "False")
OFFLINE = {"backend": "oss", "embedder": "hash", "infer": False}
SECRET = "m0-secret-key-never-shown-77"


@pytest.fixture(autouse=True)
def _clean_env() -> Iterator[None]:
    yield
    for name in ("MEM0_API_KEY", "MEM0_HOST"):
        os.environ.pop(name, None)  # open() exports <home>/.env into the environment


def _configure(home: Path, **section: Any) -> Path:
    home.mkdir(exist_ok=True)
    config = {"memory": {"provider": "mem0", "nudge_interval": 0},
              "mem0": {**OFFLINE, **section}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


class TestMem0Conforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return create_mem0_provider(_configure(home))


def _stored(home: Path) -> list[dict[str, Any]]:
    """What the local Qdrant holds, read with mem0 itself after the provider closed."""
    from mem0 import Memory

    settings = Settings.resolve(OFFLINE, home)
    memory = Memory.from_config(oss_config(settings, home / "mem0"))
    memory.embedding_model = HashEmbedder(settings.dims)
    try:
        rows = memory.get_all(filters={"user_id": "alice"}, top_k=100)["results"]
        rows += memory.get_all(filters={"user_id": "bob"}, top_k=100)["results"]
        return list(rows)
    finally:
        memory.close()
        memory.vector_store.client.close()


def test_a_full_turn_is_added_with_scoping_and_recalled(tmp_path: Path) -> None:
    home = _configure(tmp_path / "home")
    memory = open_memory(home, user_id="alice", platform="cli")
    memory.end_turn(memory.begin_turn("I prefer Rust over Go for services."), "Rust it is.")
    memory.flush()
    turn = memory.begin_turn("Which language for the new service, Rust or Go?")
    assert "- I prefer Rust over Go for services." in turn.api_user_message()
    session = memory.session_id
    memory.end_turn(turn, "Rust.")
    memory.close()
    memory = open_memory(home, user_id="bob", platform="cli")
    turn = memory.begin_turn("Rust or Go?")
    assert "prefer Rust" not in str(turn.api_user_message())  # alice's, not bob's
    memory.end_turn(turn, "Either.")
    memory.close()
    rows = {(r["memory"], r.get("user_id"), r.get("run_id")) for r in _stored(home)}
    assert ("I prefer Rust over Go for services.", "alice", session) in rows
    assert ("Rust it is.", "alice", session) in rows
    assert {r[1] for r in rows} == {"alice", "bob"}


def test_the_tools_profile_search_and_conclude(tmp_path: Path) -> None:
    memory = open_memory(_configure(tmp_path / "home"), user_id="alice", platform="cli")
    turn = memory.begin_turn("remember this")
    stored = json.loads(turn.handle_tool_call("mem0_conclude",
                                              {"conclusion": "Prefers concise answers"}))
    assert stored == {"success": True, "stored": "Prefers concise answers"}
    found = json.loads(turn.handle_tool_call("mem0_search", {"query": "concise answers"}))
    assert found["results"][0]["memory"] == "Prefers concise answers"
    profile = json.loads(turn.handle_tool_call("mem0_profile", {}))
    assert profile["memories"] == ["Prefers concise answers"] and profile["count"] == 1
    bad = json.loads(turn.handle_tool_call("mem0_search", {"query": " "}))
    assert bad["success"] is False and bad["error_type"] == "ToolArgumentError"
    bad = json.loads(turn.handle_tool_call("mem0_search", {"query": "x", "top_k": 99}))
    assert "1 to 50" in bad["error"]
    memory.end_turn(turn, "ok")
    memory.close()


def test_session_scope_and_context_mode(tmp_path: Path) -> None:
    home = _configure(tmp_path / "home", search_scope="session", mode="context")
    memory = open_memory(home, user_id="alice", platform="cli")
    assert not any(s["function"]["name"].startswith("mem0_") for s in memory.openai_tools())
    memory.end_turn(memory.begin_turn("The staging database is db-7."), "ok")
    memory.flush()
    assert "db-7" in str(memory.begin_turn("which staging database?").api_user_message())
    memory.start_session()  # a new session sees nothing of the old one
    assert "db-7" not in str(memory.begin_turn("which staging database?").api_user_message())
    memory.close()


def test_availability_and_bad_settings_say_what_to_do(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert not create_mem0_provider(_configure(tmp_path / "a", backend="platform")).is_available()
    plain = create_mem0_provider(_configure(tmp_path / "b", embedder="openai"))
    assert not plain.is_available()
    assert "OPENAI_API_KEY" in plain.settings.missing()
    home = _configure(tmp_path / "c", top_k=0)
    with pytest.raises(ConfigError, match="top_k"):
        Mem0Provider().initialize("s", home=str(home))


class Mem0PlatformDouble(FaultyServer):
    """The Mem0 API routes ``MemoryClient`` calls: ping, add, search, list."""

    def __init__(self) -> None:
        super().__init__()
        self.memories: list[dict[str, Any]] = []

    def handle(self, method: str, path: str, query: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/ping/":
            return 200, {"org_id": "o", "project_id": "p", "user_email": "a@example.test"}
        if path == "/v3/memories/add/":
            for message in body["messages"]:
                self.memories.append({"memory": message["content"], **body["filters"]})
            return 200, {"results": [{"event": "ADD"}]}
        wanted = body.get("filters", {})
        mine = [m for m in self.memories if all(m.get(k) == v for k, v in wanted.items())]
        if path == "/v3/memories/search/":
            words = set(body["query"].lower().split())
            hits = [m for m in mine if words & set(m["memory"].lower().split())]
            return 200, {"results": [{**m, "score": 0.9} for m in hits]}
        if path == "/v3/memories/":
            return 200, {"results": mine}
        return 404, {"detail": "no route"}


@pytest.fixture
def platform() -> Iterator[Mem0PlatformDouble]:
    server = Mem0PlatformDouble().start()
    yield server
    server.stop()


def test_platform_mode_sends_filters_and_never_the_key_in_errors(
    tmp_path: Path, platform: Mem0PlatformDouble
) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(main, [
        "--home", str(home), "setup", "mem0", "--set", "backend=platform",
        "--set", f"api_key={SECRET}", "--set", f"host={platform.url}", "--set", "infer=false",
        "--yes", "--no-install"])
    assert result.exit_code == 0, result.output
    assert SECRET not in (home / "config.yaml").read_text()
    assert f"MEM0_API_KEY={SECRET}" in (home / ".env").read_text()
    memory = open_memory(home, user_id="alice", platform="cli")
    memory.end_turn(memory.begin_turn("Deploys happen on Tuesdays."), "Noted.")
    memory.flush()
    add = platform.served("POST", "/v3/memories/add/")[-1]
    assert add.body["filters"] == {"user_id": "alice", "agent_id": "default",
                                   "run_id": memory.session_id}
    assert add.body["infer"] is False and add.headers["authorization"] == f"Token {SECRET}"
    turn = memory.begin_turn("When do deploys happen?")
    assert "Deploys happen on Tuesdays." in turn.api_user_message()
    search = platform.served("POST", "/v3/memories/search/")[-1].body
    assert search["filters"] == {"user_id": "alice"} and "user_id" not in search
    platform.fault = "5xx"
    turn = memory.begin_turn("When do deploys happen?")
    error = memory.health()["mem0"]["hooks"]["prefetch"]["last_error"]
    assert platform.url in error and SECRET not in error
    memory.end_turn(turn, "Tuesdays")
    memory.close()


def test_an_unreachable_platform_is_named_without_the_key(tmp_path: Path,
                                                          platform: Mem0PlatformDouble) -> None:
    platform.fault = "drop"
    home = _configure(tmp_path / "home", backend="platform", host=platform.url)
    os.environ["MEM0_API_KEY"] = SECRET
    provider = create_mem0_provider(home)
    assert provider.is_available()
    with pytest.raises(ProviderError) as caught:
        provider.initialize("s", home=str(home))
    assert platform.url in str(caught.value) and SECRET not in str(caught.value)


def test_setup_interactively_for_offline_use(tmp_path: Path) -> None:
    home = tmp_path / "home"
    answers = ["oss", "", "", "", "", "", "", "false", "3", "", "hash", "", "", "", "", ""]
    result = CliRunner().invoke(main, ["--home", str(home), "setup", "mem0", "--no-install"],
                                input="\n".join(answers) + "\n")
    assert result.exit_code == 0, result.output
    section = yaml.safe_load((home / "config.yaml").read_text())["mem0"]
    assert (section["backend"], section["embedder"], section["infer"]) == ("oss", "hash", False)
    assert section["top_k"] == 3 and "api_key" not in section
    assert create_mem0_provider(home).is_available()


def test_status_shows_availability_and_health(tmp_path: Path) -> None:
    home = _configure(tmp_path / "home")
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--no-probe", "--json"])
    provider = json.loads(result.output)["provider"]
    assert result.exit_code == 0 and provider["available"] is True
    assert provider["config"]["backend"] == "oss" and provider["config_problems"] == []
    memory = open_memory(home, user_id="alice", platform="cli")
    memory.end_turn(memory.begin_turn("health check"), "ok")
    memory.flush()
    hooks = memory.health()["mem0"]["hooks"]
    assert hooks["prefetch"]["errors"] == 0 and hooks["sync_turn"]["calls"] == 1
    memory.close()
    blocked = _configure(tmp_path / "other", backend="platform")
    result = CliRunner().invoke(main, ["--home", str(blocked), "status", "--no-probe",
                                       "--json"])
    assert json.loads(result.output)["provider"]["available"] is False


def test_platform_writes_survive_an_outage_and_a_restart(
    tmp_path: Path, platform: Mem0PlatformDouble
) -> None:
    home = _configure(tmp_path / "home", backend="platform", host=platform.url,
                      retry_base_s=0.0, mode="tools")
    os.environ["MEM0_API_KEY"] = SECRET
    memory = open_memory(home, user_id="alice", platform="cli")
    sent: list[str] = []

    def turn(n: int) -> None:
        memory.end_turn(memory.begin_turn(f"fact {n} about billing"), f"ack {n}")
        sent.extend([f"fact {n} about billing", f"ack {n}"])

    turn(1)
    memory.flush()
    platform.stop()
    turn(2)
    turn(3)
    memory.flush()
    error = memory.health()["mem0"]["hooks"]["sync_turn"]["last_error"]
    assert platform.url in error and SECRET not in error
    platform.start()
    turn(4)
    memory.flush()
    memory.close()
    assert [m["memory"] for m in platform.memories] == sent  # 8 sent, 8 received, in order


def test_curated_writes_are_mirrored_and_agent_scope_filters(tmp_path: Path) -> None:
    home = _configure(tmp_path / "home", search_scope="agent", agent_id="planner")
    memory = open_memory(home, user_id="alice", platform="cli")
    turn = memory.begin_turn("note this")
    assert json.loads(memory.call_tool("memory", {"action": "add", "target": "user",
                                                  "content": "Allergic to peanuts"}))["success"]
    memory.flush()
    found = json.loads(turn.handle_tool_call("mem0_search", {"query": "peanuts allergic"}))
    assert found["results"][0]["memory"] == "Allergic to peanuts"
    memory.end_turn(turn, "ok")
    memory.close()
    rows = [r for r in _stored(home) if r["memory"] == "Allergic to peanuts"]
    assert rows[0]["agent_id"] == "planner" and rows[0]["metadata"]["source"] == "curated"
