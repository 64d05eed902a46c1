"""Pause: memory writes and/or recall stop for every shell on a home until resumed. Tool
writes are refused with a clear error, reads still run, provider syncs are held and
delivered after the resume, recall injects nothing; ``memoryport status`` shows it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import memoryport
from manager_doubles import Recorder
from memoryport.admin import audit
from memoryport.admin.curated import open_curated
from memoryport.admin.pause import (
    MemoryPaused,
    check_writes,
    is_read_call,
    pause,
    pause_state,
    resume,
)
from memoryport.cli import main


def _add(memory: memoryport.Memory, text: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(
        memory.call_tool("memory", {"action": "add", "target": "memory", "content": text}))
    return result


def test_paused_writes_refuse_tool_writes_clearly_and_change_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pause(home, writes=True, by="test", reason="checking")
    with memoryport.open(home) as memory:
        memory.start_session()
        refused = _add(memory, "Likes tea")
        search = json.loads(memory.call_tool("session_search", {"query": "tea"}))
    assert refused["success"] is False and refused["error_type"] == "MemoryPaused"
    assert "Memory writes are paused" in str(refused["error"])
    assert "resume" in str(refused["error"])
    assert search.get("success") is not False
    assert open_curated(home).entries("memory") == []
    (event,) = [e for e in audit.events(home) if e.kind == "write" and e.action != "pause"]
    assert event.action == "memory.add (refused)"


def test_syncs_are_held_while_paused_and_delivered_once_after_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    recorder = Recorder()
    with memoryport.open(home, providers=[recorder], load_provider=False) as memory:
        memory.start_session()
        pause(home, writes=True)
        for text in ("first", "second"):
            memory.end_turn(memory.begin_turn(text), f"answer {text}")
        memory.flush(5)
        assert recorder.synced == []
        assert audit.audit_log(home).held_count() == 2
        resume(home)
        memory.end_turn(memory.begin_turn("third"), "answer third")
        memory.flush(5)
    assert recorder.synced == [("first", "answer first"), ("second", "answer second"),
                               ("third", "answer third")]
    assert audit.audit_log(home).held_count() == 0


def test_paused_recall_injects_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    recorder = Recorder(recall="lives in Lisbon")
    with memoryport.open(home, providers=[recorder], load_provider=False) as memory:
        memory.start_session()
        assert "Lisbon" in str(memory.begin_turn("where?").api_user_message())
        pause(home, writes=False, recall=True)
        turn = memory.begin_turn("where now?")
        assert turn.contexts == [] and turn.api_user_message() == "where now?"
        assert "Lisbon" not in str(turn.api_user_message())
        assert _add(memory, "recall pause lets writes through")["success"] is True


def test_another_process_honours_the_pause(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pause(home, writes=True, by="ui")
    script = textwrap.dedent(f"""
        import json, memoryport
        with memoryport.open({str(home)!r}, platform="agent") as m:
            m.start_session()
            print(m.call_tool("memory", {{"action": "add", "target": "user", "content": "x"}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1])["error_type"] == "MemoryPaused"


def test_status_shows_the_pause_and_resume_clears_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runner = CliRunner()
    pause(home, writes=True, recall=True, by="ui", reason="audit")
    data = json.loads(runner.invoke(main, ["--home", str(home), "status", "--no-probe",
                                           "--json"]).output)
    assert data["pause"]["writes"] and data["pause"]["recall"] and data["pause"]["by"] == "ui"
    resume(home)
    assert pause_state(home).active is False
    data = json.loads(runner.invoke(main, ["--home", str(home), "status", "--no-probe",
                                           "--json"]).output)
    assert data["pause"]["active"] is False


def test_a_damaged_pause_file_keeps_writes_paused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "pause.json").write_text("{not json", encoding="utf-8")
    assert pause_state(home).writes is True
    resume(home)
    assert pause_state(home).active is False


def test_read_calls_are_told_apart_from_writes() -> None:
    assert is_read_call("session_search", {"query": "x"})
    assert is_read_call("fact_store", {"action": "search", "query": "x"})
    assert not is_read_call("fact_store", {"action": "add", "content": "x"})
    assert not is_read_call("memory", {"action": "add"})
    assert not is_read_call("fact_feedback", {"action": "helpful", "fact_id": 1})


def test_check_writes_guards_shell_writes_that_skip_the_tool(tmp_path: Path) -> None:
    home = tmp_path / "home"
    check_writes(home, "the edit")
    pause(home, writes=True, by="ui")
    with pytest.raises(MemoryPaused, match="the edit was not made"):
        check_writes(home, "the edit")
    pause(home, writes=False, recall=True)
    check_writes(home, "the edit")


def test_a_quick_switch_of_the_same_size_is_seen_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for _ in range(20):
        pause(home, writes=True, recall=False, by="ui")
        assert pause_state(home).writes and not pause_state(home).recall
        pause(home, writes=False, recall=True, by="ui")
        assert pause_state(home).recall and not pause_state(home).writes
