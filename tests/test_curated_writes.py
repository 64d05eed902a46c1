"""Curated writes from every entry point: CLI, tool, Python API; and what the CLI shows.

The provider plugin ``write_recorder`` (tests/fixtures/plugins) is loaded for real as
``memory.provider`` and appends each ``on_memory_write`` it receives to a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import memoryport
from fixtures.helpers import install_plugin, isolate
from memoryport.cli import main
from memoryport.providers.curated import CuratedMemory, create_builtin_provider

MEMORYPORT_BIN = Path(sys.executable).parent / "memoryport"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def recorder(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "writes.jsonl"
    monkeypatch.setenv("WRITE_RECORDER_LOG", str(log))
    install_plugin(home, "write_recorder")
    assert run("config", "set", "memory.provider", "write_recorder").exit_code == 0
    return log


def run(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def recorded(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def memory_file(home: Path) -> Path:
    return home / "memories" / "MEMORY.md"


# ------------------------------------------------------------ item 1: on_memory_write


def test_cli_writes_reach_the_active_provider(home: Path, recorder: Path) -> None:
    assert run("memory", "add", "Project uses pytest.").exit_code == 0
    assert run("memory", "replace", "pytest", "Project uses pytest and ruff.").exit_code == 0
    assert run("memory", "add", "--target", "user", "User likes tea.").exit_code == 0
    assert run("memory", "remove", "ruff").exit_code == 0
    lines = recorded(recorder)
    assert [(r["action"], r["target"]) for r in lines] == [
        ("add", "memory"),
        ("replace", "memory"),
        ("add", "user"),
        ("remove", "memory"),
    ]
    assert lines[1]["content"] == "Project uses pytest and ruff."
    assert all(r["source"] == "cli" and r["initialized"] for r in lines)
    refused = run("memory", "remove", "nothing like this")
    assert refused.exit_code == 1 and len(recorded(recorder)) == 4  # refused: not mirrored


def test_cli_write_in_a_real_process_reaches_the_provider(home: Path, recorder: Path) -> None:
    done = subprocess.run(
        [str(MEMORYPORT_BIN), "memory", "add", "--user", "alice", "Alice prefers vim."],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert recorded(recorder) == [
        {
            "action": "add",
            "target": "memory",
            "content": "Alice prefers vim.",
            "source": "cli",
            "initialized": True,
            "user_id": "alice",
        }
    ]


def test_tool_and_python_api_writes_reach_the_provider(home: Path, recorder: Path) -> None:
    memory = memoryport.open(home)
    try:
        memory.start_session(source="test")
        through_api = json.loads(
            memory.call_tool("memory", {"action": "add", "content": "Deploys on Fridays."})
        )
        turn = memory.begin_turn("remember that")
        through_turn = json.loads(
            turn.handle_tool_call(
                "memory",
                {"action": "add", "target": "user", "content": "User is Sam."},
                tool_call_id="c1",
            )
        )
        memory.flush(10)
    finally:
        memory.close()
    assert through_api["success"] and through_turn["success"]
    assert [(r["action"], r["content"]) for r in recorded(recorder)] == [
        ("add", "Deploys on Fridays."),
        ("add", "User is Sam."),
    ]


# ------------------------------------------------------------ item 2 and 6: stdin, --json


def test_invalid_utf8_on_stdin_is_refused_and_changes_nothing(home: Path) -> None:
    assert run("memory", "add", "Keep me.").exit_code == 0
    before = memory_file(home).read_bytes()
    result = run("memory", "add", "-", input=b"caf\xe9 au lait")
    assert result.exit_code == 1
    assert "stdin is not valid UTF-8" in result.output and "0xe9 at offset 3" in result.output
    assert "Traceback" not in result.output
    as_json = run("memory", "replace", "Keep", "-", "--json", input=b"\xff\xfe")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["success"] is False
    assert memory_file(home).read_bytes() == before


def test_json_output_of_writes(home: Path) -> None:
    added = run("memory", "add", "--json", "Repo uses uv.")
    assert added.exit_code == 0
    payload = json.loads(added.stdout)
    assert payload["success"] is True and payload["action"] == "add"
    assert payload["target"] == "memory" and payload["entry_count"] == 1
    replaced = json.loads(run("memory", "replace", "--json", "uv", "Repo uses uv 0.5.").stdout)
    assert replaced["action"] == "replace" and replaced["message"] == "Entry replaced."
    missing = run("memory", "remove", "--json", "nothing")
    assert missing.exit_code == 1
    error = json.loads(missing.stdout)
    assert error["success"] is False and "No entry in MEMORY.md matched" in error["error"]
    assert error["current_entries"] == ["Repo uses uv 0.5."]
    removed = json.loads(run("memory", "remove", "--json", "uv").stdout)
    assert removed["success"] and removed["entry_count"] == 0


def test_read_commands_degrade_on_an_invalid_config(home: Path) -> None:
    assert run("memory", "add", "Still readable.").exit_code == 0
    (home / "config.yaml").write_text("memory: [unclosed\n", encoding="utf-8")
    listing = run("memory", "list")
    assert listing.exit_code == 0, listing.output
    assert "Still readable." in listing.stdout
    assert "warning:" in listing.stderr and "default settings" in listing.stderr
    as_json = run("memory", "list", "--json")
    assert json.loads(as_json.stdout)["targets"][0]["entries"] == ["Still readable."]
    assert run("memory", "path", "--target", "memory").exit_code == 0
    write = run("memory", "add", "Not with a broken config.")
    assert write.exit_code == 1 and "config.yaml" in write.output
    assert CuratedMemory(home).entries("memory") == ["Still readable."]


# ------------------------------------------------------------ item 3 and 4: messages, UTF-8


def test_tool_errors_name_the_real_argument_and_the_wrong_value(tmp_path: Path) -> None:
    provider = create_builtin_provider(tmp_path)
    provider.handle_tool_call("memory", {"action": "add", "content": "An entry."})

    def error(**args: Any) -> str:
        result = json.loads(provider.handle_tool_call("memory", args))
        assert result["success"] is False, args
        return str(result["error"])

    assert error(action="add", content=123) == "content must be a string, got int 123."
    assert "content must be a string, got list" in error(
        action="replace", old_text="entry", content=["x"]
    )
    assert "new_content" not in error(action="replace", old_text="entry", content="")
    assert "content cannot be empty" in error(action="replace", old_text="entry", content="  ")
    assert "old_text must be a string, got int 5" in error(action="remove", old_text=5)
    assert "action must be a string" in error(action=7, content="x")
    assert "action is required" in error(content="x")
    assert "Invalid target 7 (int)" in error(action="add", target=7, content="x")
    assert "Operation 1 (add): content must be a string, got float 1.5" in error(
        operations=[{"action": "add", "content": 1.5}]
    )


def test_lone_surrogates_are_replaced_never_crash(tmp_path: Path) -> None:
    provider = create_builtin_provider(tmp_path)
    result = json.loads(
        provider.handle_tool_call("memory", {"action": "add", "content": "x \ud800 y"})
    )
    assert result["success"], result
    store = CuratedMemory(tmp_path)
    store.add("user", "pair \ud83d\ude00 ok")  # a surrogate pair becomes the real character
    assert store.entries("memory") == ["x \ufffd y"]
    assert store.entries("user") == ["pair \U0001f600 ok"]
    removed = json.loads(
        provider.handle_tool_call("memory", {"action": "remove", "old_text": "\udcff y"})
    )
    assert removed["success"] is True and store.entries("memory") == []
    memory_file(tmp_path).read_bytes().decode("utf-8")  # the file is valid UTF-8


def test_undecodable_argv_bytes_from_a_shell(home: Path) -> None:
    done = subprocess.run(
        [str(MEMORYPORT_BIN).encode(), b"memory", b"add", b"caf\xe9 note"],
        capture_output=True,
        env=os.environ.copy(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert CuratedMemory(home).entries("memory") == ["caf\ufffd note"]


# ------------------------------------------------------------ item 7: agent_notes


def test_agent_notes_per_user_keeps_each_users_notes_apart(home: Path) -> None:
    refused = run("config", "set", "memory.agent_notes", "everyone")
    assert refused.exit_code != 0 and "shared" in refused.output
    assert run("memory", "add", "Shared note.").exit_code == 0
    assert run("config", "set", "memory.agent_notes", "per_user").exit_code == 0
    assert run("memory", "add", "--user", "alice", "Alice's repo uses Go.").exit_code == 0
    assert run("memory", "add", "--user", "bob", "Bob's repo uses Rust.").exit_code == 0
    alice_path = home / "memories" / "users" / "alice" / "MEMORY.md"
    assert alice_path.read_text(encoding="utf-8") == "Alice's repo uses Go."
    assert run("memory", "path", "--user", "bob", "--target", "memory").stdout.strip() == str(
        home / "memories" / "users" / "bob" / "MEMORY.md"
    )
    with memoryport.open(home, user_id="alice") as memory:
        prompt = memory.start_session()
    assert "Alice's repo uses Go." in prompt
    assert "Bob's repo" not in prompt and "Shared note." not in prompt
    assert memory_file(home).read_text(encoding="utf-8") == "Shared note."


def test_agent_notes_default_is_shared(home: Path) -> None:
    assert run("memory", "add", "--user", "alice", "One note for all.").exit_code == 0
    with memoryport.open(home, user_id="bob") as memory:
        assert "One note for all." in memory.start_session()


# ------------------------------------------------------------ item 8: display


def test_list_escapes_terminal_control_characters(home: Path) -> None:
    memory_file(home).parent.mkdir(parents=True)
    memory_file(home).write_text("Title \x1b]0;pwned\x07 set\n§\nBell\x07 and DEL\x7fX", "utf-8")
    listing = run("memory", "list", "--target", "memory")
    assert listing.exit_code == 0
    assert "\x1b" not in listing.output and "\x07" not in listing.output
    assert "\x7f" not in listing.output
    assert "Title \\e]0;pwned\\a set" in listing.output and "DEL\\x7fX" in listing.output
