"""The ``openviking`` provider through the public API against a loopback double of
OpenViking's HTTP API (``tests/doubles/openviking_server.py``, modelled on the real 0.5.2
server; ``tests/test_provider_openviking_real.py`` runs the real server): tiered recall
in the fence, session-end extraction, tools, modes, users and profiles, setup/status,
faults and a backend restart."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from doubles.base_server import write_home
from doubles.openviking_server import OpenVikingDouble
from memoryport import open as open_memory
from memoryport.api import Memory
from memoryport.cli import main
from memoryport.config import load_config, read_env
from memoryport.providers.openviking import create_openviking_provider
from memoryport.testing import ProviderConformance

KEY = "ov-test-key"
ENV = "OPENVIKING_API_KEY"
FAST = {"retry_attempts": 3, "retry_backoff_s": 0.01, "retry_cooldown_s": 0.0,
        "timeout_s": 0.8}
ROOT = "viking://user/memories/memoryport"


@pytest.fixture(scope="module")
def double() -> Iterator[OpenVikingDouble]:
    with OpenVikingDouble(KEY) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _clean(double: OpenVikingDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "unset")
    monkeypatch.delenv(ENV)  # open() exports .env; undone after each test
    double.fault = None


def _memory(home: Path, double: OpenVikingDouble, user_id: str | None = None, *,
            key: str = KEY, deadline: float = 5.0, **section: Any) -> Memory:
    write_home(home, "openviking", {"endpoint": double.base_url, **FAST, **section},
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


LONG = ("Ana's garden plan is settled. The orchids go on the north windowsill, the basil"
        " in the kitchen, and the lemon tree moves outside in May. " + "Details. " * 60)


def test_recall_is_tiered_and_lands_in_the_fence_only(tmp_path: Path,
                                                      double: OpenVikingDouble) -> None:
    memory = _memory(tmp_path / "home", double, "ana")
    saved = _tool(memory, "viking_remember", content=LONG)
    assert saved["uri"].startswith(f"{ROOT}/default/ana/")
    sent, _ = _turn(memory, "Where do the orchids go in the garden plan?")
    head, _, fence = sent.partition("<memory-context>")
    assert "Ana's garden plan is settled." in fence and saved["uri"] in fence
    assert "north windowsill" not in fence  # only the abstract (L0) is injected
    assert "orchids" not in head.replace("Where do the orchids go", "")
    stored = memory.session_messages(memory.session_id)
    assert not any("<memory-context>" in str(m.get("content")) for m in stored)
    for level, expected in (("abstract", "Ana's garden plan is settled."),
                            ("overview", LONG.strip()[:300]), ("details", LONG.strip())):
        got = _tool(memory, "viking_read", uri=saved["uri"], level=level)
        assert got["content"] == expected
    memory.close()


def test_turns_go_to_a_session_that_is_committed_at_the_end(
        tmp_path: Path, double: OpenVikingDouble) -> None:
    memory = _memory(tmp_path / "home", double, "bo")
    _turn(memory, "I am training for the Lisbon half marathon in March.", "Good luck!")
    sid = next(s for s in double.sessions if s.startswith("memoryport-default-bo-"))
    assert [m["role"] for m in double.sessions[sid]] == ["user", "assistant"]
    assert double.sessions[sid][0]["user"] == "bo"
    memory.close()  # session end: commit, the server extracts memories
    assert double.received("POST", f"/api/v1/sessions/{sid}/commit")
    again = _memory(tmp_path / "home", double, "bo")
    sent, _ = _turn(again, "Which half marathon am I training for?")
    again.close()
    assert "Lisbon half marathon" in sent and "viking://user/bo/memories/" in sent


def test_each_tool_round_trips(tmp_path: Path, double: OpenVikingDouble) -> None:
    memory = _memory(tmp_path / "home", double, "cy")
    saved = _tool(memory, "viking_remember", content="Cy's bike lock code is kept offline.")
    found = _tool(memory, "viking_search", query="bike lock code", limit=3)
    assert found["count"] == 1 and found["results"][0]["uri"] == saved["uri"]
    listing = _tool(memory, "viking_browse")
    assert listing["uri"] == f"{ROOT}/default/cy" and listing["count"] == 1
    added = _tool(memory, "viking_add_resource", url="https://example.org/guide",
                  reason="reference")
    assert added["success"] and double.resources[-1]["path"] == "https://example.org/guide"
    local = _tool(memory, "viking_add_resource", url="/etc/passwd")
    assert local["success"] is False and local["error_type"] == "ToolArgumentError"
    missing = _tool(memory, "viking_read", uri=f"{ROOT}/default/cy/nope.md", level="details")
    assert missing["success"] is False and "HTTP 404" in missing["error"]
    bad = _tool(memory, "viking_read", uri="file:///etc/passwd")
    assert bad["error_type"] == "ToolArgumentError"
    memory.close()


@pytest.mark.parametrize(("mode", "tools", "recall"), [
    ("hybrid", True, True), ("context", False, True), ("tools", True, False)])
def test_modes_show_and_hide_tools_and_recall(tmp_path: Path, double: OpenVikingDouble,
                                              mode: str, tools: bool, recall: bool) -> None:
    memory = _memory(tmp_path / "home", double, f"mode-{mode}", mode=mode)
    names = {s["name"] for s in memory.tool_schemas()}
    assert ({"viking_search", "viking_read", "viking_browse", "viking_remember",
             "viking_add_resource"} <= names) is tools
    turn = memory.begin_turn("remember")
    turn.handle_tool_call("memory", {"action": "add", "target": "user",
                                     "content": "I keep bees on my balcony."})
    memory.end_turn(turn, "ok")
    memory.flush()
    sent, _ = _turn(memory, "What do I keep on my balcony?")
    assert ("bees on my balcony" in sent) is recall
    memory.close()


def test_users_and_profiles_are_scoped(tmp_path: Path, double: OpenVikingDouble) -> None:
    root = tmp_path / "root"
    one = _memory(root / "profiles" / "work", double, "u1")
    assert _tool(one, "viking_remember", content="Project codename is kestrel.")["uri"] \
        .startswith(f"{ROOT}/work/u1/")
    one.close()
    for profile, user in (("home", "u1"), ("work", "u2")):
        other = _memory(root / "profiles" / profile, double, user, capture_turns=False)
        sent, _ = _turn(other, "What is the project codename kestrel?")
        other.close()
        assert "Project codename is kestrel" not in sent


def test_setup_and_status(tmp_path: Path, double: OpenVikingDouble) -> None:
    home = tmp_path / "cli-home"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "setup", "openviking", "--set",
                                  f"api_key={KEY}", "--set", f"endpoint={double.base_url}",
                                  "--set", "recall_limit=3", "--yes"])
    assert result.exit_code == 0, result.output
    assert KEY not in result.output and ENV in result.output
    assert load_config(home).provider_section("openviking")["recall_limit"] == 3
    assert read_env(home)[ENV] == KEY
    status = runner.invoke(main, ["--home", str(home), "status", "--json"])
    assert KEY not in status.output
    data = json.loads(status.output)["provider"]
    assert data["available"] is True and data["config"]["api_key"] == "set"
    assert data["health"]["openviking"]["hooks"]["prefetch"]["errors"] == 0
    bad = runner.invoke(main, ["--home", str(home), "setup", "openviking", "--set",
                               "mode=everything", "--yes"])
    assert bad.exit_code != 0 and "mode" in bad.output
    assert load_config(home).provider_section("openviking")["mode"] == "hybrid"


def test_an_invalid_memory_root_is_a_clear_error(tmp_path: Path) -> None:
    home = write_home(tmp_path / "home", "openviking", {"memory_root": "/tmp/x"})
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--json"])
    assert result.exit_code == 1
    status = json.loads(result.stdout)
    assert "memory_root: '/tmp/x' is not a viking:// directory" in status["provider"]["error"]


@pytest.mark.parametrize("kind", ["slow", "status", "malformed", "drop"])
def test_faults_keep_the_turn_within_the_deadline_and_tools_in_shape(
        tmp_path: Path, double: OpenVikingDouble, kind: str) -> None:
    memory = _memory(tmp_path / "home", double, f"fault-{kind}", deadline=0.5)
    _tool(memory, "viking_remember", content="My locker code is in the blue notebook.")
    with double.faulty(kind, delay=1.2, code=503):
        sent, turn = _turn(memory, "Where is my locker code?")
        assert "blue notebook" not in sent and not turn.contexts
    with double.faulty(kind, delay=1.2, code=503, times=1):
        result = _tool(memory, "viking_search", query="locker")
    assert result["success"] is False and result["backend"] == "openviking"
    assert result["error"].startswith("openviking ")
    memory.close()


def test_a_wrong_key_is_reported_without_the_key(tmp_path: Path, double: OpenVikingDouble,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    memory = _memory(tmp_path / "home", double, "keyless", key="ov-wrong-secret-1234")
    result = _tool(memory, "viking_search", query="anything")
    _turn(memory, "Trying a turn with a wrong key.")
    memory.close()
    assert "HTTP 401" in result["error"] and ENV in result["error"]
    assert "ov-wrong-secret-1234" not in json.dumps(result)
    assert "ov-wrong-secret-1234" not in caplog.text
    assert (tmp_path / "home" / "openviking" / "rejected.jsonl").exists()


def test_no_write_is_lost_across_a_backend_restart(tmp_path: Path,
                                                   double: OpenVikingDouble) -> None:
    memory = _memory(tmp_path / "home", double, "restart")
    texts = [f"Restart fact number {n} about the lighthouse." for n in range(6)]
    _turn(memory, texts[0], "ok")
    double.stop()
    try:
        for text in texts[1:5]:
            _turn(memory, text, "ok")
        outbox = tmp_path / "home" / "openviking" / "outbox.jsonl"
        assert len(outbox.read_text().splitlines()) == 8  # 4 turns, 2 messages each
    finally:
        double.start()
    _turn(memory, texts[5], "ok")
    sid = next(s for s in double.sessions if s.startswith("memoryport-default-restart-"))
    memory.close()
    got = [m["content"] for m in double.sessions[sid] if m["role"] == "user"]
    assert got == texts  # sent 6, received 6, in order


class TestOpenVikingConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _backend(self, double: OpenVikingDouble, home: Path) -> None:
        write_home(home, "openviking", {"endpoint": double.base_url, **FAST}, {ENV: KEY})

    def make_provider(self, home: Path) -> Any:
        return create_openviking_provider(home)


def test_doctor_says_whether_the_server_answers_naming_its_url(tmp_path: Path) -> None:
    """``status()`` asks ``GET /health``; doctor reports the double up, then stopped."""
    server = OpenVikingDouble(KEY)
    with server:
        home = tmp_path / "home"
        write_home(home, "openviking", {"endpoint": server.base_url, **FAST}, {ENV: KEY})
        up = CliRunner().invoke(main, ["--home", str(home), "doctor"])
        assert f"'openviking' reaches {server.base_url}" in up.output, up.output
        assert server.received("GET", "/health")
    down = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert down.exit_code == 1
    assert "'openviking' cannot reach" in down.output and server.base_url in down.output
    assert KEY not in up.output + down.output and "Traceback" not in down.output
