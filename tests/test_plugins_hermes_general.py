"""The vendor's own Hermes plugin ``hindsight-hermes`` 0.5.0 (from PyPI, unmodified) as a
Hermes *general* plugin in memoryport: found in the ``hermes_agent.plugins`` entry-point
group, enabled with ``plugins.enabled``, driven through ``memoryport.open`` against the
loopback Hindsight double the ``hindsight`` provider tests use
(``tests/doubles/hindsight_server.py``, built from ``hindsight-client``'s own models; the
real Hindsight server needs torch and downloaded models)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from doubles.hindsight_server import HindsightDouble
from memoryport import open as open_memory
from memoryport.api import Memory
from memoryport.plugins.general import (
    GENERAL_ENTRY_POINT_GROUP,
    discover_general,
    load_general,
)
from memoryport.testing import ProviderConformance

BANK = "hermes-bank"


@pytest.fixture(scope="module")
def double() -> Iterator[HindsightDouble]:
    with HindsightDouble() as server:
        yield server  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _env(double: HindsightDouble, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # hindsight-hermes reads ~/.hindsight/hermes.json, then these variables (which win)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("HINDSIGHT_API_URL", double.base_url)
    monkeypatch.setenv("HINDSIGHT_BANK_ID", BANK)
    double.fault = None
    double.banks.clear()


def _home(tmp_path: Path, provider: str = "", deadline: float = 5.0, **plugins: Any) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    data = {
        "memory": {"provider": provider, "nudge_interval": 0, "prefetch_deadline_s": deadline},
        "plugins": {"enabled": ["hindsight"], **plugins},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return home


def _memory(home: Path, user_id: str = "ana") -> Memory:
    memory = open_memory(home, None, user_id, platform="cli")
    memory.start_session()
    return memory


def _turn(memory: Memory, text: str, reply: str = "Noted.") -> str:
    turn = memory.begin_turn(text)
    sent = str(turn.api_user_message())
    memory.end_turn(turn, reply)
    memory.flush()
    return sent


def _bank(double: HindsightDouble) -> list[str]:
    return [m["text"] for m in double.banks.get(BANK, [])]


def test_found_in_hermes_agent_plugins_without_importing_it(tmp_path: Path) -> None:
    found = discover_general(tmp_path)
    info = found.get("hindsight")
    assert info is not None and info.source == "entry_point"
    assert info.distribution == "hindsight-hermes" and info.manifest.version == "0.5.0"
    assert info.entry_point == "hindsight_hermes"
    assert GENERAL_ENTRY_POINT_GROUP == "hermes_agent.plugins"


def test_a_turn_is_retained_and_recall_lands_in_the_fence_only(
    tmp_path: Path, double: HindsightDouble
) -> None:
    memory = _memory(_home(tmp_path))
    assert "hindsight" in [getattr(p, "name", "") for p in memory.providers]
    first = _turn(memory, "My sister Lena lives in Porto and teaches cello.", "How lovely.")
    assert "<memory-context>" not in first  # nothing stored yet
    assert _bank(double) == [
        "User: My sister Lena lives in Porto and teaches cello.\nAssistant: How lovely."
    ]  # post_llm_call ran after the turn, through the real SDK
    sent = _turn(memory, "Where does Lena live?")
    head, _, fence = sent.partition("<memory-context>")
    assert head.strip() == "Where does Lena live?"
    assert "Lena lives in Porto" in fence and "Relevant memories" in fence
    assert "Porto" not in memory.system_prompt
    stored = memory.session_messages(memory.session_id)
    assert stored and not any("<memory-context>" in str(m.get("content")) for m in stored)
    recall = double.received("POST", f"/v1/default/banks/{BANK}/memories/recall")
    assert recall[-1].body["query"] == "Where does Lena live?"
    hooks = memory.health()["hindsight"]["hooks"]
    assert hooks["prefetch"]["calls"] == 2 and hooks["sync_turn"]["calls"] == 2
    assert hooks["prefetch"]["errors"] == hooks["sync_turn"]["errors"] == 0
    memory.close()


def test_each_of_its_three_tools_round_trips(tmp_path: Path, double: HindsightDouble) -> None:
    memory = _memory(_home(tmp_path))
    names = [s["name"] for s in memory.tool_schemas()]
    assert {"hindsight_retain", "hindsight_recall", "hindsight_reflect"} <= set(names)
    saved = json.loads(
        memory.call_tool("hindsight_retain", {"content": "Bo is allergic to peanuts"})
    )
    assert saved == {"result": "Memory stored successfully."}
    assert "Bo is allergic to peanuts" in _bank(double)
    found = json.loads(memory.call_tool("hindsight_recall", {"query": "peanuts allergic"}))
    assert found == {"result": "1. Bo is allergic to peanuts"}
    reflected = json.loads(memory.call_tool("hindsight_reflect", {"query": "peanuts allergic?"}))
    assert "Bo is allergic to peanuts" in reflected["result"]
    # async handlers and sync hooks share one event loop: a turn after the tools still works
    assert "peanuts" in _turn(memory, "Which peanuts allergic person?")
    memory.close()


def test_a_backend_error_comes_back_in_the_one_error_shape(
    tmp_path: Path, double: HindsightDouble
) -> None:
    memory = _memory(_home(tmp_path))
    with double.faulty("status", code=500):
        answer = json.loads(memory.call_tool("hindsight_recall", {"query": "anything"}))
    assert answer["success"] is False and answer["error_type"] == "PluginToolError"
    assert answer["error"].startswith("hindsight: hindsight_recall failed:")
    memory.close()


def test_a_slow_backend_does_not_stall_the_turn(tmp_path: Path, double: HindsightDouble) -> None:
    memory = _memory(_home(tmp_path, deadline=1.0))
    _turn(memory, "The spare key hides under the blue flowerpot.")
    with double.faulty("slow", delay=2.5, times=1):
        turn = memory.begin_turn("Where is the spare key?")
        sent = str(turn.api_user_message())
    # the recall answered after the turn's deadline: left out, the turn went on without it
    assert sent == "Where is the spare key?"
    memory.end_turn(turn, "Under the flowerpot.")
    memory.flush()
    assert "blue flowerpot" in _turn(memory, "Where is the spare key now?")
    memory.close()


def test_a_dropping_backend_does_not_crash_the_turn(
    tmp_path: Path, double: HindsightDouble
) -> None:
    memory = _memory(_home(tmp_path))
    with double.faulty("drop"):
        sent = _turn(memory, "Do you remember anything?")
        answer = json.loads(memory.call_tool("hindsight_retain", {"content": "x y z"}))
    assert sent == "Do you remember anything?"
    assert answer["success"] is False
    assert _turn(memory, "Still here?") == "Still here?"
    memory.close()


def test_not_configured_is_reported_and_the_agent_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HINDSIGHT_API_URL")
    result = load_general("hindsight", tmp_path)
    assert not result.ok and "registered no tools and no hooks" in result.error
    memory = _memory(_home(tmp_path))
    assert "hindsight" not in [getattr(p, "name", "") for p in memory.providers]
    assert _turn(memory, "Hello there") == "Hello there"
    memory.close()


def test_enabled_together_with_the_bundled_provider_of_the_same_name_is_refused(
    tmp_path: Path,
) -> None:
    from memoryport.config import load_config
    from memoryport.plugins.general import load_enabled

    home = _home(tmp_path, provider="hindsight")
    results = load_enabled(load_config(home), home)
    assert [r.name for r in results] == ["hindsight"]
    assert not results[0].ok and "both memory.provider and in plugins.enabled" in results[0].error


def test_load_reports_tools_hooks_and_what_is_never_fired(tmp_path: Path) -> None:
    result = load_general("hindsight", tmp_path)
    assert result.ok
    data = result.to_dict()
    assert data["tools"] == ["hindsight_retain", "hindsight_recall", "hindsight_reflect"]
    assert data["hooks"] == ["post_llm_call", "pre_llm_call"]
    assert data["inactive_hooks"] == [] and data["warnings"] == []
    assert result.provider is not None
    result.provider.shutdown()


def test_cli_enable_list_status_and_disable(tmp_path: Path, double: HindsightDouble) -> None:
    from click.testing import CliRunner

    from memoryport.cli import main
    from memoryport.config import load_config

    home = tmp_path / "home"
    home.mkdir()
    runner = CliRunner()
    args = ["--home", str(home)]
    refused = runner.invoke(main, [*args, "plugins", "enable", "no-such-plugin"])
    assert refused.exit_code == 1 and "is not installed" in refused.output
    assert not (home / "config.yaml").exists()  # nothing changed
    enabled = runner.invoke(main, [*args, "plugins", "enable", "hindsight"])
    assert enabled.exit_code == 0, enabled.output
    assert load_config(home).provider_section("plugins") == {"enabled": ["hindsight"]}
    listed = json.loads(runner.invoke(main, [*args, "plugins", "list", "--json"]).output)
    row = next(r for r in listed["plugins"] if r["name"] == "hindsight")
    assert listed["count"] == len(listed["plugins"]) and listed["enabled"] == ["hindsight"]
    assert row["loaded"] and row["source"] == "entry_point" and len(row["tools"]) == 3
    status = runner.invoke(main, [*args, "status", "--json", "--no-probe"])
    assert status.exit_code == 0, status.output
    shown = json.loads(status.output)["plugins"]["plugins"]
    assert next(r for r in shown if r["name"] == "hindsight")["hooks"] == [
        "post_llm_call",
        "pre_llm_call",
    ]
    text = runner.invoke(main, [*args, "status", "--no-probe"]).output
    assert "General plugin hindsight: tools: hindsight_retain" in text
    runner.invoke(main, [*args, "plugins", "disable", "hindsight"])
    assert load_config(home).provider_section("plugins") == {"enabled": []}


_FOLDER_PLUGIN = """
import json

