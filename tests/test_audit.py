"""The audit log: every memory read and write through the core API is recorded (tool calls
with the revision a write made, recall injections as reads), queryable from Python and
``memoryport audit``, with a retention setting."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import memoryport
from manager_doubles import Recorder
from memoryport.admin import audit
from memoryport.cli import main


def _events(home: Path, **filters: object) -> list[dict[str, object]]:
    return [e.to_dict() for e in audit.events(home, **filters)]  # type: ignore[arg-type]


def test_tool_write_is_recorded_with_its_revision_shell_and_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with memoryport.open(home, platform="mcp") as memory:
        memory.start_session(source="mcp")
        sid = memory.session_id
        memory.call_tool("memory", {"action": "add", "target": "memory", "content": "Likes tea"})
        memory.call_tool("memory", {"action": "add", "target": "user", "content": "Name: Ana"})
        memory.call_tool("session_search", {"query": "tea"})
    rows = _events(home)
    writes = [r for r in rows if r["kind"] == "write"]
    assert [(w["action"], w["target"], w["revision"]) for w in writes] == [
        ("memory.add", "user", "user:1"), ("memory.add", "memory", "memory:1")]
    assert all(w["shell"] == "mcp" and w["session_id"] == sid for w in writes)
    reads = [r for r in rows if r["kind"] == "read"]
    assert reads[0]["action"] == "session_search"


def test_refused_write_is_recorded_without_a_revision(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with memoryport.open(home) as memory:
        memory.start_session()
        memory.call_tool("memory", {"action": "remove", "target": "memory", "old_text": "nope"})
    (event,) = _events(home)
    assert event["action"] == "memory.remove (refused)" and event["revision"] == ""
    assert str(event["detail"]).startswith("refused: ")


def test_recall_injection_is_logged_as_a_read_with_the_items_shown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    recorder = Recorder(recall="the user lives in Lisbon")
    with memoryport.open(home, providers=[recorder], load_provider=False) as memory:
        memory.start_session()
        turn = memory.begin_turn("where do I live?")
        memory.end_turn(turn, "Lisbon")
    (event,) = [e for e in _events(home) if e["action"] == "recall"]
    assert event["kind"] == "read" and event["target"] == "recorder"
    detail = json.loads(str(event["detail"]))
    assert detail["turn"] == 1
    assert detail["items"] == [{"provider": "recorder", "text": "the user lives in Lisbon"}]


def test_retention_prunes_old_events_and_zero_keeps_everything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = audit.audit_log(home)
    old = time.time() - 10 * 86_400
    log.append(shell="cli", kind="read", action="old", ts=old)
    log.append(shell="cli", kind="read", action="new")
    assert audit.retention_days(home) == audit.DEFAULT_RETENTION_DAYS
    assert audit.set_retention_days(home, 0) == 0
    assert log.count() == 2
    assert audit.set_retention_days(home, 5) == 1
    assert [e.action for e in audit.events(home)] == ["new"]
    with pytest.raises(ValueError, match="0 \\(keep forever\\)"):
        log.set_retention_days(-1)


def test_parse_since_accepts_durations_and_iso_dates_and_explains_the_rest() -> None:
    now = 1_000_000.0
    assert audit.parse_since("2h", now) == now - 7200
    assert audit.parse_since("1w", now) == now - 604_800
    assert audit.parse_since("1970-01-02", now) == 86_400
    with pytest.raises(ValueError, match="use a duration such as 30m"):
        audit.parse_since("yesterday-ish", now)


def test_audit_cli_lists_filters_json_and_sets_retention(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with memoryport.open(home, platform="cli") as memory:
        memory.start_session()
        memory.call_tool("memory", {"action": "add", "target": "memory", "content": "Uses vim"})
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "audit", "--since", "1h", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["count"] == 1 and data["events"][0]["revision"] == "memory:1"
    assert data["retention_days"] == audit.DEFAULT_RETENTION_DAYS
    text = runner.invoke(main, ["--home", str(home), "audit", "--kind", "write"])
    assert text.exit_code == 0 and "memory.add" in text.output
    bad = runner.invoke(main, ["--home", str(home), "audit", "--since", "soon"])
    assert bad.exit_code == 2 and "use a duration such as 30m" in bad.output
    kept = runner.invoke(main, ["--home", str(home), "audit", "--retention-days", "30",
                                "--json"])
    assert json.loads(kept.output)["retention_days"] == 30


def test_the_audit_file_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    audit.record(home, "cli", "read", "check")
    assert (home / audit.DB_NAME).stat().st_mode & 0o777 == 0o600


def test_reading_an_empty_home_creates_no_audit_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert audit.events(home) == []
    assert audit.retention_days(home) == audit.DEFAULT_RETENTION_DAYS
    assert not (home / audit.DB_NAME).exists()


def test_many_homes_in_one_process_keep_few_files_open_and_all_still_record(
        tmp_path: Path) -> None:
    homes = [tmp_path / f"h{i}" for i in range(audit.OPEN_LOGS + 3)]
    first = audit.audit_log(homes[0])
    for home in homes:
        audit.record(home, "cli", "read", "one")
    first.append(shell="cli", kind="read", action="after eviction")  # reopens itself
    audit.record(homes[0], "cli", "read", "two")
    assert [e.action for e in audit.events(homes[0])] == ["two", "after eviction", "one"]
