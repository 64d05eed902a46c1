"""``memoryport chat`` in a real terminal: tmux types, the test reads the screen.

tmux is installed by ``make test`` (the ``tmux`` prerequisite target). The tmux server runs
on a private socket (``-L``) with no user config, so it never touches the user's sessions.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fake_openai import FakeOpenAI, Reply
from memoryport.api import open_memory

MEMORYPORT = Path(sys.executable).parent / "memoryport"
WAIT_S = 30.0


class Tmux:
    """One detached tmux session on a private server."""

    def __init__(self, command: str) -> None:
        self.socket = f"memoryport-test-{uuid.uuid4().hex[:8]}"
        self.name = "chat"
        self.run("new-session", "-d", "-s", self.name, "-x", "160", "-y", "48", command)
        self.run("set-option", "-t", self.name, "remain-on-exit", "on")

    def run(self, *args: str) -> str:
        cmd = ["tmux", "-L", self.socket, "-f", "/dev/null", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=20)
        return done.stdout

    def send(self, text: str) -> None:
        self.run("send-keys", "-t", self.name, "-l", text)
        self.run("send-keys", "-t", self.name, "Enter")

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-J", "-S", "-200", "-t", self.name)

    def dead(self) -> bool:
        return self.run("display-message", "-p", "-t", self.name, "#{pane_dead}").strip() == "1"

    def wait_for(self, text: str) -> str:
        """Poll the screen until ``text`` shows up (fails with the screen after WAIT_S)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            screen = self.screen()
            if text in screen or time.monotonic() > deadline:
                assert text in screen, f"{text!r} never appeared; screen:\n{screen}"
                return screen
            time.sleep(0.05)

    def wait_dead(self) -> None:
        """Poll until the chat process has exited."""
        deadline = time.monotonic() + WAIT_S
        while not self.dead():
            assert time.monotonic() < deadline, f"chat did not exit; screen:\n{self.screen()}"
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       check=False, timeout=20)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    answer = "Hello Ada! <memory-context>SECRET RECALL</memory-context>Nice to meet you."
    chunks = ["Hello Ada! <memory-", "context>SECRET", " RECALL</memory-con", "text>Nice to ",
              "meet you."]
    with FakeOpenAI([Reply(content=answer, chunks=chunks)]) as fake:
        yield fake


def test_chat_in_a_real_terminal(tmp_path: Path, server: FakeOpenAI) -> None:
    assert shutil.which("tmux"), "tmux is missing: run `make test`, which installs it"
    home = tmp_path / "home"
    home.mkdir()
    config = {"agent": {"model": "tmux-model", "base_url": server.base_url,
                        "api_key_env": "TMUX_TEST_KEY"}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    env = {"MEMORYPORT_HOME": str(home), "TMUX_TEST_KEY": "sk-tmux", "TERM": "xterm"}
    command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command += f" {shlex.quote(str(MEMORYPORT))} chat"
    tmux = Tmux(command)
    try:
        tmux.wait_for("you> ")
        tmux.send("My name is Ada.")
        screen = tmux.wait_for("Nice to meet you.")
        assert "Hello Ada! Nice to meet you." in screen
        tmux.send("/title First chat")
        tmux.wait_for("Title set: First chat")
        tmux.send("/memory")
        screen = tmux.wait_for("[user] 0 entries")
        assert "[memory] 0 entries" in screen
        tmux.send("/exit")
        tmux.wait_dead()
        screen = tmux.screen()
    finally:
        tmux.close()
    assert "Bye." in screen
    assert "SECRET" not in screen and "RECALL" not in screen
    assert "Traceback" not in screen
    assert server.requests[0]["model"] == "tmux-model"
    assert server.requests[0]["stream"] is True
    assert server.api_keys == ["sk-tmux"]
    # What the person saw is what was stored: the session, its title, the clean answer.
    with open_memory(home, "default", load_provider=False) as memory:
        [summary] = memory.sessions.list_sessions()
        stored = memory.sessions.get_messages(summary.session.id)
    assert summary.session.title == "First chat"
    assert [m.content for m in stored] == ["My name is Ada.", "Hello Ada! Nice to meet you."]
