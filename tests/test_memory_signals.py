"""Memory closes cleanly on SIGTERM and at interpreter exit: queued syncs are delivered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from typing import Any
    import memoryport
    from memoryport.config import Config

    log = Path(sys.argv[1])

    class Slow(memoryport.MemoryProvider):
        name = "slow"
        def is_available(self) -> bool: return True
        def initialize(self, session_id: str, **kw: Any) -> None: pass
        def get_tool_schemas(self) -> list: return []
        def sync_turn(self, user: str, assistant: str, **kw: Any) -> None:
            time.sleep(0.05)
            with log.open("a") as f: f.write(f"sync {user}\\n")
        def on_session_end(self, messages: list) -> None:
            with log.open("a") as f: f.write(f"end {len(messages)}\\n")
        def shutdown(self) -> None:
            with log.open("a") as f: f.write("shutdown\\n")

    mode = sys.argv[3]
    memory = memoryport.open(sys.argv[2], config=Config(), providers=[Slow()],
                             load_provider=False, handle_sigterm=mode == "sigterm")
    memory.start_session(source="cli")
    for i in range(5):
        turn = memory.begin_turn(f"question {i}")
        memory.end_turn(turn, f"answer {i}")
    if mode.startswith("sigterm"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
    """
)


@pytest.mark.parametrize("mode", ["sigterm", "exit"])
def test_queued_syncs_survive_shutdown(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    log = tmp_path / "log.txt"
    proc = subprocess.run(
        [sys.executable, str(script), str(log), str(tmp_path / "home"), mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    expected_code = 128 + signal.SIGTERM if mode == "sigterm" else 0
    assert proc.returncode == expected_code, proc.stderr
    lines = log.read_text().splitlines()
    assert lines[:5] == [f"sync question {i}" for i in range(5)]
    assert lines[5].startswith("end ") and lines[5] != "end 0"
    assert lines[6:] == ["shutdown"]


def test_without_opt_in_sigterm_is_the_host_s(tmp_path: Path) -> None:
    """A library installs no SIGTERM handler: the default action (death by signal) stands."""
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    log = tmp_path / "log.txt"
    proc = subprocess.run(
        [sys.executable, str(script), str(log), str(tmp_path / "home"), "sigterm-default"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert "shutdown" not in (log.read_text() if log.exists() else "")
