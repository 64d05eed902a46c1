"""The ``honcho`` provider through the real ``honcho-ai`` SDK against a loopback Honcho
double (tests/doubles/honcho_server.py): conformance, full turns through
``memoryport.Memory``, the two injection layers and their cadences, the dialectic passes,
the five tools, recall modes, chunking, sanitising, and per-profile clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from doubles.honcho_server import HonchoDouble
from memoryport import open as open_memory
from memoryport.providers.honcho import create_honcho_provider
from memoryport.providers.honcho.text import COLD_PROMPT, WARM_PROMPT
from memoryport.testing import ProviderConformance


@pytest.fixture
def double() -> Iterator[HonchoDouble]:
    server = HonchoDouble().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated_home_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))  # no real ~/.honcho
    monkeypatch.delenv("HONCHO_API_KEY", raising=False)
    monkeypatch.delenv("MEMORYPORT_HONCHO_HOST", raising=False)


def configure(home: Path, url: str, host: dict[str, Any] | None = None,
              **root: Any) -> Path:
    """A home using Honcho at ``url`` (root keys + the ``memoryport`` host block)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": "honcho", "nudge_interval": 0}}))
    data = {"baseUrl": url, "workspace": "ws", "peerName": "alice",
            "sessionStrategy": "global", "dialecticCadence": 1, **root,
            "hosts": {"memoryport": {"aiPeer": "mp", **(host or {})}}}
    (home / "honcho.json").write_text(json.dumps(data))
    return home


@pytest.fixture(scope="module")
def shared_double() -> Iterator[HonchoDouble]:
    server = HonchoDouble().start()
    yield server
    server.stop()


class TestHonchoConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _server(self, shared_double: HonchoDouble) -> None:
        self.url = shared_double.url

    def make_provider(self, home: Path) -> Any:
        return create_honcho_provider(configure(home, self.url))


def test_a_full_turn_reaches_honcho_and_both_layers_come_back(
    tmp_path: Path, double: HonchoDouble
) -> None:
    memory = open_memory(configure(tmp_path / "home", double.url), platform="cli")
    first = memory.begin_turn("I'm Alice; I write Rust and prefer short answers.")
    assert double.chats[0]["query"] == COLD_PROMPT  # nothing known yet: cold prompt
    memory.end_turn(first, "Hi Alice, noted.")
    memory.flush()
    stored = [(m["peer_id"], m["content"]) for m in double.messages[("ws", "ws")]]
    assert stored == [("alice", "I'm Alice; I write Rust and prefer short answers."),
                      ("mp", "Hi Alice, noted.")]
    assert double.session_peers[("ws", "ws")]["alice"] == {"observe_me": True,
                                                          "observe_others": True}
    turn = memory.begin_turn("Which language do I write?")
    text = str(turn.api_user_message())
    for section in ("## Session summary", "## User representation", "## Dialectic"):
        assert section in text
    assert "I write Rust" in text
    assert double.chats[-1]["query"].startswith(WARM_PROMPT)
    assert double.chats[-1]["target"] == "alice" and double.chats[-1]["peer"] == "mp"
    memory.end_turn(turn, "Rust.")
    memory.close()


def _turns(memory: Any, n: int) -> None:
    for i in range(n):
        memory.end_turn(memory.begin_turn(f"message number {i} about Rust"), f"ok {i}")
        memory.flush()


def test_cadences_space_the_base_and_dialectic_calls(tmp_path: Path,
                                                     double: HonchoDouble) -> None:
    home = configure(tmp_path / "home", double.url, contextCadence=2, dialecticCadence=3)
    memory = open_memory(home, platform="cli")
    _turns(memory, 6)
    memory.close()
    contexts = [r for r in double.requests if r.path.endswith("/sessions/ws/context")]
    # prepared for turns 1 (the warm-up) to 7 (after turn 6): base for turns 1, 3, 5, 7
    # (every 2), dialectic for turns 1, 4, 7 (every 3)
    assert len(contexts) == 4
    assert len(double.chats) == 3


@pytest.mark.parametrize(("depth", "levels", "expected"), [
    (1, None, ["low"]),
    (2, None, ["minimal", "low"]),
    (3, None, ["minimal", "low", "low"]),
    (3, ["low", "medium", "high"], ["low", "medium", "medium"]),  # capped at medium
])
def test_dialectic_passes_and_levels(tmp_path: Path, double: HonchoDouble, depth: int,
                                     levels: list[str] | None, expected: list[str]) -> None:
    root: dict[str, Any] = {"dialecticDepth": depth}
    if levels:
        root.update(dialecticDepthLevels=levels, reasoningLevelCap="medium")
    memory = open_memory(configure(tmp_path / "home", double.url, **root), platform="cli")
    memory.end_turn(memory.begin_turn("short"), "ok")  # pass 0 answers are short: no bail
    memory.flush()
    double.chats.clear()
    memory.end_turn(memory.begin_turn("again"), "ok")
    memory.flush()
    memory.close()
    assert [c["reasoning_level"] for c in double.chats] == expected


