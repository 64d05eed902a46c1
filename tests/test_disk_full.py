"""A real full disk (``RLIMIT_FSIZE`` in a subprocess): acknowledged == stored.

A turn the session store could not write raises ``StoreError``, leaves nothing half
written, is not synced to providers, and is stored when ``end_turn`` is called again; the
reference agent tells the user, keeps the turn and stores it with the next message.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from chat_rules import assert_replays
from fake_openai import FakeOpenAI, Reply
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

TESTS = Path(__file__).parent


def run_worker(*args: str) -> dict[str, Any]:
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, str(TESTS / "disk_full_worker.py"), *args],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("REPORT "))
    report: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
    return report


def test_memory_turns_on_a_full_disk_are_refused_then_retried(tmp_path: Path) -> None:
    report = run_worker("memory", str(tmp_path), "3000")
    assert report["refused"] >= 1, report  # the disk really filled up
    assert "was not stored" in report["error"] and "retry" in report["error"]
    # Providers heard only of stored turns (the warm-up turn + every acknowledged one) ...
    assert report["synced_while_full"] == report["acked"]
    # ... and of the refused ones once they were stored.
    assert report["synced"] == report["acked"] + report["retried"]
    with SQLiteSessionStore(tmp_path / "state.db") as store:
        messages = store.get_messages(report["session"])
        assert len(messages) == 2 * (report["acked"] + report["retried"])  # nothing half-stored
        assert [m.role for m in messages] == ["user", "assistant"] * (len(messages) // 2)
        assert_replays(store, report["session"])
    with sqlite3.connect(tmp_path / "state.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_agent_keeps_an_unsaved_turn_and_tells_the_user(tmp_path: Path) -> None:
    replies = [Reply(content="First."), Reply(content="Second."), Reply(content="Third.")]
    with FakeOpenAI(replies) as server:
        report = run_worker("agent", str(tmp_path), server.base_url)
    assert report["first"] == ""
    assert "Second." in report["shown"]  # the answer was shown ...
    assert "not saved yet" in report["shown"] and "/retry" in report["shown"]  # ... and told
    assert report["pending"] == 1
    assert report["retry"] and report["retry"][0].startswith("Still not saved (1 turn)")
    assert report["third"] == "" and report["unsaved_after"] == 0
    with SQLiteSessionStore(tmp_path / "state.db") as store:
        contents = [m.content for m in store.get_messages(report["session"])]
    assert contents == ["one", "First.", "two", "Second.", "three", "Third."]
    assert report["history"] == 6
