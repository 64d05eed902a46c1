"""Issue 13: ``memoryport why REF`` shows where a memory came from — the provenance and the
text of the turn it was written in — for curated revisions and facts alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import memoryport
from memoryport.admin.why import parse_ref, why
from memoryport.cli import main
from memoryport.errors import MemoryportError


def _remember(home: Path) -> str:
    memory = memoryport.open(home=home)
    memory.start_session(source="cli")
    turn = memory.begin_turn("Please remember that I live in Lisbon and love cycling.")
    turn.handle_tool_call("memory", {"action": "add", "target": "user",
                                     "content": "Lives in Lisbon; loves cycling."},
                          tool_call_id="call_lisbon")
    memory.end_turn(turn, "Noted.")
    session_id = memory.session_id
    memory.close()
    return session_id


def test_why_a_curated_revision_shows_the_turn_that_wrote_it(tmp_path: Path) -> None:
    session_id = _remember(tmp_path)
    found = why(tmp_path, "user:1")
    assert found["kind"] == "curated"
    assert found["source"] == "memory_tool"
    assert found["tool_call_id"] == "call_lisbon"
    assert found["session_id"] == session_id
    turn = found["turn"]
    assert turn["found"] is True
    assert turn["user_message"]["content"].startswith("Please remember that I live in Lisbon")
    calls = found["revision"]["changes"]
    assert calls[0]["content"] == "Lives in Lisbon; loves cycling."


def test_why_a_fact_shows_its_source_turn(tmp_path: Path) -> None:
    memory = memoryport.open(home=tmp_path)  # the holographic fact store is on by default
    memory.start_session(source="cli")
    memory.end_turn(memory.begin_turn("I moved to Berlin last year."), "Nice!")
    memory.flush(10)
    memory.close()
    listed = CliRunner().invoke(main, ["facts", "list", "--home", str(tmp_path), "--json"])
    assert listed.exit_code == 0, listed.output
    fact_id = json.loads(listed.output)["facts"][0]["fact_id"]
    for ref in (f"fact:{fact_id}", f"#{fact_id}", str(fact_id)):
        found = why(tmp_path, ref)
        assert found["kind"] == "fact" and found["ref"] == f"fact:{fact_id}"
        assert "Berlin" in found["source_text"]


def test_why_cli_prints_and_emits_json(tmp_path: Path) -> None:
    _remember(tmp_path)
    runner = CliRunner()
    text = runner.invoke(main, ["why", "user:1", "--home", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "memory_tool" in text.output and "call_lisbon" in text.output
    assert "user: Please remember that I live in Lisbon" in text.output
    data = runner.invoke(main, ["why", "user:1", "--home", str(tmp_path), "--json"])
    assert json.loads(data.output)["turn"]["found"] is True


@pytest.mark.parametrize("ref", ["", "memory:0", "notes:3", "fact:x", "#", "memory:abc"])
def test_bad_references_say_what_is_accepted(tmp_path: Path, ref: str) -> None:
    with pytest.raises(MemoryportError, match=r"memory:12|TARGET:N"):
        parse_ref(ref) if ref.startswith(("fact", "#", "notes")) or not ref else why(
            tmp_path, ref)
    result = CliRunner().invoke(main, ["why", ref or " ", "--home", str(tmp_path)])
    assert result.exit_code != 0
    assert "Traceback" not in result.output


def test_why_for_an_unknown_id_is_a_clear_error(tmp_path: Path) -> None:
    _remember(tmp_path)
    result = CliRunner().invoke(main, ["why", "memory:99", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert "memory:99" in result.output or "99" in result.output


def test_why_is_scoped_to_the_user(tmp_path: Path) -> None:
    """Issue 13: provenance is per user — another user's USER.md revisions and facts are
    not found (and so not shown) in this user's scope."""
    memory = memoryport.open(home=tmp_path, user_id="alice")
    memory.start_session(source="cli")
    turn = memory.begin_turn("I live in Lisbon.")
    turn.handle_tool_call("memory", {"action": "add", "target": "user",
                                     "content": "Alice lives in Lisbon."},
                          tool_call_id="call_alice")
    memory.end_turn(turn, "Noted.")
    memory.flush(10)
    memory.close()
    assert why(tmp_path, "user:1", user_id="alice")["tool_call_id"] == "call_alice"
    assert why(tmp_path, "fact:1", user_id="alice")["kind"] == "fact"
    with pytest.raises(MemoryportError):
        why(tmp_path, "user:1", user_id="bob")
    with pytest.raises(MemoryportError):
        why(tmp_path, "fact:1", user_id="bob")
