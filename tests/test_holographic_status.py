"""``memoryport status`` shows the holographic provider's fact and turn counts and whether
the embeddings extra is installed (CliRunner on a real home)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from memoryport import open as open_memory
from memoryport.cli import main


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": "holographic", "nudge_interval": 0}}))
    return home


def test_status_shows_counts_and_the_embeddings_extra(tmp_path: Path) -> None:
    home = _home(tmp_path)
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--no-probe", "--json"])
    details = json.loads(result.output)["provider"]["details"]
    assert result.exit_code == 0 and (details["facts"], details["turns"]) == (0, 0)
    assert not (home / "holographic.db").exists()  # reading status creates nothing
    memory = open_memory(home, "default", platform="cli")
    for text in ("I live in Lisbon.", "I moved to Porto.", "We fixed the tests."):
        memory.end_turn(memory.begin_turn(text), "Noted.")
    memory.flush()
    memory.close()
    result = CliRunner().invoke(main, ["--home", str(home), "status", "--json"])
    details = json.loads(result.output)["provider"]["details"]
    assert result.exit_code == 0
    assert (details["facts"], details["retired_facts"], details["turns"]) == (1, 1, 6)
    installed = importlib.util.find_spec("tokenizers") is not None
    assert details["embeddings"].startswith("installed" if installed else "not installed")
    text = CliRunner().invoke(main, ["--home", str(home), "status", "--no-probe"]).output
    assert "  facts: 1" in text and "  turns: 6" in text and "  embeddings: " in text


def test_a_new_home_recalls_by_default_and_an_empty_provider_turns_it_off(
    tmp_path: Path,
) -> None:
    """Issue 12: with no configuration at all, ``memoryport.open()`` runs the bundled
    ``holographic`` provider — what one turn said is recalled into a later turn's fence —
    ``status`` names it, and ``memory.provider: ""`` turns it off."""
    home = tmp_path / "new"
    memory = open_memory(home, "default", platform="cli")
    assert [p.name for p in memory.providers] == ["builtin", "sessions", "holographic"]
    memory.end_turn(memory.begin_turn("My sister Ana lives in Lisbon."), "Noted.")
    memory.flush()
    later = memory.begin_turn("Where does Ana live?")
    api_message = later.api_user_message()
    assert "<memory-context>" in api_message and "Lisbon" in api_message
    memory.end_turn(later, "In Lisbon.")
    memory.close()
    status = json.loads(CliRunner().invoke(
        main, ["--home", str(home), "status", "--no-probe", "--json"]).output)
    assert status["provider"]["name"] == "holographic"
    off = tmp_path / "off"
    off.mkdir()
    (off / "config.yaml").write_text('memory:\n  provider: ""\n')
    memory = open_memory(off, "default", platform="cli")
    assert [p.name for p in memory.providers] == ["builtin", "sessions"]
    memory.close()
    assert not (off / "holographic.db").exists()
