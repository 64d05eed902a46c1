"""``memoryport sessions`` commands against a real SQLite home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoryport.cli import _common, main
from memoryport.storage.sessions.sqlite import SQLiteSessionStore


def _seed(home: Path) -> list[int]:
    store = SQLiteSessionStore(home / "state.db")
    store.create_session("s1", source="cli", title="Trip planning", user_id="ann")
    ids = store.append_messages(
        "s1",
        [
            {"role": "user", "content": "book the user's flight to Lisbon"},
            {"role": "assistant", "content": "Booked: Lisbon, Friday"},
        ],
    )
    store.create_session("s2", source="tool", user_id="bob")
    store.append_message("s2", {"role": "tool", "content": "Lisbon weather json"})
    store.close()
    return ids


def _run(home: Path, *args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sessions", *args, "--home", str(home)], input=input)
    return result.exit_code, result.output


def test_list_search_show_json(tmp_path: Path) -> None:
    ids = _seed(tmp_path)
    code, out = _run(tmp_path, "list", "--json")
    assert code == 0 and [s["id"] for s in json.loads(out)["sessions"]] == ["s1"]
    code, out = _run(tmp_path, "list", "--all-sources", "--json")
    assert {s["id"] for s in json.loads(out)["sessions"]} == {"s1", "s2"}
    code, out = _run(tmp_path, "search", "user's", "--json")
    data = json.loads(out)
    assert code == 0 and [h["id"] for h in data["results"]] == [ids[0]] and data["count"] == 1
    code, out = _run(tmp_path, "search", "lisbon")
    assert code == 0 and "s1" in out and "Lisbon" in out
    code, out = _run(tmp_path, "search", "weather", "--json")
    assert code == 0 and json.loads(out)["results"] == []  # tool sessions are hidden by default
    code, out = _run(tmp_path, "search", "weather", "--all-sources", "--json")
    assert [h["session_id"] for h in json.loads(out)["results"]] == ["s2"]
    code, out = _run(tmp_path, "search", "lisbon", "--source", "tool", "--json")
    assert [h["session_id"] for h in json.loads(out)["results"]] == ["s2"]
    code, out = _run(tmp_path, "show", "s1", "--json")
    assert code == 0 and len(json.loads(out)["messages"]) == 2
    code, out = _run(tmp_path, "show", "s1", "--user", "bob")
    assert code == 1 and "unknown session" in out


def test_export_import_forget_rebuild(tmp_path: Path) -> None:
    _seed(tmp_path / "a")
    dump = tmp_path / "dump.jsonl"
    code, _ = _run(tmp_path / "a", "export", "-o", str(dump))
    assert code == 0 and len(dump.read_text().splitlines()) == 6  # header, 2 sessions, 3 messages
    code, out = _run(tmp_path / "b", "import", str(dump))
    assert code == 0 and "imported 2 sessions (3 messages)" in out
    code, out = _run(tmp_path / "b", "forget", "--session", "s1", input="n\n")
    assert code == 0 and "Nothing deleted." in out  # declining is not an error
    code, out = _run(tmp_path / "b", "forget", "--all-of-user", "ann", "--yes")
    assert code == 0 and "2 messages" in out
    code, out = _run(tmp_path / "b", "search", "booked", "--json")
    assert json.loads(out)["results"] == []
    code, out = _run(tmp_path / "b", "rebuild-index")
    assert code == 0 and "verified" in out
    code, out = _run(tmp_path / "b", "forget", "--yes")
    assert code == 2 and "exactly one" in out


def test_forget_and_export_of_missing_things_exit_1(tmp_path: Path) -> None:
    _seed(tmp_path)
    code, out = _run(tmp_path, "forget", "--message", "1234", "--yes")
    assert code == 1 and "no message 1234" in out and "deleted" not in out
    code, out = _run(tmp_path, "forget", "--session", "nope", "--yes")
    assert code == 1 and "no session 'nope'" in out
    code, out = _run(tmp_path, "export", "--session", "nope")
    assert code == 1 and "no session 'nope'" in out and "exported" not in out
    code, out = _run(tmp_path, "forget", "--message", "1", "--yes")
    assert code == 0 and "deleted message 1 (1 message)" in out
    code, out = _run(tmp_path, "export", "--session", "s1")
    assert code == 0 and "exported 1 session (1 message)" in out  # the one message left


def test_import_errors_name_the_line(tmp_path: Path) -> None:
    _seed(tmp_path / "a")
    dump = tmp_path / "dump.jsonl"
    assert _run(tmp_path / "a", "export", "-o", str(dump))[0] == 0
    good = dump.read_text().splitlines()
    dump.write_text("\n".join([good[0], good[1], '{"sessions": {}}', *good[2:]]) + "\n")
    code, out = _run(tmp_path / "b", "import", str(dump))
    assert code == 1
    assert "line 3: expected" in out and "nothing was imported" in out
    dump.write_text(good[0] + "\n\nnot json\n")
    code, out = _run(tmp_path / "b", "import", str(dump))
    assert code == 1 and "line 3: not valid JSON" in out


def test_rebuild_index_json_and_hit_grammar(tmp_path: Path) -> None:
    _seed(tmp_path)
    code, out = _run(tmp_path, "rebuild-index", "--json")
    assert code == 0 and json.loads(out) == {"rebuilt": True, "verified": True}
    code, out = _run(tmp_path, "search", "friday")
    assert code == 0 and "1 hit (" in out


def test_session_ids_are_never_truncated_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_id = "20261122_015627_0123abcd"
    store = SQLiteSessionStore(tmp_path / "state.db")
    store.create_session(long_id, source="cli", title="A fairly long title " * 4)
    store.append_message(long_id, {"role": "user", "content": "lisbon " * 40})
    store.close()
    monkeypatch.setattr(_common, "is_terminal", lambda: True)
    for args in (("list",), ("search", "lisbon")):
        result = CliRunner().invoke(
            main, ["sessions", *args, "--home", str(tmp_path)], env={"COLUMNS": "80"}
        )
        assert result.exit_code == 0 and long_id in result.output, result.output
