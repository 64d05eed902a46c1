"""The ``byterover`` provider through the public API, running a ``brv`` executable as a
subprocess: the local stand-in ``tests/doubles/brv`` (the real CLI needs the ByteRover
cloud to start its daemon), whose interface is checked against the real byterover-cli
3.14.0 from ``make node-deps``. Recall in the fence, pre-compression curation, tools,
modes, per-user projects, setup/status, faults and a "backend" outage."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from doubles.base_server import write_home
from memoryport import open as open_memory
from memoryport.api import Memory
from memoryport.cli import main
from memoryport.config import load_config
from memoryport.providers.byterover import create_byterover_provider
from memoryport.testing import ProviderConformance

STAND_IN = Path(__file__).parent / "doubles" / "brv"
REAL_BRV = Path(__file__).parent / "node" / "node_modules" / ".bin" / "brv"
FAST = {"brv_path": str(STAND_IN), "retry_attempts": 3, "retry_backoff_s": 0.01,
        "retry_cooldown_s": 0.0, "timeout_s": 3.0, "curate_timeout_s": 3.0}


@pytest.fixture(autouse=True)
def control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in's control directory (calls.jsonl, fault)."""
    folder = tmp_path / "brv-control"
    monkeypatch.setenv("BRV_STANDIN_DIR", str(folder))
    monkeypatch.setenv("BRV_API_KEY", "unset")
    monkeypatch.delenv("BRV_API_KEY")
    return folder


def _calls(control: Path, command: str | None = None) -> list[dict[str, Any]]:
    path = control / "calls.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [r for r in rows if command is None or r["argv"][:1] == [command]]


def _memory(home: Path, user_id: str | None = None, *, deadline: float = 5.0,
            env: dict[str, str] | None = None, **section: Any) -> Memory:
    write_home(home, "byterover", {**FAST, **section}, env, prefetch_deadline_s=deadline)
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


def _compress(memory: Memory, messages: list[dict[str, Any]]) -> None:
    memory.compress(messages, lambda msgs, context: "summary")


def test_curated_insights_are_recalled_in_the_fence_only(tmp_path: Path,
                                                         control: Path) -> None:
    home = tmp_path / "home"
    memory = _memory(home, "ana")
    saved = _tool(memory, "brv_curate", content="Deploys run from the release branch via"
                  " GitHub Actions; staging first.")
    assert saved["success"] and saved["status"] == "completed"
    tree = home / "byterover" / "ana" / ".brv" / "context-tree"
    assert "release branch" in next(p.read_text() for p in tree.rglob("*.md"))
    sent, _ = _turn(memory, "How do deploys run for the release branch?")
    head, _, fence = sent.partition("<memory-context>")
    assert "Deploys run from the release branch" in fence and "GitHub Actions" not in head
    search = _calls(control, "search")[-1]
    assert search["argv"][-2:] == ["--format", "json"] and search["cwd"].endswith("/ana")
    stored = memory.session_messages(memory.session_id)
    assert not any("<memory-context>" in str(m.get("content")) for m in stored)
    memory.close()


def test_insights_are_saved_before_compression(tmp_path: Path, control: Path) -> None:
    memory = _memory(tmp_path / "home", "bo")
    _turn(memory, "Let's settle it: the API uses cursor pagination, never offsets.")
    assert _calls(control, "curate") == []  # turns are not curated by default
    _compress(memory, [
        {"role": "user", "content": "We decided the API uses cursor pagination."},
        {"role": "assistant", "content": "Agreed: cursors, never offsets."},
        {"role": "tool", "content": "ignored tool output"}])
    curate = _calls(control, "curate")[-1]["argv"][1]
    assert curate.startswith("Conversation insights before compression:")
    assert "cursor pagination" in curate and "ignored tool output" not in curate
    sent, _ = _turn(memory, "Which pagination does the API use?")
    assert "cursor pagination" in sent
    memory.close()


