"""``memoryport memory history|diff|restore`` and provenance from every shell write path."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from agent_support import make_agent, make_memory
from fake_openai import FakeOpenAI, Reply, ToolCall, last_role, mentions
from manager_doubles import Recorder
from memoryport.admin.curated import history_rows, restore_revision, revision_diff
from memoryport.agent.review import REVIEW_PROMPT, REVIEW_SOURCE
from memoryport.cli.memory import memory_group
from memoryport.config import MemorySettings
from memoryport.providers.curated import CuratedMemory


def _run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(memory_group, [*args, "--home", str(home)])


def _json(result: Result) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_cli_history_diff_restore_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _run(home, "add", "The repo uses uv.").exit_code == 0
    assert _run(home, "add", "--target", "user", "Dana prefers tea.").exit_code == 0
    assert _run(home, "replace", "uv", "The repo uses pip.").exit_code == 0

    listing = _json(_run(home, "history", "--json"))
    assert list(listing) == ["revisions", "count", "total"] and listing["count"] == 3
    rows = listing["revisions"]
    assert isinstance(rows, list)
    assert [r["id"] for r in rows] == ["memory:2", "user:1", "memory:1"]
    assert all(r["source"] == "cli" and r["session_id"] and r["applied"] for r in rows)
    only_user = _json(_run(home, "history", "--target", "user", "--json"))
    assert only_user["count"] == 1
    plain = _run(home, "history", "--limit", "1")
    assert "memory:2" in plain.output and "replace  cli session=" in plain.output
    assert "- The repo uses uv." in plain.output and "+ The repo uses pip." in plain.output
    assert "2 older revisions not shown; use --all" in plain.output

    diff = _run(home, "diff", "memory:2")
    assert diff.exit_code == 0 and "-The repo uses uv.\n+The repo uses pip." in diff.output
    as_json = _json(_run(home, "diff", "2", "--json"))
    assert as_json["revision"]["before"] == "The repo uses uv."  # type: ignore[index]

    restored = _json(_run(home, "restore", "memory:2", "--before", "--json"))
    assert restored["success"] is True and restored["revision"] == "memory:3"
    assert restored["restored_from"] == "memory:2"
    assert (home / "memories/MEMORY.md").read_text(encoding="utf-8") == "The repo uses uv."
    again = _run(home, "restore", "memory:2")
    assert again.exit_code == 0 and "New revision memory:4." in again.output
    last = _json(_run(home, "history", "--target", "memory", "--json"))["revisions"]
    assert last[0]["action"] == "restore" and last[0]["restored_from"] == "memory:2"  # type: ignore[index]


def test_cli_bad_input_is_a_clear_error_that_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _run(home, "add", "One.")
    before = (home / "memories/MEMORY.md").read_bytes()
    for args in (("diff", "bogus"), ("restore", "user:0"), ("restore", "memory:9")):
        result = _run(home, *args)
        assert result.exit_code == 1 and "Error:" in result.output, args
    assert "expected TARGET:N" in _run(home, "diff", "bogus").output
    failed = _run(home, "restore", "memory:9", "--json")
    assert failed.exit_code == 1 and json.loads(failed.output)["success"] is False
    assert _run(home, "history", "--limit", "0").exit_code == 2
    assert (home / "memories/MEMORY.md").read_bytes() == before
    assert len(history_rows(CuratedMemory(home))) == 1
    empty = _run(tmp_path / "other", "history")
    assert empty.exit_code == 0 and "No revisions recorded yet." in empty.output


def test_history_shows_stored_text_through_printable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = CuratedMemory(home)
    store.add("memory", "One.")
    store.path("memory").write_text("colour \x1b[31mred\x1b[0m", encoding="utf-8")  # by hand
    store.remove("memory", "colour")
    out = _run(home, "history").output + _run(home, "diff", "memory:2").output
    assert "external" in out and "- colour" in out
    assert "\x1b" not in out and "\\e[31m" in out


def test_admin_functions_are_the_python_api(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = CuratedMemory(home)
    store.add("memory", "First.")
    store.replace("memory", "First", "Second.")
    assert revision_diff(store, "memory:2")["revision"]["after"] == "Second."
    payload = restore_revision(home, "", "memory:1", source="api")
    assert payload["revision"] == "memory:3" and store.entries("memory") == ["First."]
    assert history_rows(store, "memory")[0]["source"] == "api"


def test_restore_through_memory_open_reaches_other_providers(tmp_path: Path) -> None:
    recorder = Recorder()
    memory = make_memory(tmp_path, [recorder])
    memory.start_session(source="cli")
    memory.call_tool("memory", {"action": "add", "content": "Alpha."}, tool_call_id="t1")
    memory.call_tool("memory", {"action": "replace", "old_text": "Alpha", "content": "Beta."},
                     tool_call_id="t2", source="import")  # fmt: skip
    assert memory.curated is not None
    memory.curated.restore("memory", 1, source="cli")
    memory.flush(10)
    memory.close()
    writes = [c[1] for c in recorder.calls if c[0] == "on_memory_write"]
    assert [(w[0], w[2], w[3]["source"]) for w in writes][-2:] == [
        ("remove", "Beta.", "cli"), ("add", "Alpha.", "cli")
    ]
    rows = history_rows(CuratedMemory(tmp_path), "memory")
    assert [(r["action"], r["source"], r["tool_call_id"]) for r in rows] == [
        ("restore", "cli", ""), ("replace", "import", "t2"), ("add", "memory_tool", "t1")
    ]
    assert rows[1]["session_id"] == rows[2]["session_id"] != ""


def test_model_tool_call_and_background_review_record_provenance(tmp_path: Path) -> None:
    save = ToolCall("memory", {"action": "add", "target": "user",
                               "content": "User drinks oolong tea."}, id="rv1")  # fmt: skip
    note = ToolCall("memory", {"action": "add", "content": "Tea kettle is electric."}, id="m1")
    rules = [
        (last_role("user", mentions(REVIEW_PROMPT)), Reply(tool_calls=[save])),
        (last_role("tool", mentions(REVIEW_PROMPT)), Reply(content="Saved.")),
        (last_role("user", mentions("kettle")), Reply(tool_calls=[note])),
        (last_role("tool", mentions("kettle")), Reply(content="Noted.")),
    ]
    with FakeOpenAI(rules=rules, default=Reply(content="Lovely.")) as server:
        agent = make_agent(tmp_path, server, memory=MemorySettings(nudge_interval=2))
        agent.run_turn("My kettle is electric.")
        agent.run_turn("Any brewing tips?")
        assert agent.reviewer.wait(30)
        agent.memory.flush(10)
        session = agent.memory.session_id
        agent.close()
    store = CuratedMemory(tmp_path)
    (tool_rev,) = store.history("memory")
    assert tool_rev.provenance.source == "memory_tool"
    assert tool_rev.provenance.tool_call_id == "m1" and tool_rev.provenance.session_id == session
    (review_rev,) = store.history("user")
    assert review_rev.provenance.source == REVIEW_SOURCE
    assert review_rev.provenance.tool_call_id == "rv1"
    assert review_rev.after == "User drinks oolong tea."
