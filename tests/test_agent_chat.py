"""``memoryport chat`` through click's runner (the tmux test drives a real terminal)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fake_openai import FakeOpenAI, Reply
from memoryport.api import open_memory
from memoryport.cli import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORYPORT_HOME", str(tmp_path))
    monkeypatch.delenv("MEMORYPORT_PROFILE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path


def write_agent_config(home: Path, server: FakeOpenAI, **agent: Any) -> None:
    block = {"model": "configured-model", "base_url": server.base_url,
             "api_key_env": "FAKE_KEY", **agent}
    (home / "config.yaml").write_text(yaml.safe_dump({"agent": block}))


def test_one_shot_prints_only_the_scrubbed_answer(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-from-env")
    reply = Reply(content="The answer <memory-context>hidden</memory-context>is 42.")
    with FakeOpenAI([reply]) as server:
        write_agent_config(home, server)
        result = CliRunner().invoke(main, ["chat", "-m", "What is the answer?"])
    assert result.exit_code == 0, result.output
    assert result.output == "The answer is 42.\n"
    assert server.requests[0]["model"] == "configured-model"
    assert server.api_keys == ["sk-from-env"]


def test_flags_override_config(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeOpenAI([Reply(content="hi")]) as server:
        (home / "config.yaml").write_text(yaml.safe_dump({"agent": {"base_url": "http://x.invalid"}}))
        args = ["chat", "--model", "flag-model", "--base-url", server.base_url, "-m", "yo"]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert server.requests[0]["model"] == "flag-model"


def test_interactive_session_with_slash_commands(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    script = [Reply(content="Nice to meet you, Ada."), Reply(content="Second answer.")]
    lines = ["My name is Ada.", "/title Intro chat", "/memory", "/new", "Again",
             "/search Ada", "/branch", "/bogus", "/exit"]
    with FakeOpenAI(script) as server:
        write_agent_config(home, server)
        result = CliRunner().invoke(main, ["chat"], input="\n".join(lines) + "\n")
    out = result.output
    assert result.exit_code == 0, out
    assert "Nice to meet you, Ada." in out and "Second answer." in out
    assert "Title set: Intro chat" in out
    assert "[memory] 0 entries" in out and "[user] 0 entries" in out
    first_session = out.split("session ", 1)[1].split()[0]
    search_output = out.split("New session", 1)[1]
    assert f"{first_session}" in search_output and "Intro chat" in search_output
    assert "Branched into session" in out
    assert "Unknown command" in out
    assert out.rstrip().endswith("Bye.")


def test_missing_openai_says_how_to_install(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def no_openai(name: str, *args: Any) -> Any:
        return None if name == "openai" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", no_openai)
    result = CliRunner().invoke(main, ["chat", "-m", "hi"])
    assert result.exit_code == 1
    assert "install memoryport[agent]" in result.output


def test_model_errors_are_reported_cleanly(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeOpenAI() as server:
        url = server.base_url.replace("/v1", "/nowhere")
        result = CliRunner().invoke(main, ["chat", "--base-url", url, "-m", "hi"])
    assert result.exit_code == 1
    assert "model error" in result.output


def test_resume_flag_loads_the_stored_session(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeOpenAI([Reply(content="Noted, Ada."), Reply(content="You are Ada.")]) as server:
        write_agent_config(home, server)
        runner = CliRunner()
        assert runner.invoke(main, ["chat", "-m", "I am Ada."]).exit_code == 0
        with open_memory(home, "default", load_provider=False) as memory:
            [summary] = memory.sessions.list_sessions()
        result = runner.invoke(main, ["chat", "--session", summary.session.id, "-m", "Who am I?"])
        missing = runner.invoke(main, ["chat", "--session", "nope", "-m", "hi"])
    assert result.exit_code == 0 and result.output == "You are Ada.\n"
    contents = [m["content"] for m in server.requests[1]["messages"][1:]]
    assert contents[:2] == ["I am Ada.", "Noted, Ada."]
    assert missing.exit_code == 1 and "nope" in missing.output


def test_connection_error_names_the_url(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    monkeypatch.setenv("FAKE_KEY", "k")
    with socket.socket() as sock:  # a loopback port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    result = CliRunner().invoke(main, ["chat", "--base-url", url, "-m", "hi"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert f"127.0.0.1:{port}/v1" in lines[0] and "cannot reach the model endpoint" in lines[0]


def test_user_flag_scopes_sessions(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    script = [Reply(content="Hi Alice."), Reply(content="Hi Bob.")]
    with FakeOpenAI(script, default=Reply(content="ok")) as server:
        write_agent_config(home, server)
        runner = CliRunner()
        alice = runner.invoke(main, ["chat", "--user", "alice", "-m", "I am Alice, secret 7."])
        bob = runner.invoke(main, ["chat", "--user", "bob"], input="/search secret\n/exit\n")
        blank = runner.invoke(main, ["chat", "--user", "  ", "-m", "hi"])
    assert alice.exit_code == 0 and alice.output == "Hi Alice.\n"
    assert bob.exit_code == 0 and "user bob" in bob.output
    assert "No past sessions match 'secret'." in bob.output  # alice's session is not bob's
    assert blank.exit_code == 2 and "user id" in blank.output
    with open_memory(home, "default", "alice", load_provider=False) as memory:
        [summary] = memory.sessions.list_sessions()
    assert summary.session.user_id == "alice"
    with FakeOpenAI([Reply(content="x")]) as server:
        write_agent_config(home, server)
        args = ["chat", "--user", "bob", "--session", summary.session.id, "-m", "hi"]
        stolen = CliRunner().invoke(main, args)
    assert stolen.exit_code == 1 and "unknown session" in stolen.output
    with open_memory(home, "default", "bob", load_provider=False) as memory:
        assert memory.sessions.list_sessions() == []  # bob's empty chat stored nothing


def test_retry_with_nothing_unsaved(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeOpenAI([Reply(content="hi")]) as server:
        write_agent_config(home, server)
        result = CliRunner().invoke(main, ["chat"], input="/retry\n/exit\n")
    assert result.exit_code == 0 and "Nothing to retry" in result.output