SEEN = []


def _note(args, **kwargs):
    SEEN.append(args["text"])
    return json.dumps({"stored": len(SEEN)})


PREFIX = ["Folder notes: "]


def _context(user_message="", **kwargs):
    return {"context": PREFIX[0] + "; ".join(SEEN)} if SEEN else None


def register(ctx):
    PREFIX[0] = ctx.get_config("render.prefix", "Folder notes: ")
    ctx.register_tool(name="folder_note", toolset="notes", handler=_note,
                      schema={"name": "folder_note", "description": "Keep a note.",
                              "parameters": {"type": "object",
                                             "properties": {"text": {"type": "string"}}}})
    ctx.register_hook("pre_llm_call", _context)
    ctx.register_hook("pre_tool_call", lambda **kw: None)
    ctx.register_command("notes", lambda raw: "ok", description="a slash command")
    ctx.inject_message("hello", role="user")
"""


def test_a_folder_plugin_with_a_sync_tool_and_unknown_ctx_calls(tmp_path: Path) -> None:
    from memoryport.plugins import discover

    home = _home(tmp_path)
    folder = home / "plugins" / "folder-notes"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(
        "name: folder-notes\nversion: 0.1.0\nprovides_tools: [folder_note]\n"
        "provides_hooks: [pre_llm_call]\n",
        encoding="utf-8",
    )
    (folder / "__init__.py").write_text(_FOLDER_PLUGIN, encoding="utf-8")
    assert "folder-notes" not in discover(home).providers  # not a memory provider
    found = discover_general(home).get("folder-notes")
    assert found is not None and found.source == "user"
    result = load_general("folder-notes", home)
    assert result.ok and result.warnings == [
        "ignored Hermes calls: inject_message, register_command",
        "hooks memoryport never fires: pre_tool_call",
    ]
    assert result.provider is not None
    result.provider.shutdown()
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "memory": {"provider": "", "nudge_interval": 0},
                "plugins": {
                    "enabled": ["folder-notes"],
                    "entries": {"folder-notes": {"settings": {"render": {"prefix": "Kept: "}}}},
                },
            }
        ),
        encoding="utf-8",
    )
    memory = _memory(home)
    stored = json.loads(memory.call_tool("folder_note", {"text": "the cat is called Miso"}))
    assert stored == {"stored": 1}
    sent = _turn(memory, "What is the cat called?")
    head, _, fence = sent.partition("<memory-context>")
    assert head.strip() == "What is the cat called?" and "Kept: the cat is called Miso" in fence
    memory.close()


def test_a_bad_plugins_setting_is_reported_and_changes_nothing(tmp_path: Path) -> None:
    from memoryport.config import load_config
    from memoryport.plugins.general import load_enabled

    home = _home(tmp_path, enabled=42)
    results = load_enabled(load_config(home), home)
    assert [r.name for r in results] == ["plugins"]
    assert "plugins.enabled must be a list of plugin names, got 42" in results[0].error
    memory = _memory(home)
    assert _turn(memory, "Hi") == "Hi"
    memory.close()
    from memoryport.plugins.general import general_report

    home = _home(tmp_path, timeout_s=-1)
    report = general_report(home, load_config(home))
    assert report["enabled"] == [] and "plugins.timeout_s must be a number" in report["problems"][0]


class TestHindsightHermesConforms(ProviderConformance):
    """The adapter around the real hindsight-hermes passes the provider conformance kit."""

    @pytest.fixture(autouse=True)
    def _served(self, double: HindsightDouble) -> None:
        double.fault = None

    def make_provider(self, home: Path) -> Any:
        result = load_general("hindsight", home)
        assert result.provider is not None, result.error
        return result.provider


_LIFECYCLE_PLUGIN = """
import asyncio
import json

