"""``memoryport sessions`` commands against a real SQLite home."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memoryport.cli import main
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
    assert code == 0 and [s["id"] for s in json.loads(out)] == ["s1"]
    code, out = _run(tmp_path, "list", "--all-sources", "--json")
    assert {s["id"] for s in json.loads(out)} == {"s1", "s2"}
    code, out = _run(tmp_path, "search", "user's", "--json")
    data = json.loads(out)
    assert code == 0 and [h["id"] for h in data["hits"]] == [ids[0]]
    code, out = _run(tmp_path, "search", "lisbon")
    assert code == 0 and "s1" in out and "Lisbon" in out
    code, out = _run(tmp_path, "show", "s1", "--json")
    assert code == 0 and len(json.loads(out)["messages"]) == 2
    code, out = _run(tmp_path, "show", "s1", "--user", "bob")
    assert code == 1 and "unknown session" in out


def test_export_import_forget_rebuild(tmp_path: Path) -> None:
    _seed(tmp_path / "a")
    dump = tmp_path / "dump.jsonl"
    code, _ = _run(tmp_path / "a", "export", "-o", str(dump))
    assert code == 0 and len(dump.read_text().splitlines()) == 3
    code, out = _run(tmp_path / "b", "import", str(dump))
    assert code == 0 and "imported 2 sessions (3 messages)" in out
    code, out = _run(tmp_path / "b", "forget", "--session", "s1", input="n\n")
    assert code == 1 and "nothing deleted" in out
    code, out = _run(tmp_path / "b", "forget", "--all-of-user", "ann", "--yes")
    assert code == 0 and "2 messages" in out
    code, out = _run(tmp_path / "b", "search", "booked", "--json")
    assert json.loads(out)["hits"] == []
    code, out = _run(tmp_path / "b", "rebuild-index")
    assert code == 0 and "verified" in out
    code, out = _run(tmp_path / "b", "forget", "--yes")
    assert code == 2 and "exactly one" in out
