"""The ``hindsight`` provider through the public API and the real ``hindsight-client``
SDK, against a loopback double built from the SDK's own models
(``tests/doubles/hindsight_server.py``; the real ``hindsight-api`` server needs torch and
downloaded models): auto-retain, recall and reflect in the fence, tools, modes, budgets,
banks per user and profile, setup/status, faults and a backend restart."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from doubles.base_server import write_home
from doubles.hindsight_server import HindsightDouble
from memoryport import open as open_memory
from memoryport.api import Memory
from memoryport.cli import main
from memoryport.config import load_config, read_env
from memoryport.providers.hindsight import create_hindsight_provider
from memoryport.testing import ProviderConformance

KEY = "hs-test-key"
ENV = "HINDSIGHT_API_KEY"
FAST = {"retry_attempts": 3, "retry_backoff_s": 0.01, "retry_cooldown_s": 0.0,
        "timeout_s": 0.8}


@pytest.fixture(scope="module")
def double() -> Iterator[HindsightDouble]:
    with HindsightDouble(KEY) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _clean(double: HindsightDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "unset")
    monkeypatch.delenv(ENV)  # open() exports .env; undone after each test
    double.fault = None


def _memory(home: Path, double: HindsightDouble, user_id: str | None = None, *,
            key: str = KEY, deadline: float = 5.0, **section: Any) -> Memory:
    write_home(home, "hindsight", {"api_url": double.base_url, **FAST, **section},
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


def _retained(double: HindsightDouble, bank: str) -> list[dict[str, Any]]:
    return [item for r in double.received("POST", f"/v1/default/banks/{bank}/memories")
            for item in r.body["items"]]


def test_a_turn_is_retained_and_recall_lands_in_the_fence_only(
        tmp_path: Path, double: HindsightDouble) -> None:
    memory = _memory(tmp_path / "home", double, "ana")
    _turn(memory, "My sister Lena lives in Porto and teaches cello.", "How lovely.")
    item = _retained(double, "memoryport-default-ana")[-1]
    assert item["content"] == ("user: My sister Lena lives in Porto and teaches cello.\n"
                               "assistant: How lovely.")
    assert item["context"] == "conversation turn" and item["metadata"]["source"] == "memoryport"
    sent, _ = _turn(memory, "Where does Lena live?")
    head, _, fence = sent.partition("<memory-context>")
    assert "Lena lives in Porto" in fence and "Porto" not in head
    ask = double.received("POST", "/v1/default/banks/memoryport-default-ana/memories/recall")
    assert ask[-1].body["budget"] == "mid" and ask[-1].body["max_tokens"] == 1024
    stored = memory.session_messages(memory.session_id)
    assert not any("<memory-context>" in str(m.get("content")) for m in stored)
    memory.close()


def test_budgets_input_limit_and_reflect_prefetch(tmp_path: Path,
                                                  double: HindsightDouble) -> None:
    memory = _memory(tmp_path / "home", double, "budget", recall_budget="high",
                     recall_max_tokens=64, recall_max_input_chars=40,
                     prefetch_method="reflect")
    _turn(memory, "The spare key hides under the blue flowerpot.")
    long_question = "Where is the spare key hidden? " + "please " * 40
    sent, _ = _turn(memory, long_question)
    ask = double.received("POST", "/v1/default/banks/memoryport-default-budget/reflect")[-1]
    assert ask.body["query"] == long_question.strip()[:40] and ask.body["budget"] == "high"
    assert "From what I remember" in sent and "blue flowerpot" in sent
    memory.close()


def test_each_tool_round_trips(tmp_path: Path, double: HindsightDouble) -> None:
    memory = _memory(tmp_path / "home", double, "bo")
    saved = _tool(memory, "hindsight_retain", content="Bo is allergic to peanuts")
    assert saved["success"] and saved["items_count"] == 1
    found = _tool(memory, "hindsight_recall", query="peanuts allergy")
    assert [r["text"] for r in found["results"]] == ["Bo is allergic to peanuts"]
    reflected = _tool(memory, "hindsight_reflect", query="what is Bo allergic to")
    assert "peanuts" in reflected["text"]
    bad = _tool(memory, "hindsight_recall", query="  ")
    assert bad["success"] is False and bad["error_type"] == "ToolArgumentError"
    memory.close()


@pytest.mark.parametrize(("mode", "tools", "recall"), [
    ("hybrid", True, True), ("context", False, True), ("tools", True, False)])
def test_memory_mode_shows_and_hides_tools_and_recall(tmp_path: Path,
                                                      double: HindsightDouble, mode: str,
                                                      tools: bool, recall: bool) -> None:
    memory = _memory(tmp_path / "home", double, f"mode-{mode}", memory_mode=mode)
    names = {s["name"] for s in memory.tool_schemas()}
    assert ({"hindsight_retain", "hindsight_recall", "hindsight_reflect"} <= names) is tools
    _turn(memory, "I keep bees on my balcony.")
    sent, _ = _turn(memory, "What do I keep on my balcony?")
    assert ("bees on my balcony" in sent) is recall
    if not tools:
        gone = _tool(memory, "hindsight_recall", query="bees")
        assert gone["success"] is False
    memory.close()


def test_auto_retain_off_retains_nothing(tmp_path: Path, double: HindsightDouble) -> None:
    memory = _memory(tmp_path / "home", double, "noretain", auto_retain=False)
    _turn(memory, "This must not be retained.")
    memory.close()
    assert _retained(double, "memoryport-default-noretain") == []


def test_banks_per_user_and_profile(tmp_path: Path, double: HindsightDouble) -> None:
    root = tmp_path / "root"
    one = _memory(root / "profiles" / "work", double, "u1")
    _turn(one, "Project codename is kestrel.")
    one.close()
    assert _retained(double, "memoryport-work-u1")
    for profile, user in (("home", "u1"), ("work", "u2")):
        other = _memory(root / "profiles" / profile, double, user)
        sent, _ = _turn(other, "What is the project codename?")
        other.close()
        assert "kestrel" not in sent


def test_setup_and_status(tmp_path: Path, double: HindsightDouble) -> None:
    home = tmp_path / "cli-home"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "setup", "hindsight", "--set",
                                  f"api_key={KEY}", "--set", f"api_url={double.base_url}",
                                  "--set", "memory_mode=tools", "--set",
                                  "recall_budget=low", "--yes"])
    assert result.exit_code == 0, result.output
    assert KEY not in result.output and ENV in result.output
    section = load_config(home).provider_section("hindsight")
    assert section["memory_mode"] == "tools" and section["recall_budget"] == "low"
    assert read_env(home)[ENV] == KEY
    status = runner.invoke(main, ["--home", str(home), "status", "--json"])
    assert KEY not in status.output
    data = json.loads(status.output)["provider"]
    assert data["available"] is True and data["config"]["api_key"] == "set"
    bad = runner.invoke(main, ["--home", str(home), "setup", "hindsight", "--set",
                               "recall_budget=huge", "--yes"])
    assert bad.exit_code != 0 and "recall_budget" in bad.output


def test_setup_refuses_what_only_the_provider_checks(tmp_path: Path) -> None:
    """A bank id the schema allows (any text) but Hindsight does not: refused, nothing saved."""
    home = tmp_path / "cli-home"
    runner = CliRunner()
    bad = runner.invoke(main, ["--home", str(home), "setup", "hindsight", "--set",
                               "api_url=http://127.0.0.1:9", "--set", "bank_id=my bank!",
                               "--yes", "--no-install"])
    assert bad.exit_code != 0 and "bank_id" in bad.output and "not a bank id" in bad.output
    assert load_config(home).provider_section("hindsight") == {}
    assert load_config(home).memory.provider != "hindsight"


def test_status_probe_reaches_the_server(tmp_path: Path, double: HindsightDouble) -> None:
    home = tmp_path / "home"
    write_home(home, "hindsight", {"api_url": double.base_url}, {ENV: KEY})
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--json"])
    prefetch = json.loads(result.output)["provider"]["health"]["hindsight"]["hooks"]["prefetch"]
    assert prefetch["errors"] == 0 and prefetch["calls"] == 1


@pytest.mark.parametrize("kind", ["slow", "status", "malformed", "drop"])
def test_faults_keep_the_turn_within_the_deadline_and_tools_in_shape(
        tmp_path: Path, double: HindsightDouble, kind: str) -> None:
    memory = _memory(tmp_path / "home", double, f"fault-{kind}", deadline=0.5)
    _turn(memory, "My locker code is in the blue notebook.")
    with double.faulty(kind, delay=1.2, code=503):
        sent, turn = _turn(memory, "Where is my locker code?")
        assert "blue notebook" not in sent and not turn.contexts
    with double.faulty(kind, delay=1.2, code=503, times=1):
        result = _tool(memory, "hindsight_recall", query="locker")
    assert result["success"] is False and result["backend"] == "hindsight"
    assert result["error"].startswith("hindsight ")
    memory.close()


def test_a_wrong_key_is_reported_without_the_key(tmp_path: Path, double: HindsightDouble,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    memory = _memory(tmp_path / "home", double, "keyless", key="hs-wrong-secret-1234")
    result = _tool(memory, "hindsight_recall", query="anything")
    _turn(memory, "Trying a turn with a wrong key.")
    memory.close()
    assert "HTTP 401" in result["error"] and ENV in result["error"]
    assert "hs-wrong-secret-1234" not in json.dumps(result)
    assert "hs-wrong-secret-1234" not in caplog.text
    assert (tmp_path / "home" / "hindsight" / "rejected.jsonl").exists()


def test_no_retain_is_lost_across_a_backend_restart(tmp_path: Path,
                                                    double: HindsightDouble) -> None:
    memory = _memory(tmp_path / "home", double, "restart")
    texts = [f"Restart fact number {n} about the lighthouse." for n in range(6)]
    _turn(memory, texts[0], "ok")
    double.stop()
    try:
        for text in texts[1:5]:
            _turn(memory, text, "ok")
        outbox = tmp_path / "home" / "hindsight" / "outbox.jsonl"
        assert len(outbox.read_text().splitlines()) == 4
    finally:
        double.start()
    _turn(memory, texts[5], "ok")
    memory.close()
    got = [i["content"] for i in _retained(double, "memoryport-default-restart")]
    assert got == [f"user: {t}\nassistant: ok" for t in texts]  # sent 6, received 6, in order


class TestHindsightConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _backend(self, double: HindsightDouble, home: Path) -> None:
        write_home(home, "hindsight", {"api_url": double.base_url, **FAST}, {ENV: KEY})

    def make_provider(self, home: Path) -> Any:
        return create_hindsight_provider(home)


def test_doctor_says_whether_the_server_answers_naming_its_url(tmp_path: Path) -> None:
    """``status()`` asks ``GET /version`` (answered here from the SDK's own model)."""
    from hindsight_client_api.models.features_info import FeaturesInfo
    from hindsight_client_api.models.version_response import VersionResponse

    features = dict.fromkeys(FeaturesInfo.model_fields, False)
    server = HindsightDouble(KEY)
    server.route("GET", "/version", lambda _r: VersionResponse.from_dict(  # type: ignore[union-attr]
        {"api_version": "0.4.0", "features": features}).to_dict())
    with server:
        home = tmp_path / "home"
        write_home(home, "hindsight", {"api_url": server.base_url, **FAST}, {ENV: KEY})
        up = CliRunner().invoke(main, ["--home", str(home), "doctor"])
        assert f"'hindsight' reaches {server.base_url}" in up.output, up.output
    down = CliRunner().invoke(main, ["--home", str(home), "doctor"])
    assert down.exit_code == 1
    assert "'hindsight' cannot reach" in down.output and server.base_url in down.output
    assert KEY not in up.output + down.output and "Traceback" not in down.output
