"""Run turns against a real full disk (``RLIMIT_FSIZE``, SIGXFSZ ignored); print JSON.

Usage: ``python disk_full_worker.py memory HOME TURNS`` or
``python disk_full_worker.py agent HOME BASE_URL``. Started as a subprocess by
``test_disk_full.py``: the file-size limit must not touch the test process.
"""

from __future__ import annotations

import io
import json
import resource
import signal
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from agent_support import make_memory, recorder
from memoryport.agent import Agent, ChatClient
from memoryport.errors import StoreError


def fill_disk(home: Path, headroom: int) -> None:
    """Let no file under ``home`` grow more than ``headroom`` bytes past the largest one."""
    largest = max(p.stat().st_size for p in home.rglob("*") if p.is_file())
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (largest + headroom, hard))


def free_disk() -> None:
    """Lift the limit again (up to the hard limit)."""
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


def memory_run(home: Path, turns: int) -> dict[str, Any]:
    """Turns until the disk is full; then retry the refused ones after freeing it."""
    rec = recorder()
    memory = make_memory(home, [rec])
    memory.end_turn(memory.begin_turn("warm up"), "ok")
    fill_disk(home, 512 * 1024)
    acked, refused, errors = 1, [], []
    for number in range(turns):
        turn = memory.begin_turn(f"turn {number} " + "x" * 200)
        try:
            memory.end_turn(turn, f"answer {number}")
            acked += 1
        except StoreError as exc:
            refused.append(turn)
            errors.append(str(exc))
            if len(refused) >= 5:
                break
    memory.flush(10)
    synced_while_full = sum(1 for name in rec.hooks_called() if name == "sync_turn")
    free_disk()
    for turn in refused:
        memory.end_turn(turn, turn.query.replace("turn", "answer").split(" x")[0])
    memory.flush(10)
    synced = sum(1 for name in rec.hooks_called() if name == "sync_turn")
    session = memory.session_id
    memory.close()
    return {"acked": acked, "refused": len(refused), "retried": len(refused),
            "synced_while_full": synced_while_full, "synced": synced,
            "session": session, "error": errors[0] if errors else ""}


def agent_run(home: Path, base_url: str) -> dict[str, Any]:
    """A chat whose second turn hits the full disk; the third (disk freed) stores both."""
    from memoryport.cli.chat import _Repl, run_command

    memory = make_memory(home, [recorder()])
    client = ChatClient("fake-model", base_url=base_url, api_key="test")
    agent = Agent(memory, client)
    first = agent.run_turn("one")
    fill_disk(home, 0)
    shown = io.StringIO()
    with redirect_stdout(shown):
        _Repl(agent).answer("two")  # what the chat user sees
    pending = len(agent.unsaved)
    told: list[str] = []
    run_command(agent, "/retry", told.append)  # still full: still kept
    free_disk()
    third = agent.run_turn("three")
    session = agent.memory.session_id
    history = len(agent.history)
    agent.close()
    return {"first": first.unsaved, "shown": shown.getvalue(), "pending": pending,
            "retry": told, "third": third.unsaved, "unsaved_after": len(agent.unsaved),
            "session": session, "history": history}


def main() -> None:
    """Entry point (see the module docstring)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    mode, home = sys.argv[1], Path(sys.argv[2])
    if mode == "memory":
        report = memory_run(home, int(sys.argv[3]))
    else:
        report = agent_run(home, sys.argv[3])
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main()