def test_a_strong_first_answer_bails_out_early(tmp_path: Path, double: HonchoDouble) -> None:
    memory = open_memory(configure(tmp_path / "home", double.url, dialecticDepth=3),
                         platform="cli")
    long_text = "I maintain the billing service " + "and its Rust workers " * 20
    memory.end_turn(memory.begin_turn(long_text), "ok")
    memory.flush()
    double.chats.clear()
    memory.end_turn(memory.begin_turn("billing Rust workers"), "ok")
    memory.flush()
    memory.close()
    assert len(double.chats) == 1  # > 300 chars: the audit and reconcile passes are skipped


def test_first_turn_injection_and_context_budget(tmp_path: Path, double: HonchoDouble) -> None:
    home = configure(tmp_path / "home", double.url, injectionFrequency="first-turn",
                     contextTokens=60)
    memory = open_memory(home, platform="cli")
    _turns(memory, 1)
    memory.close()
    memory = open_memory(home, platform="cli")
    first = memory.begin_turn("Rust again")
    block = str(first.api_user_message())
    assert "## Session summary" in block
    injected = block.split("<memory-context>")[1]
    assert len(injected) < 60 * 4 + 400  # the system note and fence are extra
    memory.end_turn(first, "ok")
    second = memory.begin_turn("Rust again")
    assert "<memory-context>" not in str(second.api_user_message())
    memory.end_turn(second, "ok")
    memory.close()


def test_the_five_tools_with_peer(tmp_path: Path, double: HonchoDouble) -> None:
    memory = open_memory(configure(tmp_path / "home", double.url), platform="cli")
    names = {s["function"]["name"] for s in memory.openai_tools()}
    assert {"honcho_profile", "honcho_search", "honcho_context", "honcho_reasoning",
            "honcho_conclude"} <= names
    _turns(memory, 1)
    turn = memory.begin_turn("tools")

    def call(name: str, **args: Any) -> dict[str, Any]:
        return dict(json.loads(turn.handle_tool_call(name, args)))

    assert call("honcho_conclude", conclusion="Prefers tea")["stored"] == "Prefers tea"
    assert double.conclusions["ws"][-1]["observed_id"] == "alice"
    assert call("honcho_conclude", conclusion="I am terse", peer="ai")["peer"] == "ai"
    assert double.conclusions["ws"][-1]["observed_id"] == "mp"
    double.cards[("ws", "alice", "alice")] = ["Name: Alice"]
    assert call("honcho_profile")["card"] == ["Name: Alice"]
    found = call("honcho_search", query="tea", max_tokens=5000)
    assert "Prefers tea" in found["result"] and found["max_tokens"] == 2000
    ctx = call("honcho_context")
    assert ctx["messages"][0]["peer"] == "alice" and ctx["summary"]
    answer = call("honcho_reasoning", query="What does Alice drink?", reasoning_level="high")
    assert answer["reasoning_level"] == "high" and "tea" in answer["answer"]
    bad = call("honcho_search", query="x", peer="bob")
    assert bad["success"] is False and "'user' or 'ai'" in bad["error"]
    assert call("honcho_conclude")["error_type"] == "ToolArgumentError"
    memory.end_turn(turn, "ok")
    memory.close()


def test_dynamic_reasoning_off_keeps_the_configured_level(tmp_path: Path,
                                                          double: HonchoDouble) -> None:
    home = configure(tmp_path / "home", double.url, dialecticDynamic=False,
                     dialecticReasoningLevel="medium")
    provider = create_honcho_provider(home)
    provider.initialize("s", home=str(home))
    out = json.loads(provider.handle_tool_call("honcho_reasoning",
                                               {"query": "x", "reasoning_level": "max"}))
    assert out["reasoning_level"] == "medium"
    provider.shutdown()


@pytest.mark.parametrize(("mode", "tools", "injected"), [
    ("hybrid", True, True), ("context", False, True), ("tools", True, False)])
def test_recall_mode_decides_tools_and_injection(tmp_path: Path, double: HonchoDouble,
                                                 mode: str, tools: bool,
                                                 injected: bool) -> None:
    home = configure(tmp_path / "home", double.url, {"recallMode": mode})
    memory = open_memory(home, platform="cli")
    _turns(memory, 1)
    names = {s["function"]["name"] for s in memory.openai_tools()}
    assert ("honcho_search" in names) is tools
    turn = memory.begin_turn("Rust")
    assert ("## Session summary" in str(turn.api_user_message())) is injected
    memory.end_turn(turn, "ok")
    memory.close()


