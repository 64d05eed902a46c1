"""The ``supermemory`` provider through the public API and the real ``supermemory`` SDK,
against a loopback double built from the SDK's own models
(``tests/doubles/supermemory_server.py``; Supermemory is a cloud service): turns, recall in
the fence, recalled memory stripped from captures, tools and containers, modes, session
ingest, setup/status, faults and a backend restart."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from doubles.base_server import write_home
from doubles.supermemory_server import SupermemoryDouble
from memoryport import open as open_memory
from memoryport.api import Memory
from memoryport.cli import main
from memoryport.config import load_config, read_env
from memoryport.providers.supermemory import create_supermemory_provider, strip_recalled
from memoryport.testing import ProviderConformance

KEY = "sm-test-key"
ENV = "SUPERMEMORY_API_KEY"
FAST = {"retry_attempts": 3, "retry_backoff_s": 0.01, "retry_cooldown_s": 0.0,
        "timeout_s": 0.8}


@pytest.fixture(scope="module")
def double() -> Iterator[SupermemoryDouble]:
    with SupermemoryDouble(KEY) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _clean(double: SupermemoryDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "unset")
    monkeypatch.delenv(ENV)  # open() exports .env; undone after each test
    double.fault = None


def _memory(home: Path, double: SupermemoryDouble, user_id: str | None = None, *,
            key: str = KEY, deadline: float = 5.0, **section: Any) -> Memory:
    write_home(home, "supermemory", {"base_url": double.base_url, **FAST, **section},
               {ENV: key}, prefetch_deadline_s=deadline)
    memory = open_memory(home, None, user_id, platform="cli")
    memory.start_session()
    return memory


def _turn(memory: Memory, text: str, reply: str = "Noted.") -> tuple[str, Any]:
    turn = memory.begin_turn(text)
    sent = turn.api_user_message()
    memory.end_turn(turn, reply)
    memory.flush()
    return str(sent), turn


def _tool(memory: Memory, name: str, **args: Any) -> dict[str, Any]:
    return json.loads(memory.call_tool(name, args))  # type: ignore[no-any-return]


def _docs(double: SupermemoryDouble, ns: str) -> list[dict[str, Any]]:
    return [r.body for r in double.received("POST", f"/ns/{ns}/document")]


def test_a_turn_reaches_supermemory_and_recall_lands_in_the_fence_only(
        tmp_path: Path, double: SupermemoryDouble) -> None:
    memory = _memory(tmp_path / "home", double, "ana", entity_context="Ana, a botanist")
    _turn(memory, "I prefer oolong tea and I grow orchids at home.")
    doc = _docs(double, "memoryport-default_ana")[-1]
    assert doc["content"].startswith("user: I prefer oolong tea")
    assert doc["metadata"]["kind"] == "turn" and doc["supportingContext"] == "Ana, a botanist"
    sent, _ = _turn(memory, "Which tea do I like with my orchids?")
    head, _, fence = sent.partition("<memory-context>")
    assert "I prefer oolong tea" in fence and "oolong" not in head
    assert "Profile:" in fence  # profile facts come with the recall
    stored = memory.session_messages(memory.session_id)
    assert not any("<memory-context>" in str(m.get("content")) for m in stored)
    memory.close()


def test_recalled_memory_is_stripped_from_captured_turns(tmp_path: Path,
                                                         double: SupermemoryDouble) -> None:
    memory = _memory(tmp_path / "home", double, "echo", include_profile=False)
    _turn(memory, "My bicycle is a green Dutch omafiets from 1998.")
    reply = ("You told me: user: My bicycle is a green Dutch omafiets from 1998.\n"
             "<memory-context>leaked block</memory-context>\nIt sounds lovely.")
    _turn(memory, "Tell me about my bicycle please", reply)
    captured = _docs(double, "memoryport-default_echo")[-1]["content"]
    assert "omafiets" not in captured and "leaked block" not in captured
    assert "It sounds lovely." in captured and "Tell me about my bicycle" in captured
    assert strip_recalled("a <memory-context>x</memory-context> b", "") == "a  b"
    memory.close()


def test_each_tool_round_trips_with_custom_containers(tmp_path: Path,
                                                      double: SupermemoryDouble) -> None:
    memory = _memory(tmp_path / "home", double, "bo", custom_containers="work,health")
    schema = next(s for s in memory.tool_schemas() if s["name"] == "supermemory_store")
    assert schema["parameters"]["properties"]["container"]["enum"] == ["work", "health"]
    saved = _tool(memory, "supermemory_store", content="Standup is at 9:30 on weekdays",
                  container="work")
    assert saved["success"] and saved["status"] == "queued", saved
    assert _docs(double, "memoryport-default_bo__work")[-1]["content"].startswith("Standup")
    found = _tool(memory, "supermemory_search", query="standup weekdays", container="work")
    assert found["count"] == 1 and "9:30" in found["results"][0]["memory"]
    assert _tool(memory, "supermemory_search", query="standup weekdays")["count"] == 0
    _tool(memory, "supermemory_store", content="Bo prefers aisle seats")
    profile = _tool(memory, "supermemory_profile")["profile"]
    assert [f["memory"] for f in profile["static"]] == ["Bo prefers aisle seats"]
    gone = _tool(memory, "supermemory_forget", id=found["results"][0]["id"], container="work")
    assert gone["count"] == 1
    assert _tool(memory, "supermemory_forget", query="aisle seats")["count"] == 1
    assert _tool(memory, "supermemory_profile")["profile"]["static"] == []
    bad = _tool(memory, "supermemory_store", content="x", container="secret")
    assert bad["success"] is False and "work, health" in bad["error"]
    assert _tool(memory, "supermemory_forget")["error_type"] == "ToolArgumentError"
    memory.close()


@pytest.mark.parametrize(("section", "tools", "recall"), [
    ({}, True, True), ({"tools": False}, False, True), ({"auto_recall": False}, True, False)])
def test_switches_show_and_hide_tools_and_recall(tmp_path: Path, double: SupermemoryDouble,
                                                 section: dict[str, Any], tools: bool,
                                                 recall: bool) -> None:
    user = f"mode-{len(section)}-{tools}-{recall}"
    memory = _memory(tmp_path / "home", double, user, **section)
    names = {s["name"] for s in memory.tool_schemas()}
    assert ({"supermemory_store", "supermemory_search", "supermemory_forget",
             "supermemory_profile"} <= names) is tools
    _turn(memory, "I keep bees on my balcony.")
    sent, _ = _turn(memory, "What do I keep on my balcony?")
    assert ("bees on my balcony" in sent) is recall
    memory.close()


def test_capture_mode_user_and_session_ingest(tmp_path: Path,
                                              double: SupermemoryDouble) -> None:
    memory = _memory(tmp_path / "home", double, "cap", capture_mode="user")
    _turn(memory, "Remember that the wifi password is on the fridge.", "Got it, fridge.")
    session = memory.session_id
    memory.close()
    docs = _docs(double, "memoryport-default_cap")
    assert "assistant:" not in docs[0]["content"]
    ingest = docs[-1]
    assert ingest["id"] == f"session-{session}" and ingest["metadata"]["kind"] == "session"
    assert "wifi password" in ingest["content"] and "Got it" not in ingest["content"]

    off = _memory(tmp_path / "off", double, "nocap", auto_capture=False)
    _turn(off, "This must not be captured.")
    off.close()
    assert _docs(double, "memoryport-default_nocap") == []


def test_users_and_profiles_are_scoped(tmp_path: Path, double: SupermemoryDouble) -> None:
    root = tmp_path / "root"
    one = _memory(root / "profiles" / "work", double, "u1")
    _turn(one, "Project codename is kestrel.")
    one.close()
    assert _docs(double, "memoryport-work_u1")
    for profile, user in (("home", "u1"), ("work", "u2")):
        other = _memory(root / "profiles" / profile, double, user)
        sent, _ = _turn(other, "What is the project codename?")
        other.close()
        assert "kestrel" not in sent


def test_setup_and_status(tmp_path: Path, double: SupermemoryDouble) -> None:
    home = tmp_path / "cli-home"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "setup", "supermemory", "--set",
                                  f"api_key={KEY}", "--set", f"base_url={double.base_url}",
                                  "--set", "search_mode=hybrid", "--set",
                                  "max_recall_results=8", "--yes"])
    assert result.exit_code == 0, result.output
    assert KEY not in result.output and ENV in result.output
    section = load_config(home).provider_section("supermemory")
    assert section["search_mode"] == "hybrid" and section["max_recall_results"] == 8
    assert read_env(home)[ENV] == KEY
    status = runner.invoke(main, ["--home", str(home), "status", "--json"])
    assert KEY not in status.output
    data = json.loads(status.output)["provider"]
    assert data["available"] is True and data["config"]["api_key"] == "set"
    assert data["health"]["supermemory"]["hooks"]["prefetch"]["errors"] == 0
    bad = runner.invoke(main, ["--home", str(home), "setup", "supermemory", "--set",
                               "search_mode=fuzzy", "--yes"])
    assert bad.exit_code != 0 and "search_mode" in bad.output


@pytest.mark.parametrize("kind", ["slow", "status", "malformed", "drop"])
def test_faults_keep_the_turn_within_the_deadline_and_tools_in_shape(
        tmp_path: Path, double: SupermemoryDouble, kind: str) -> None:
    memory = _memory(tmp_path / "home", double, f"fault-{kind}", deadline=0.5)
    _turn(memory, "My locker code is in the blue notebook.")
    with double.faulty(kind, delay=1.2, code=503):
        sent, turn = _turn(memory, "Where is my locker code?")
        assert "blue notebook" not in sent and not turn.contexts
    with double.faulty(kind, delay=1.2, code=503, times=1):
        result = _tool(memory, "supermemory_search", query="locker")
    assert result["success"] is False and result["backend"] == "supermemory"
    assert result["error"].startswith("supermemory ")
    memory.close()


def test_a_wrong_key_is_reported_without_the_key(tmp_path: Path, double: SupermemoryDouble,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    memory = _memory(tmp_path / "home", double, "keyless", key="sm-wrong-secret-1234")
    result = _tool(memory, "supermemory_search", query="anything")
    _turn(memory, "Trying a turn with a wrong key.")
    memory.close()
    assert "HTTP 401" in result["error"] and ENV in result["error"]
    assert "sm-wrong-secret-1234" not in json.dumps(result)
    assert "sm-wrong-secret-1234" not in caplog.text
    assert (tmp_path / "home" / "supermemory" / "rejected.jsonl").exists()


def test_no_write_is_lost_across_a_backend_restart(tmp_path: Path,
                                                   double: SupermemoryDouble) -> None:
    memory = _memory(tmp_path / "home", double, "restart", capture_mode="user")
    texts = [f"Restart fact number {n} about the lighthouse." for n in range(6)]
    _turn(memory, texts[0])
    double.stop()
    try:
        for text in texts[1:5]:
            _turn(memory, text)
        outbox = tmp_path / "home" / "supermemory" / "outbox.jsonl"
        assert len(outbox.read_text().splitlines()) == 4
    finally:
        double.start()
    _turn(memory, texts[5])
    turns = [d["content"] for d in _docs(double, "memoryport-default_restart")
             if d["metadata"]["kind"] == "turn"]
    memory.close()
    assert turns == [f"user: {t}" for t in texts]  # sent 6, received 6, in order


class TestSupermemoryConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _backend(self, double: SupermemoryDouble, home: Path) -> None:
        write_home(home, "supermemory", {"base_url": double.base_url, **FAST}, {ENV: KEY})

    def make_provider(self, home: Path) -> Any:
        return create_supermemory_provider(home)


def test_doctor_says_whether_the_api_answers_naming_its_url(tmp_path: Path) -> None:
    """``status()`` lists one namespace (``GET /ns``, answered here from the SDK's model)."""
    from supermemory.types.namespace_list import NamespaceList

    server = SupermemoryDouble(KEY)
    server.route("GET", "/ns", lambda _r: NamespaceList.model_validate({
        "namespaces": [], "pagination": {"currentPage": 1, "totalItems": 0, "totalPages": 0}},
    ).dict(by_alias=True))
    with server:
        home = tmp_path / "home"
        write_home(home, "supermemory", {"base_url": server.base_url, **FAST}, {ENV: KEY})
        up = CliRunner().invoke(main, ["--home", str(home), "doctor"])
        assert f"'supermemory' reaches {server.base_url}" in up.output, up.output
    down = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert down.exit_code == 1
    assert "'supermemory' cannot reach" in down.output and server.base_url in down.output
    assert KEY not in up.output + down.output and "Traceback" not in down.output
