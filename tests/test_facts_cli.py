"""``memoryport facts list|search|show|forget`` on a real home, through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memoryport.cli import main
from memoryport.providers.holographic import HolographicProvider


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    provider = HolographicProvider()
    provider.initialize("s1", home=str(home))
    provider.sync_turn("I live in Lisbon.", "ok", session_id="s1")
    provider.sync_turn("I moved to Porto.", "ok", session_id="s1")
    provider.handle_tool_call("fact_store", {"action": "add", "content": "Bob likes red"})
    provider.shutdown()
    return home


def _run(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--home", str(home), "facts", *args])
    return result.exit_code, result.output


def test_list_search_show_forget(tmp_path: Path) -> None:
    home = _home(tmp_path)
    code, out = _run(home, "list", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["count"] == 2
    assert [f["content"] for f in listed["facts"]][1] == "I moved to Porto"
    code, out = _run(home, "list", "--retired", "--json")
    assert json.loads(out)["count"] == 3
    code, out = _run(home, "search", "Porto", "--json")
    found = json.loads(out)
    assert found["query"] == "Porto" and found["results"][0]["content"] == "I moved to Porto"
    porto = found["results"][0]["fact_id"]
    code, out = _run(home, "show", str(porto), "--json")
    shown = json.loads(out)
    assert shown["fact"]["fact_id"] == porto and shown["contradictions"][0]["old_value"] == "lisbon"
    code, out = _run(home, "list")
    assert code == 0 and "Bob likes red" in out
    code, out = _run(home, "forget", str(porto), "--yes")
    assert code == 0 and f"deleted fact #{porto}" in out
    code, out = _run(home, "show", str(porto))
    assert code == 1 and f"no fact #{porto}" in out


def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    home = _home(tmp_path)
    code, out = _run(home, "list", "--limit", "-1")
    assert code == 2 and "--limit" in out
    code, out = _run(home, "forget", "999", "--yes")
    assert code == 1 and "no fact #999" in out
    code, out = _run(tmp_path / "empty", "list")
    assert code == 1 and "no fact store" in out
    assert not (tmp_path / "empty" / "holographic.db").exists()


def test_users_are_separate(tmp_path: Path) -> None:
    home = _home(tmp_path)
    code, out = _run(home, "list", "--user", "someone", "--json")
    assert code == 0 and json.loads(out) == {"facts": [], "count": 0}