CALLS = []


def _record(hook):
    def callback(**kwargs):
        CALLS.append((hook, kwargs.get("session_id", ""), kwargs.get("is_first_turn")))
    return callback


async def _echo(args, **kwargs):
    await asyncio.sleep(0)
    return {"echo": args.get("text", ""), "task_id": kwargs.get("task_id")}


def register(ctx):
    for hook in ("on_session_start", "on_session_end", "on_session_reset", "pre_llm_call",
                 "post_llm_call"):
        ctx.register_hook(hook, _record(hook))
    ctx.register_tool("life_echo", "life", {"name": "life_echo", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}}}, _echo)
"""


def test_session_hooks_fire_where_the_mapping_says(tmp_path: Path) -> None:
    import sys

    home = tmp_path / "home"
    folder = home / "plugins" / "life"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: life\nprovides_hooks: [pre_llm_call]\n")
    (folder / "__init__.py").write_text(_LIFECYCLE_PLUGIN, encoding="utf-8")
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {"memory": {"provider": "", "nudge_interval": 0}, "plugins": {"enabled": ["life"]}}
        ),
        encoding="utf-8",
    )
    memory = _memory(home)
    first = memory.session_id
    module = next(
        m for n, m in sys.modules.items() if n.startswith("_memoryport_user_plugins.life")
    )
    calls = module.CALLS
    echo = json.loads(memory.call_tool("life_echo", {"text": "hi"}))
    assert echo == {"echo": "hi", "task_id": first}  # an async handler, awaited
    _turn(memory, "one")
    _turn(memory, "two")
    memory.switch_session(reason="reset")
    memory.flush()  # session hooks run on the background queue, like every provider's
    second = memory.session_id
    _turn(memory, "three")
    child = memory.open_child()
    assert "life" not in [getattr(p, "name", "") for p in child.providers]
    child.close()
    memory.close()
    assert calls == [
        ("on_session_start", first, None),
        ("pre_llm_call", first, True),
        ("post_llm_call", first, None),
        ("pre_llm_call", first, False),
        ("post_llm_call", first, None),
        ("on_session_end", first, None),
        ("on_session_reset", first, None),
        ("on_session_start", second, None),
        ("pre_llm_call", second, True),
        ("post_llm_call", second, None),
        ("on_session_end", second, None),
    ]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import no_such_module_anywhere\n", "ModuleNotFoundError"),
        (
            "def register(ctx):\n    ctx.register_hook('pre_llm_call', print)\n    1 / 0\n",
            "ZeroDivisionError",
        ),
        ("X = 1  # register_hook is mentioned, never defined\n", "has no register(ctx)"),
    ],
)
def test_a_broken_plugin_is_reported_and_the_agent_runs(
    tmp_path: Path, code: str, expected: str
) -> None:
    import sys

    from click.testing import CliRunner

    from memoryport.cli import main

    home = tmp_path / "home"
    folder = home / "plugins" / "broken"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: broken\nprovides_hooks: [pre_llm_call]\n")
    (folder / "__init__.py").write_text(code, encoding="utf-8")
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {"memory": {"provider": "", "nudge_interval": 0}, "plugins": {"enabled": ["broken"]}}
        ),
        encoding="utf-8",
    )
    result = load_general("broken", home)
    assert not result.ok and expected in result.error and result.traceback
    assert not [n for n in sys.modules if n.startswith("_memoryport_user_plugins.broken")]
    memory = _memory(home)
    assert _turn(memory, "Hello") == "Hello"
    memory.close()
    status = CliRunner().invoke(main, ["--home", str(home), "status", "--no-probe"])
    assert status.exit_code == 1
    assert "General plugin broken: " in status.output and expected in status.output
    from memoryport.admin.doctor import diagnose

    found = [c for c in diagnose(home) if c.name == "plugin"]
    assert [c.status for c in found] == ["fail"] and expected in found[0].detail
    assert "memoryport plugins disable broken" in found[0].fix


def test_doctor_reports_an_enabled_plugin_that_loads(tmp_path: Path) -> None:
    from memoryport.admin.doctor import diagnose

    found = [c for c in diagnose(_home(tmp_path)) if c.name == "plugin"]
    assert [c.status for c in found] == ["ok"]
    assert "'hindsight' loads" in found[0].detail and "hindsight_retain" in found[0].detail


def test_runs_next_to_the_memory_provider_without_taking_its_slot(
    tmp_path: Path, double: HindsightDouble
) -> None:
    memory = _memory(_home(tmp_path, provider="holographic"))  # max_external_providers: 1
    names = [getattr(p, "name", "") for p in memory.providers]
    assert "holographic" in names and "hindsight" in names
    tools = {s["name"] for s in memory.tool_schemas()}
    assert {"fact_store", "hindsight_recall"} <= tools
    memory.close()


_LEAKY_PLUGIN = """
import asyncio


