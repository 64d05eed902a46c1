"""The ``retaindb`` provider through the public API against a loopback RetainDB double
(``tests/doubles/retaindb_server.py``; RetainDB is a cloud service): turns, recall in the
fence, tools, modes, delta context, setup/status, faults and a backend restart."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from doubles.base_server import write_home
from doubles.retaindb_server import RetainDBDouble
from memoryport import open as open_memory
from memoryport.api import Memory
from memoryport.cli import main
from memoryport.config import load_config, read_env
from memoryport.providers.retaindb import create_retaindb_provider
from memoryport.testing import ProviderConformance

KEY = "rdb-test-key"
FAST = {"retry_attempts": 3, "retry_backoff_s": 0.01, "retry_cooldown_s": 0.0,
        "timeout_s": 0.8}


@pytest.fixture(scope="module")
def double() -> Iterator[RetainDBDouble]:
    with RetainDBDouble(KEY) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _clean(double: RetainDBDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETAINDB_API_KEY", "unset")
    monkeypatch.delenv("RETAINDB_API_KEY")  # open() exports .env; undone after each test
    double.fault = None


def _memory(home: Path, double: RetainDBDouble, user_id: str | None = None, *,
            key: str = KEY, deadline: float = 5.0, **section: Any) -> Memory:
    write_home(home, "retaindb", {"base_url": double.base_url, **FAST, **section},
               {"RETAINDB_API_KEY": key}, prefetch_deadline_s=deadline)
    return open_memory(home, None, user_id, platform="cli")


def _turn(memory: Memory, text: str, reply: str = "Noted.") -> tuple[str, Any]:
    turn = memory.begin_turn(text)
    sent = turn.api_user_message()
    memory.end_turn(turn, reply)
    memory.flush()
    return str(sent), turn


def _tool(memory: Memory, name: str, **args: Any) -> dict[str, Any]:
    turn = memory.begin_turn(f"run {name}")
    result = json.loads(turn.handle_tool_call(name, args))
    memory.end_turn(turn, "done")
    memory.flush()
    return result  # type: ignore[no-any-return]


def test_a_turn_reaches_retaindb_and_recall_lands_in_the_fence_only(
        tmp_path: Path, double: RetainDBDouble) -> None:
    memory = _memory(tmp_path / "home", double, "ana")
    _turn(memory, "My favourite editor is Helix and I write Rust daily.")
    ingest = double.received("POST", "/v1/memory/ingest/session")[-1].body
    assert ingest["user_id"] == "ana" and ingest["project"] == "memoryport-default"
    assert [m["role"] for m in ingest["messages"]] == ["user", "assistant"]  # this turn only
    sent, _ = _turn(memory, "Which editor do I like for Rust?")
    assert "<memory-context>" in sent and "favourite editor is Helix" in sent
    fence = sent[sent.index("<memory-context>"):]
    assert "Helix" in fence and "Helix" not in sent[: sent.index("<memory-context>")]
    stored = memory.session_messages(memory.session_id)
    assert not any("<memory-context>" in str(m.get("content")) for m in stored)
    second = double.received("POST", "/v1/memory/ingest/session")[-1].body
    assert "memory-context" not in json.dumps(second)  # the fence is never captured
    memory.close()


def test_each_tool_round_trips(tmp_path: Path, double: RetainDBDouble) -> None:
    memory = _memory(tmp_path / "home", double, "bo")
    saved = _tool(memory, "retaindb_remember", content="Bo prefers green tea in the morning",
                  memory_type="preference", importance=0.9)
    assert saved["success"] and saved["memory"]["memory_type"] == "preference"
    found = _tool(memory, "retaindb_search", query="green tea morning", top_k=3)
    assert [r["id"] for r in found["results"]] == [saved["id"]]
    assert "green tea" in _tool(memory, "retaindb_context", query="what tea")["context"]
    profile = _tool(memory, "retaindb_profile")["profile"]["memories"]
    assert any("green tea" in m["content"] for m in profile)
    assert _tool(memory, "retaindb_forget", memory_id=saved["id"])["success"]
    assert _tool(memory, "retaindb_search", query="green tea morning")["results"] == []
    bad = _tool(memory, "retaindb_remember", content="x", memory_type="gossip")
    assert bad["success"] is False and bad["error_type"] == "ToolArgumentError"
    gone = _tool(memory, "retaindb_forget", memory_id="mem_missing")
    assert gone["success"] is False and gone["backend"] == "retaindb"
    assert "retaindb answered HTTP 404" in gone["error"]
    memory.close()


@pytest.mark.parametrize(("mode", "tools", "recall"), [
    ("hybrid", True, True), ("context", False, True), ("tools", True, False)])
def test_modes_show_and_hide_tools_and_recall(tmp_path: Path, double: RetainDBDouble,
                                              mode: str, tools: bool, recall: bool) -> None:
    memory = _memory(tmp_path / "home", double, f"mode-{mode}", mode=mode)
    names = {s["name"] for s in memory.tool_schemas()}
    assert ("retaindb_search" in names) is tools
    assert ({"retaindb_profile", "retaindb_search", "retaindb_context", "retaindb_remember",
             "retaindb_forget"} <= names) is tools
    _turn(memory, "I keep bees on my balcony.")
    before = len(double.received("POST", "/v1/context/query"))
    sent, _ = _turn(memory, "What do I keep on my balcony?")
    assert (len(double.received("POST", "/v1/context/query")) > before) is recall
    assert ("bees on my balcony" in sent) is recall
    memory.close()


def test_unchanged_context_is_not_sent_again(tmp_path: Path, double: RetainDBDouble) -> None:
    memory = _memory(tmp_path / "home", double, "delta")
    _turn(memory, "The staging database is called heron.")
    first, _ = _turn(memory, "What is the staging database called?")
    again, _ = _turn(memory, "What is the staging database called?")
    asks = double.received("POST", "/v1/context/query")[-2:]
    assert "previous_context_hash" in asks[1].body
    assert "heron" in first and "heron" in again  # the cached text is injected again
    memory.close()


def test_users_and_profiles_are_scoped(tmp_path: Path, double: RetainDBDouble) -> None:
    root = tmp_path / "root"
    one = _memory(root / "profiles" / "work", double, "u1")
    _turn(one, "Project codename is kestrel.")
    one.close()
    other = _memory(root / "profiles" / "home", double, "u1")
    sent, _ = _turn(other, "What is the project codename?")
    other.close()
    assert "kestrel" not in sent
    body = double.received("POST", "/v1/memory/ingest/session")[-2].body
    assert body["project"] == "memoryport-work"
    third = _memory(root / "profiles" / "work", double, "u2")
    sent, _ = _turn(third, "What is the project codename?")
    third.close()
    assert "kestrel" not in sent  # another user of the same profile


def test_curated_writes_are_mirrored_as_typed_memories(tmp_path: Path,
                                                       double: RetainDBDouble) -> None:
    memory = _memory(tmp_path / "home", double, "mirror")
    turn = memory.begin_turn("remember this")
    turn.handle_tool_call("memory", {"action": "add", "target": "user",
                                     "content": "Likes window seats on trains"})
    memory.end_turn(turn, "ok")
    memory.flush()
    body = double.received("POST", "/v1/memory")[-1].body
    assert body["memory_type"] == "preference" and body["user_id"] == "mirror"
    memory.close()


def test_setup_and_status(tmp_path: Path, double: RetainDBDouble) -> None:
    home = tmp_path / "cli-home"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "setup", "retaindb", "--set",
                                  f"api_key={KEY}", "--set", f"base_url={double.base_url}",
                                  "--set", "mode=context", "--set", "top_k=7", "--yes"])
    assert result.exit_code == 0, result.output
    assert KEY not in result.output and "RETAINDB_API_KEY" in result.output
    section = load_config(home).provider_section("retaindb")
    assert section["mode"] == "context" and section["top_k"] == 7
    assert read_env(home)["RETAINDB_API_KEY"] == KEY
    status = runner.invoke(main, ["--home", str(home), "status", "--json"])
    assert KEY not in status.output
    data = json.loads(status.output)["provider"]
    assert data["available"] is True and data["config"]["api_key"] == "set"
    assert data["health"]["retaindb"]["hooks"]["prefetch"]["errors"] == 0
    bad = runner.invoke(main, ["--home", str(home), "setup", "retaindb", "--set", "top_k=99",
                               "--yes"])
    assert bad.exit_code != 0 and "top_k" in bad.output
    assert load_config(home).provider_section("retaindb")["top_k"] == 7  # unchanged


def test_status_reports_an_unreachable_backend(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_home(home, "retaindb", {"base_url": "http://127.0.0.1:9", "timeout_s": 0.5},
               {"RETAINDB_API_KEY": "sk-secret-value"})
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--json"])
    assert "sk-secret-value" not in result.output
    prefetch = json.loads(result.output)["provider"]["health"]["retaindb"]["hooks"]["prefetch"]
    assert prefetch["errors"] == 1 and "retaindb is unreachable" in prefetch["last_error"]


@pytest.mark.parametrize("kind", ["slow", "status", "malformed", "drop"])
def test_faults_keep_the_turn_within_the_deadline_and_tools_in_shape(
        tmp_path: Path, double: RetainDBDouble, kind: str) -> None:
    memory = _memory(tmp_path / "home", double, f"fault-{kind}", deadline=0.5)
    _turn(memory, "My locker code is in the blue notebook.")
    with double.faulty(kind, delay=1.2 if kind == "slow" else 0.0, code=503):
        sent, turn = _turn(memory, "Where is my locker code?")
        assert "blue notebook" not in sent and not turn.contexts
    with double.faulty(kind, delay=1.2 if kind == "slow" else 0.0, code=503, times=1):
        result = json.loads(memory.call_tool("retaindb_search", {"query": "locker"}))
    assert result["success"] is False and result["backend"] == "retaindb"
    assert result["error"].startswith("retaindb ")
    memory.close()


def test_a_wrong_key_is_reported_without_the_key(tmp_path: Path, double: RetainDBDouble,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    memory = _memory(tmp_path / "home", double, "keyless", key="sk-wrong-secret-1234")
    result = _tool(memory, "retaindb_search", query="anything")
    _turn(memory, "Trying a turn with a wrong key.")
    memory.close()
    assert "HTTP 401" in result["error"] and "RETAINDB_API_KEY" in result["error"]
    assert "sk-wrong-secret-1234" not in json.dumps(result)
    assert "sk-wrong-secret-1234" not in caplog.text
    assert "HTTP 401" in caplog.text  # the refused write was logged and kept aside
    assert (tmp_path / "home" / "retaindb" / "rejected.jsonl").exists()


def test_no_write_is_lost_across_a_backend_restart(tmp_path: Path,
                                                   double: RetainDBDouble) -> None:
    memory = _memory(tmp_path / "home", double, "restart")
    texts = [f"Restart fact number {n} about the lighthouse." for n in range(6)]
    _turn(memory, texts[0])
    double.stop()
    try:
        for text in texts[1:5]:
            _turn(memory, text)
        outbox = tmp_path / "home" / "retaindb" / "outbox.jsonl"
        assert len(outbox.read_text().splitlines()) == 4  # queued on disk, in order
    finally:
        double.start()
    _turn(memory, texts[5])
    memory.close()
    received = [b.body["messages"][0]["content"]
                for b in double.received("POST", "/v1/memory/ingest/session")
                if b.body["user_id"] == "restart"]
    assert received == texts  # sent 6, received 6, in order


def test_pending_writes_survive_a_process_restart(tmp_path: Path,
                                                  double: RetainDBDouble) -> None:
    home = tmp_path / "home"
    double.stop()
    try:
        memory = _memory(home, double, "proc")
        _turn(memory, "Written while RetainDB is down.")
        memory.close()
    finally:
        double.start()
    assert (home / "retaindb" / "outbox.jsonl").read_text().strip()
    memory = _memory(home, double, "proc")
    _turn(memory, "Written after it came back.")
    memory.close()
    got = [b.body["messages"][0]["content"]
           for b in double.received("POST", "/v1/memory/ingest/session")
           if b.body["user_id"] == "proc"]
    assert got == ["Written while RetainDB is down.", "Written after it came back."]


class TestRetainDBConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _backend(self, double: RetainDBDouble, home: Path) -> None:
        write_home(home, "retaindb", {"base_url": double.base_url, **FAST},
                   {"RETAINDB_API_KEY": KEY})

    def make_provider(self, home: Path) -> Any:
        return create_retaindb_provider(home)


def test_doctor_says_whether_the_api_answers_naming_its_url(tmp_path: Path) -> None:
    """``status()`` reads the user's profile; doctor reports the API up, then stopped."""
    server = RetainDBDouble(KEY)
    with server:
        home = tmp_path / "home"
        write_home(home, "retaindb", {"base_url": server.base_url, **FAST},
                   {"RETAINDB_API_KEY": KEY})
        up = CliRunner().invoke(main, ["--home", str(home), "doctor"])
        assert f"'retaindb' reaches {server.base_url}" in up.output, up.output
        assert server.received("GET", r"/v1/memory/profile/.+")
    down = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert down.exit_code == 1
    assert "'retaindb' cannot reach" in down.output and server.base_url in down.output
    assert KEY not in up.output + down.output and "Traceback" not in down.output