def test_long_messages_are_chunked_and_leaked_context_is_stripped(
    tmp_path: Path, double: HonchoDouble
) -> None:
    home = configure(tmp_path / "home", double.url, messageMaxChars=200)
    memory = open_memory(home, platform="cli")
    leaked = ("<memory-context>\n[System note: The following is recalled memory context,"
              " NOT new user input.]\nsecret recall\n</memory-context>\n")
    memory.begin_turn("hello")  # starts the session: providers are initialized
    provider = memory.providers[-1]
    assert provider.name == "honcho"
    provider.sync_turn(leaked + "word " * 100, "short answer")  # as a Hermes host calls it
    memory.flush()
    memory.close()
    sent = [m["content"] for m in double.messages[("ws", "ws")]]
    assert all(len(s) <= 200 for s in sent) and len(sent) >= 4
    assert sent[0].endswith("[continued]") and sent[1].startswith("[continued]")
    assert not any("secret recall" in s or "memory-context" in s for s in sent)
    assert sent[-1] == "short answer"


def test_save_messages_off_sends_nothing(tmp_path: Path, double: HonchoDouble) -> None:
    memory = open_memory(configure(tmp_path / "home", double.url, saveMessages=False),
                         platform="cli")
    _turns(memory, 2)
    memory.close()
    assert double.served("POST", "/v3/workspaces/ws/sessions/ws/messages") == []


def test_write_frequency_session_and_every_n(tmp_path: Path, double: HonchoDouble) -> None:
    memory = open_memory(configure(tmp_path / "a", double.url, writeFrequency="session"),
                         platform="cli")
    _turns(memory, 3)
    assert ("ws", "ws") not in double.messages  # batched until the session ends
    memory.close()
    assert len(double.messages[("ws", "ws")]) == 6
    double.messages.clear()
    double.requests.clear()
    memory = open_memory(configure(tmp_path / "b", double.url, writeFrequency=2),
                         platform="cli")
    _turns(memory, 3)
    assert len(double.served("POST", "/v3/workspaces/ws/sessions/ws/messages")) == 2
    memory.close()
    assert len(double.messages[("ws", "ws")]) == 6


def test_each_profile_writes_to_its_own_workspace(tmp_path: Path, double: HonchoDouble) -> None:
    root = tmp_path / "root"
    configure(root, double.url)
    data = json.loads((root / "honcho.json").read_text())
    data["hosts"]["memoryport.coder"] = {"workspace": "coder-ws", "aiPeer": "coder"}
    (root / "honcho.json").write_text(json.dumps(data))
    coder_home = root / "profiles" / "coder"
    coder_home.mkdir(parents=True)
    (coder_home / "config.yaml").write_text((root / "config.yaml").read_text())
    main = open_memory(root, platform="cli")
    coder = open_memory(coder_home, platform="cli")
    main.end_turn(main.begin_turn("main profile message"), "ok")
    coder.end_turn(coder.begin_turn("coder profile message"), "ok")
    main.close()
    coder.close()
    assert [m["content"] for m in double.messages[("ws", "ws")]] == [
        "main profile message", "ok"]
    assert [(m["peer_id"], m["content"]) for m in double.messages[("coder-ws", "coder-ws")]
            ] == [("alice", "coder profile message"), ("coder", "ok")]


def test_users_get_their_own_peer(tmp_path: Path, double: HonchoDouble) -> None:
    home = configure(tmp_path / "home", double.url, peerName=None)
    for user in ("ann", "bob"):
        memory = open_memory(home, user_id=user, platform="api")
        memory.end_turn(memory.begin_turn(f"I am {user}"), "hi")
        memory.close()
    assert {m["peer_id"] for m in double.messages[("ws", "ws")]} == {"ann", "bob", "mp"}


def test_a_curated_user_fact_becomes_a_conclusion(tmp_path: Path, double: HonchoDouble) -> None:
    memory = open_memory(configure(tmp_path / "home", double.url), platform="cli")
    memory.begin_turn("hello")
    result = memory.call_tool("memory", {"action": "add", "target": "user",
                                         "content": "Works night shifts"})
    assert json.loads(result)["success"]
    memory.flush()
    memory.close()
    assert [(c["observer_id"], c["observed_id"], c["content"])
            for c in double.conclusions["ws"]] == [("mp", "alice", "Works night shifts")]


def test_tools_follow_the_live_session_after_a_switch(tmp_path: Path,
                                                      double: HonchoDouble) -> None:
    home = configure(tmp_path / "home", double.url, sessionStrategy="per-session")
    memory = open_memory(home, platform="cli")
    memory.end_turn(memory.begin_turn("first session"), "ok")
    first = memory.session_id
    memory.start_session()  # a new memoryport session: a new Honcho session
    turn = memory.begin_turn("second session")
    out = json.loads(turn.handle_tool_call("honcho_context", {}))
    assert out["session"] == memory.session_id != first
    memory.end_turn(turn, "ok")
    memory.close()
    assert {s for (_, s) in double.messages} == {first, memory.session_id}