async def _leak(args, **kwargs):
    loop = asyncio.get_running_loop()
    loop.call_exception_handler({"message": "Unclosed client session"})
    loop.call_exception_handler({"message": "Something else broke"})
    return "done"


def register(ctx):
    ctx.register_tool("leak", "leak", {"name": "leak", "parameters": {"type": "object"}}, _leak)
"""


def test_unclosed_sessions_at_exit_are_debug_noise_other_loop_errors_are_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    folder = home / "plugins" / "leaky"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: leaky\nprovides_tools: [leak]\n")
    (folder / "__init__.py").write_text(_LEAKY_PLUGIN, encoding="utf-8")
    result = load_general("leaky", home)
    assert result.provider is not None
    with caplog.at_level("DEBUG"):
        assert result.provider.handle_tool_call("leak", {}) == "done"
    result.provider.shutdown()
    levels = {r.getMessage(): r.levelname for r in caplog.records}
    assert levels["plugin 'leaky' left a resource open at exit: Unclosed client session"] == (
        "DEBUG"
    )
    assert levels["Something else broke"] == "ERROR"


def _cli_subprocess(home: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memoryport.cli import main; main()",
            "--home",
            str(home),
            *args,
        ],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_configured_by_its_own_hermes_json_in_a_real_process(
    tmp_path: Path, double: HindsightDouble
) -> None:
    # a fresh process: the plugin fixes the path of ~/.hindsight/hermes.json at import
    home = _home(tmp_path)
    user = tmp_path / "someone"
    (user / ".hindsight").mkdir(parents=True)
    (user / ".hindsight" / "hermes.json").write_text(
        json.dumps({"hindsightApiUrl": double.base_url, "bankId": "from-file"})
    )
    row = _cli_subprocess(home, {"HOME": str(user)}, "plugins", "list", "--json")["plugins"][0]
    assert row["name"] == "hindsight" and row["loaded"] and len(row["tools"]) == 3


def test_configured_by_the_home_env_file(
    tmp_path: Path, double: HindsightDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HINDSIGHT_API_URL")  # restored (unset) after the test: open()
    monkeypatch.delenv("HINDSIGHT_BANK_ID")  # exports <home>/.env into the environment
    home = _home(tmp_path)
    (home / ".env").write_text(f"HINDSIGHT_API_URL={double.base_url}\nHINDSIGHT_BANK_ID=envbank\n")
    (home / ".env").chmod(0o600)
    memory = _memory(home)
    _turn(memory, "The boat is called Nimbus.")
    assert [m["text"] for m in double.banks["envbank"]] == [
        "User: The boat is called Nimbus.\nAssistant: Noted."
    ]
    memory.close()


def test_a_real_plugin_with_only_hooks_memoryport_never_fires(tmp_path: Path) -> None:
    # nyx-memory 7.16.0 (a dev dependency) also ships a general plugin, ``nyx-reveal``,
    # whose only hook rewrites the model's output: nothing for memoryport to run
    info = discover_general(tmp_path).get("nyx-reveal")
    assert info is not None and info.distribution == "nyx-memory"
    result = load_general("nyx-reveal", tmp_path)
    assert not result.ok
    assert result.error == (
        "general plugin 'nyx-reveal' registered only hooks memoryport never fires "
        "(transform_llm_output): nothing to run"
    )
    assert result.warnings == ["hooks memoryport never fires: transform_llm_output"]


def test_a_rejected_token_never_shows_in_tool_results_or_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "hs-wrong-token-7Qx9"
    with HindsightDouble("hs-right-key") as keyed:  # answers 401 quoting the header it got
        monkeypatch.setenv("HINDSIGHT_API_URL", keyed.base_url)
        monkeypatch.setenv("HINDSIGHT_API_TOKEN", wrong)
        memory = _memory(_home(tmp_path))
        answer = memory.call_tool("hindsight_recall", {"query": "anything"})
        _turn(memory, "Is the token safe?")
        memory.close()
        sent = {r.headers.get("authorization") for r in keyed.requests}
        assert sent == {f"Bearer {wrong}"}  # the plugin did send it; the double refused it
    parsed = json.loads(answer)
    assert parsed["success"] is False and "401" in parsed["error"] and "***" in parsed["error"]
    assert wrong not in answer
    assert not [r for r in caplog.records if wrong in r.getMessage()]


_STUCK_PLUGIN = """
import threading