def test_each_tool_round_trips(tmp_path: Path, control: Path) -> None:
    memory = _memory(tmp_path / "home", "cy", env={"BRV_API_KEY": "brv-secret-123"})
    status = _tool(memory, "brv_status")
    assert status["success"] and status["cliVersion"] == "3.14.0"
    _tool(memory, "brv_curate", content="The on-call rotation changes every Monday at 10:00.")
    answer = _tool(memory, "brv_query", query="When does the on-call rotation change?")
    assert answer["status"] == "completed" and "every Monday" in answer["result"]
    assert _tool(memory, "brv_status")["entries"] == 1
    bad = _tool(memory, "brv_curate", content=" ")
    assert bad["success"] is False and bad["error_type"] == "ToolArgumentError"
    assert all(c["api_key_set"] for c in _calls(control))  # the cloud key reaches brv
    memory.close()


@pytest.mark.parametrize(("mode", "tools", "recall"), [
    ("hybrid", True, True), ("context", False, True), ("tools", True, False)])
def test_modes_show_and_hide_tools_and_recall(tmp_path: Path, control: Path, mode: str,
                                              tools: bool, recall: bool) -> None:
    memory = _memory(tmp_path / "home", "dee", mode=mode, curate_turns=True)
    names = {s["name"] for s in memory.tool_schemas()}
    assert ({"brv_query", "brv_curate", "brv_status"} <= names) is tools
    _turn(memory, "I keep bees on my balcony.")
    sent, _ = _turn(memory, "What do I keep on my balcony?")
    assert ("bees on my balcony" in sent) is recall
    assert bool(_calls(control, "search")) is recall
    memory.close()


def test_query_recall_method_and_per_user_projects(tmp_path: Path, control: Path) -> None:
    home = tmp_path / "home"
    one = _memory(home, "u1", recall_method="query")
    _tool(one, "brv_curate", content="Project codename is kestrel.")
    sent, _ = _turn(one, "What is the project codename?")
    one.close()
    assert "kestrel" in sent and _calls(control, "query")
    other = _memory(home, "u2")
    sent, _ = _turn(other, "What is the project codename?")
    other.close()
    assert "kestrel" not in sent
    assert (home / "byterover" / "u1").is_dir() and (home / "byterover" / "u2").is_dir()


def test_setup_and_status(tmp_path: Path, control: Path) -> None:
    home = tmp_path / "cli-home"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "setup", "byterover", "--set",
                                  f"brv_path={STAND_IN}", "--set", "api_key=brv-cloud-key",
                                  "--set", "recall_limit=3", "--yes"])
    assert result.exit_code == 0, result.output
    assert "brv-cloud-key" not in result.output and "BRV_API_KEY" in result.output
    assert load_config(home).provider_section("byterover")["recall_limit"] == 3
    status = runner.invoke(main, ["--home", str(home), "status", "--json"])
    assert "brv-cloud-key" not in status.output
    data = json.loads(status.output)["provider"]
    assert data["available"] is True and data["config"]["api_key"] == "set"
    assert data["health"]["byterover"]["hooks"]["prefetch"]["errors"] == 0
    missing = runner.invoke(main, ["--home", str(home), "setup", "byterover", "--set",
                                   "brv_path=/nonexistent/brv", "--yes"])
    assert "npm install -g byterover-cli" in missing.output
    again = json.loads(runner.invoke(main, ["--home", str(home), "status", "--json"]).output)
    assert again["provider"]["available"] is False


@pytest.mark.parametrize("fault", ["slow:1.5", "fail", "garbage", "crash"])
def test_faults_keep_the_turn_within_the_deadline_and_tools_in_shape(
        tmp_path: Path, control: Path, fault: str) -> None:
    memory = _memory(tmp_path / "home", "eve", deadline=0.5, timeout_s=1.0)
    _tool(memory, "brv_curate", content="My locker code is in the blue notebook.")
    (control / "fault").write_text(fault)
    sent, turn = _turn(memory, "Where is my locker code?")
    assert "blue notebook" not in sent and not turn.contexts
    result = _tool(memory, "brv_status")
    assert result["success"] is False and result["backend"] == "byterover"
    assert result["error"].startswith("byterover: brv status")
    memory.close()


