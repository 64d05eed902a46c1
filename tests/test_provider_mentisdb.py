"""The ``mentisdb`` provider against a loopback MentisDB double (tests/doubles): the
conformance kit, full turns through ``memoryport.Memory``, the tools, setup, status, and
faults (slow, 5xx, malformed JSON, dropped connections) with durable, retried writes."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from doubles.mentisdb_server import MentisDBDouble
from memoryport import open as open_memory
from memoryport.cli import main
from memoryport.manager import ManagerSettings
from memoryport.providers.mentisdb import MentisDBProvider, create_mentisdb_provider
from memoryport.storage.outbox import Outbox
from memoryport.testing import ProviderConformance

SECRET = "sk-mentis-never-shown-4242"


@pytest.fixture(scope="module")
def double() -> Iterator[MentisDBDouble]:
    server = MentisDBDouble().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _fresh(double: MentisDBDouble) -> Iterator[None]:
    double.fault, double.thoughts[:] = "", []
    double.requests.clear()
    double.faulted.clear()
    yield
    double.fault = ""
    for name in ("MENTISDB_API_KEY", "MENTISDB_URL", "MENTISDB_CHAIN_KEY"):
        os.environ.pop(name, None)  # open() exports <home>/.env into the environment


def _home(tmp_path: Path, url: str, **section: Any) -> Path:
    return _configure(tmp_path / "home", url, **section)


def _configure(home: Path, url: str, **section: Any) -> Path:
    home.mkdir(exist_ok=True)
    config = {"memory": {"provider": "mentisdb", "nudge_interval": 0},
              "mentisdb": {"url": url, "retry_base_s": 0.0, **section}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


def _open(home: Path, deadline: float = 2.0) -> Any:
    return open_memory(home, user_id="alice", platform="cli",
                       manager_settings=ManagerSettings(prefetch_deadline_s=deadline))


class TestMentisDBConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _server(self, double: MentisDBDouble) -> None:
        self.url = double.url

    def make_provider(self, home: Path) -> Any:
        return create_mentisdb_provider(_configure(home, self.url))


def test_a_full_turn_reaches_the_daemon_and_recall_comes_back(
    tmp_path: Path, double: MentisDBDouble
) -> None:
    memory = _open(_home(tmp_path, double.url, chain_key="team"))
    turn = memory.begin_turn("I deploy the billing service with blue-green releases.")
    memory.end_turn(turn, "Noted: blue-green for billing.")
    memory.flush()
    stored = [(t["content"], t["thought_type"], t["chain_key"]) for t in double.thoughts]
    assert stored == [
        ("I deploy the billing service with blue-green releases.", "Observation", "team"),
        ("Noted: blue-green for billing.", "Observation", "team"),
    ]
    tags = double.thoughts[0]["tags"]
    assert "role:user" in tags and "user:alice" in tags
    assert f"session:{memory.session_id}" in tags
    turn = memory.begin_turn("How do we release billing?")
    assert "[Observation] I deploy the billing service" in turn.api_user_message()
    searches = double.served("POST", "/v1/search")
    assert searches[-1].body == {"query": "How do we release billing?", "limit": 8,
                                 "chain_key": "team"}
    memory.end_turn(turn, "Blue-green.")
    memory.close()


def test_the_tools_store_and_recall_with_clear_errors(
    tmp_path: Path, double: MentisDBDouble
) -> None:
    memory = _open(_home(tmp_path, double.url))
    names = {s["function"]["name"] for s in memory.openai_tools()}
    assert {"mentisdb_recall", "mentisdb_store"} <= names
    turn = memory.begin_turn("remember the decision")
    stored = json.loads(turn.handle_tool_call(
        "mentisdb_store", {"content": "We chose RS256 JWTs.", "thought_type": "Decision",
                           "tags": ["auth"]}))
    assert stored == {"success": True, "status": "stored"}
    assert double.thoughts[-1]["thought_type"] == "Decision"
    assert {"memoryport", "auth"} <= set(double.thoughts[-1]["tags"])
    found = json.loads(turn.handle_tool_call("mentisdb_recall", {"query": "JWTs RS256"}))
    assert found["success"] and found["results"][0]["content"] == "We chose RS256 JWTs."
    bad = json.loads(turn.handle_tool_call("mentisdb_store", {"content": "x",
                                                              "thought_type": "Rumour"}))
    assert bad["success"] is False and "Rumour" in bad["error"] and "Decision" in bad["error"]
    bad = json.loads(turn.handle_tool_call("mentisdb_recall", {"query": "x", "limit": 0}))
    assert bad["error_type"] == "ToolArgumentError" and "1 to 50" in bad["error"]
    memory.end_turn(turn, "done")
    memory.close()


def test_context_mode_hides_the_tools_and_tools_mode_injects_nothing(
    tmp_path: Path, double: MentisDBDouble
) -> None:
    home = _home(tmp_path, double.url, mode="context")
    provider = create_mentisdb_provider(home)
    assert provider.get_tool_schemas() == []
    home = _home(tmp_path, double.url, mode="tools")
    provider = create_mentisdb_provider(home)
    provider.initialize("s1", home=str(home))
    double.thoughts.append({"content": "tea please", "chain_key": "memoryport", "tags": []})
    assert provider.prefetch("tea") == ""
    assert len(provider.get_tool_schemas()) == 2
    provider.shutdown()


def test_lifecycle_hooks_write_the_seed_thoughts(tmp_path: Path, double: MentisDBDouble) -> None:
    home = _home(tmp_path, double.url)
    memory = _open(home)
    memory.begin_turn("hello")  # start the session
    curated = memory.call_tool("memory", {"action": "add", "target": "user",
                                          "content": "Prefers tea"})
    assert json.loads(curated)["success"]
    memory.delegated("summarise the logs", "three errors found", child_session_id="kid")
    memory.close([{"role": "user", "content": "Let us plan the migration"}])
    kinds = {(t["thought_type"], t["content"].split("\n")[0][:25]) for t in double.thoughts}
    assert ("LessonLearned", "Prefers tea") in kinds
    assert ("Observation", "Delegated task: summarise") in kinds
    assert any(k == "Summary" and "1 turns" in c for k, c in
               ((t["thought_type"], t["content"]) for t in double.thoughts))


@pytest.mark.parametrize("fault", ["5xx", "malformed", "drop"])
def test_a_fault_leaves_the_turn_whole_and_status_names_the_url(
    tmp_path: Path, double: MentisDBDouble, fault: str
) -> None:
    home = _home(tmp_path, double.url)
    double.fault = fault
    memory = _open(home)
    turn = memory.begin_turn("What did we decide about auth?")
    assert "<memory-context>" not in str(turn.api_user_message())
    memory.end_turn(turn, "Not sure.")
    memory.flush()
    health = memory.health()["mentisdb"]["hooks"]
    assert double.url in health["prefetch"]["last_error"]
    assert double.url in health["sync_turn"]["last_error"]
    memory.close()
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--json"])
    provider = json.loads(result.output)["provider"]
    assert provider["available"] is True  # availability is config only
    error = provider["health"]["mentisdb"]["hooks"]["prefetch"]["last_error"]
    assert f"mentisdb at {double.url}/v1/search" in error
    text = CliRunner().invoke(main, ["--home", str(home), "status"]).output
    assert f"{double.url}/v1/search" in text


def test_a_slow_daemon_is_cut_off_at_the_deadline(tmp_path: Path, double: MentisDBDouble) -> None:
    home = _home(tmp_path, double.url, timeout_s=5.0)
    double.fault, double.slow_s = "slow", 1.5
    memory = _open(home, deadline=0.3)
    turn = memory.begin_turn("anything about deploys?")
    assert "<memory-context>" not in str(turn.api_user_message())
    assert memory.health()["mentisdb"]["hooks"]["prefetch"]["timeouts"] == 1
    double.fault = ""
    memory.end_turn(turn, "no")
    memory.close()


def test_writes_survive_an_outage_and_a_restart_of_the_daemon(
    tmp_path: Path, double: MentisDBDouble
) -> None:
    home = _home(tmp_path, double.url)
    memory = _open(home)
    sent: list[str] = []

    def turn(n: int) -> None:
        text = f"fact number {n} about the deploy pipeline"
        memory.end_turn(memory.begin_turn(text), f"ack {n}")
        sent.extend([text, f"ack {n}"])

    turn(1)
    memory.flush()
    double.stop()  # the daemon goes away
    turn(2)
    turn(3)
    memory.flush()
    assert memory.health()["mentisdb"]["hooks"]["sync_turn"]["errors"] >= 1
    double.start()  # same port, same data
    turn(4)
    memory.flush()
    received = [t["content"] for t in double.thoughts]
    assert received == sent  # all 8, in order, none twice
    memory.close()


def test_writes_kept_at_exit_are_delivered_by_the_next_run(
    tmp_path: Path, double: MentisDBDouble
) -> None:
    home = _home(tmp_path, double.url)
    double.fault = "5xx"
    memory = _open(home)
    memory.end_turn(memory.begin_turn("the cache lives in redis"), "ok")
    memory.close()  # shutdown retries once, fails, keeps the writes on disk
    assert Outbox(home / "mentisdb-outbox.db").pending() == 3  # 2 turn sides + summary
    double.fault = ""
    memory = _open(home)
    memory.end_turn(memory.begin_turn("and sessions in postgres"), "ok")
    memory.close()
    received = [t["content"] for t in double.thoughts if t["thought_type"] == "Observation"]
    assert received == ["the cache lives in redis", "ok", "and sessions in postgres", "ok"]
    assert sum(t["thought_type"] == "Summary" for t in double.thoughts) == 2


def test_backoff_spaces_the_retries(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "o.db", base_s=30.0, max_s=60.0)
    calls: list[dict[str, Any]] = []

    def failing(kind: str, body: dict[str, Any]) -> None:
        calls.append(body)
        raise OSError("down")

    outbox.put("thought", {"n": 1})
    with pytest.raises(OSError):
        outbox.flush(failing)
    assert outbox.flush(failing) == 0 and len(calls) == 1  # backing off: not retried yet
    assert not outbox.due() and outbox.failures == 1
    assert outbox.flush(lambda kind, body: None, force=True) == 1 and outbox.pending() == 0
    outbox.close()


def test_the_api_key_is_sent_but_never_logged_or_shown(
    tmp_path: Path, double: MentisDBDouble, caplog: pytest.LogCaptureFixture
) -> None:
    home = _home(tmp_path, double.url)
    (home / ".env").write_text(f"MENTISDB_API_KEY={SECRET}\n")
    caplog.set_level(logging.DEBUG)
    memory = _open(home)
    memory.end_turn(memory.begin_turn("token test"), "fine")
    memory.flush()
    assert double.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    double.fault = "5xx"
    memory.end_turn(memory.begin_turn("token test again"), "fine")
    memory.flush()
    health = json.dumps(memory.health())
    memory.close()
    status = CliRunner().invoke(main, ["--home", str(home), "status", "--json"]).output
    assert json.loads(status)["provider"]["config"]["api_key"] == "set"
    for text in (caplog.text, health, status):
        assert SECRET not in text


def test_setup_writes_config_and_the_secret_to_env(tmp_path: Path, double: MentisDBDouble) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(main, [
        "--home", str(home), "setup", "mentisdb", "--set", f"url={double.url}",
        "--set", "chain_key=ops", "--set", f"api_key={SECRET}", "--set", "recall_limit=4",
        "--yes", "--no-install"])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((home / "config.yaml").read_text())
    assert config["memory"]["provider"] == "mentisdb"
    assert config["mentisdb"]["url"] == double.url and config["mentisdb"]["recall_limit"] == 4
    assert SECRET not in (home / "config.yaml").read_text()
    assert f"MENTISDB_API_KEY={SECRET}" in (home / ".env").read_text()
    bad = CliRunner().invoke(main, ["--home", str(home), "setup", "mentisdb", "--set",
                                    "mode=loud", "--yes", "--no-install"])
    assert bad.exit_code != 0 and "mode" in bad.output and "hybrid" in bad.output
    assert yaml.safe_load((home / "config.yaml").read_text()) == config  # unchanged


def test_setup_interactively(tmp_path: Path, double: MentisDBDouble) -> None:
    home = tmp_path / "home"
    answers = "\n".join([double.url, "ops", "", "tools", "5", "1500", "2.5", "1", "30"]) + "\n"
    result = CliRunner().invoke(main, ["--home", str(home), "setup", "mentisdb",
                                       "--no-install"], input=answers)
    assert result.exit_code == 0, result.output
    section = yaml.safe_load((home / "config.yaml").read_text())["mentisdb"]
    assert (section["url"], section["mode"], section["recall_limit"]) == (double.url, "tools", 5)


def test_bad_settings_are_refused_with_the_fix(tmp_path: Path) -> None:
    home = _home(tmp_path, "ftp://example")
    provider = MentisDBProvider()
    with pytest.raises(Exception, match="not an http"):
        provider.initialize("s", home=str(home))
    assert provider.is_available() is True  # the defaults, untouched
    assert provider.pending_writes() == 0


def test_status_method_reports_reachability(tmp_path: Path, double: MentisDBDouble) -> None:
    home = _home(tmp_path, double.url)
    provider = create_mentisdb_provider(home)
    provider.initialize("s", home=str(home))
    assert provider.status()["reachable"] is True
    double.fault = "drop"
    report = provider.status()
    assert report["reachable"] is False and double.url in report["error"]
    provider.shutdown()


def test_pre_compress_keeps_the_user_messages(tmp_path: Path, double: MentisDBDouble) -> None:
    home = _home(tmp_path, double.url)
    provider = create_mentisdb_provider(home)
    provider.initialize("s1", home=str(home))
    assert provider.on_pre_compress([
        {"role": "user", "content": "The VPN config lives in ops/vpn.yaml"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "x" * 5000}]) == ""
    kept = [(t["content"][:20], len(t["content"]), t["tags"]) for t in double.thoughts]
    assert kept[0] == ("The VPN config lives", 36, ["memoryport", "pre-compress"])
    assert kept[1][1] == 2000 and len(kept) == 2
    provider.shutdown()


def test_the_chain_key_falls_back_to_the_agent_identity(tmp_path: Path,
                                                       double: MentisDBDouble) -> None:
    home = _home(tmp_path, double.url)
    provider = create_mentisdb_provider(home)
    provider.initialize("s1", home=str(home), agent_identity="coder")
    provider.sync_turn("hello", "hi")
    assert {t["chain_key"] for t in double.thoughts} == {"coder"}
    provider.shutdown()
    provider.initialize("s2", home=str(home))
    assert provider.status()["chain_key"] == "memoryport"
    provider.shutdown()