GATE = threading.Event()
COUNT = []


def _block(args, **kwargs):
    GATE.wait(30)
    return "unblocked"


def _count(args, **kwargs):
    COUNT.append(1)
    return str(len(COUNT))


def register(ctx):
    schema = {"parameters": {"type": "object", "properties": {}}}
    ctx.register_tool("stuck_block", "stuck", dict(schema, name="stuck_block"), _block)
    ctx.register_tool("stuck_count", "stuck", dict(schema, name="stuck_count"), _count)
"""


def test_a_call_that_timed_out_while_queued_never_runs(tmp_path: Path) -> None:
    import sys

    home = tmp_path / "home"
    folder = home / "plugins" / "stuck"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: stuck\nprovides_tools: [stuck_block]\n")
    (folder / "__init__.py").write_text(_STUCK_PLUGIN, encoding="utf-8")
    result = load_general("stuck", home, timeout_s=1.0)
    provider = result.provider
    assert provider is not None
    module = next(
        m for n, m in sys.modules.items() if n.startswith("_memoryport_user_plugins.stuck")
    )
    with pytest.raises(TimeoutError):
        provider.handle_tool_call("stuck_block", {})  # the plugin's thread is now stuck
    with pytest.raises(TimeoutError):
        provider.handle_tool_call("stuck_count", {})  # queued behind it, given up
    module.GATE.set()
    assert provider.handle_tool_call("stuck_count", {}) == "1"  # the given-up call never ran
    provider.shutdown()