def test_no_curate_is_lost_while_brv_is_down(tmp_path: Path, control: Path) -> None:
    memory = _memory(tmp_path / "home", "fay", env={"BRV_API_KEY": "brv-secret-456"},
                     retry_attempts=1)
    texts = [f"Insight number {n} about the lighthouse keeper." for n in range(6)]
    turn = memory.begin_turn("remember")
    for text in texts[:1]:
        turn.handle_tool_call("memory", {"action": "add", "target": "memory", "content": text})
    memory.end_turn(turn, "ok")
    memory.flush()
    (control / "fault").write_text("down")
    turn = memory.begin_turn("remember more")
    for text in texts[1:5]:
        turn.handle_tool_call("memory", {"action": "add", "target": "memory", "content": text})
    memory.end_turn(turn, "ok")
    memory.flush()
    outbox = tmp_path / "home" / "byterover" / "outbox.jsonl"
    assert len(outbox.read_text().splitlines()) == 4
    assert "brv-secret-456" not in outbox.read_text()
    (control / "fault").unlink()
    turn = memory.begin_turn("and one more")
    turn.handle_tool_call("memory", {"action": "add", "target": "memory", "content": texts[5]})
    memory.end_turn(turn, "ok")
    memory.close()
    tree = tmp_path / "home" / "byterover" / "fay" / ".brv" / "context-tree"
    stored = sorted(p.read_text().split("\n", 2)[-1].strip() for p in tree.rglob("*.md"))
    assert stored == sorted(texts)  # sent 6, received 6


def test_the_stand_in_matches_the_real_cli(tmp_path: Path) -> None:
    """The commands, arguments and flags the provider uses exist in the real
    byterover-cli 3.14.0 (installed by ``make node-deps``): its oclif manifest declares
    them, and the real ``brv --version`` runs offline."""
    assert REAL_BRV.exists(), "run `make node-deps` (installs byterover-cli into tests/node)"
    env = {**os.environ, "HOME": str(tmp_path), "NO_UPDATE_NOTIFIER": "1",
           "PATH": "/usr/bin:/bin"}
    version = subprocess.run([str(REAL_BRV), "--version"], capture_output=True, text=True,
                             timeout=120, env=env, cwd=tmp_path, check=True).stdout
    assert "byterover-cli/3.14.0" in version
    stand_in = subprocess.run([str(STAND_IN), "--version"], capture_output=True, text=True,
                              timeout=10, check=True).stdout
    assert stand_in.startswith("byterover-cli/3.14.0")
    package = REAL_BRV.resolve().parents[1]
    manifest = json.loads((package / "oclif.manifest.json").read_text(encoding="utf-8"))
    for command, args, flags in (("status", [], ["format"]),
                                 ("curate", ["context"], ["format", "detach", "timeout"]),
                                 ("query", ["query"], ["format", "timeout"]),
                                 ("search", ["query"], ["format", "limit"])):
        declared = manifest["commands"][command]
        assert list(declared.get("args") or {}) == args, command
        assert set(flags) <= set(declared["flags"]), f"brv {command}: {declared['flags']}"
        assert declared["flags"]["format"]["options"] == ["text", "json"]


class TestByteRoverConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _backend(self, home: Path) -> None:
        write_home(home, "byterover", FAST)

    def make_provider(self, home: Path) -> Any:
        return create_byterover_provider(home)


def test_doctor_says_whether_brv_answers_naming_the_executable(tmp_path: Path,
                                                                control: Path) -> None:
    """``status()`` runs ``brv status``; doctor reports it answering, then failing the way
    the real CLI does when the ByteRover servers are unreachable (the stand-in's ``down``)."""
    home = tmp_path / "home"
    write_home(home, "byterover", FAST, {"BRV_API_KEY": "brv-doctor-secret"})
    up = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert f"'byterover' reaches {STAND_IN}" in up.output, up.output
    assert _calls(control, "status")
    (control / "fault").write_text("down")
    down = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert down.exit_code == 1
    assert "'byterover' cannot reach" in down.output and str(STAND_IN) in down.output
    assert "Unable to connect to ByteRover servers" in down.output
    assert "brv-doctor-secret" not in up.output + down.output and "Traceback" not in down.output
