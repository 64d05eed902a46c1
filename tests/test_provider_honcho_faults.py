"""Honcho faults through ``memoryport.Memory`` and the real SDK: a slow server, 5xx,
malformed JSON and dropped connections never break a turn; ``status`` names the URL; writes
are retried with backoff and none is lost across a restart of the server or of the agent;
the API key never appears in logs, health or status."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from doubles.honcho_server import HonchoDouble
from memoryport import open as open_memory
from memoryport.cli import main
from memoryport.manager import ManagerSettings
from memoryport.storage.outbox import Outbox

SECRET = "hch-key-must-not-leak-9876"


@pytest.fixture
def double() -> Iterator[HonchoDouble]:
    server = HonchoDouble().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.delenv("MEMORYPORT_HONCHO_HOST", raising=False)
    monkeypatch.setenv("HONCHO_API_KEY", SECRET)
    yield


def _home(tmp_path: Path, url: str, **root: Any) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": "honcho", "nudge_interval": 0}}))
    (home / "honcho.json").write_text(json.dumps(
        {"baseUrl": url, "workspace": "ws", "peerName": "alice", "sessionStrategy": "global",
         "dialecticCadence": 1, **root, "hosts": {"memoryport": {"aiPeer": "mp"}}}))
    return home


def _open(home: Path, deadline: float = 2.0) -> Any:
    return open_memory(home, platform="cli",
                       manager_settings=ManagerSettings(prefetch_deadline_s=deadline))


@pytest.mark.parametrize("fault", ["5xx", "malformed", "drop"])
def test_a_fault_leaves_the_turn_whole_and_status_names_the_url(
    tmp_path: Path, double: HonchoDouble, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    home = _home(tmp_path, double.url)
    double.fault = fault
    memory = _open(home)
    turn = memory.begin_turn("What do I prefer?")
    assert "<memory-context>" not in str(turn.api_user_message())
    memory.end_turn(turn, "No idea yet.")
    memory.flush()
    hooks = memory.health()["honcho"]["hooks"]
    assert f"honcho at {double.url}" in hooks["prefetch"]["last_error"]
    assert f"honcho at {double.url}" in hooks["sync_turn"]["last_error"]
    memory.close()
    status = CliRunner().invoke(main, ["--home", str(home), "status", "--json"]).output
    error = json.loads(status)["provider"]["health"]["honcho"]["hooks"]["prefetch"]
    assert f"honcho at {double.url}" in error["last_error"]
    for text in (caplog.text, status, json.dumps(hooks)):
        assert SECRET not in text


def test_a_slow_server_is_cut_off_at_the_deadline(tmp_path: Path, double: HonchoDouble) -> None:
    home = _home(tmp_path, double.url)
    double.fault, double.slow_s = "slow", 1.5
    memory = _open(home, deadline=0.3)
    turn = memory.begin_turn("anything?")
    assert "<memory-context>" not in str(turn.api_user_message())
    assert memory.health()["honcho"]["hooks"]["prefetch"]["timeouts"] == 1
    double.fault = ""
    memory.end_turn(turn, "no")
    memory.close()


def test_no_write_is_lost_across_a_server_restart(tmp_path: Path,
                                                  double: HonchoDouble) -> None:
    home = _home(tmp_path, double.url, writeRetrySeconds=0)  # retry at the next write
    memory = _open(home)
    sent: list[str] = []

    def turn(n: int) -> None:
        text = f"turn {n}: the deploy needs step {n}"
        memory.end_turn(memory.begin_turn(text), f"ack {n}")
        sent.extend([text, f"ack {n}"])

    turn(1)
    memory.flush()
    double.stop()
    turn(2)
    turn(3)
    memory.flush()
    assert memory.health()["honcho"]["hooks"]["sync_turn"]["errors"] >= 1
    double.start()  # same port, same data
    turn(4)
    memory.flush()
    received = [m["content"] for m in double.messages[("ws", "ws")]]
    assert received == sent  # 8 sent, 8 received, in order, none twice
    memory.close()


def test_writes_kept_at_exit_reach_the_server_on_the_next_run(
    tmp_path: Path, double: HonchoDouble
) -> None:
    home = _home(tmp_path, double.url)
    double.fault = "drop"
    memory = _open(home)
    memory.end_turn(memory.begin_turn("the cache lives in redis"), "ok")
    memory.close()
    assert Outbox(home / "honcho-outbox.db").pending() == 1
    double.fault = ""
    memory = _open(home)
    memory.end_turn(memory.begin_turn("sessions live in postgres"), "ok")
    memory.close()
    assert [m["content"] for m in double.messages[("ws", "ws")]] == [
        "the cache lives in redis", "ok", "sessions live in postgres", "ok"]


def test_failed_writes_back_off_instead_of_hammering(tmp_path: Path,
                                                     double: HonchoDouble) -> None:
    home = _home(tmp_path, double.url, writeRetrySeconds=30, recallMode="tools")
    double.fault = "5xx"
    memory = _open(home)

    def attempts() -> int:  # tools mode: no reads, every request is a write attempt
        return len(double.faulted)

    memory.end_turn(memory.begin_turn("first"), "ok")
    memory.flush()
    assert attempts() == 1
    memory.end_turn(memory.begin_turn("second"), "ok")
    memory.flush()
    assert attempts() == 1  # backing off: queued, not sent
    double.fault = ""
    memory.close()  # shutdown tries once more, regardless of the backoff
    assert [m["content"] for m in double.messages[("ws", "ws")]] == [
        "first", "ok", "second", "ok"]
