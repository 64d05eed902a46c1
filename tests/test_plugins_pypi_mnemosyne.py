"""mnemosyne-memory 3.15.1 from PyPI, installed by its own installer and run unmodified.

Install layout: **installer-written folder**, here a symlink. ``pip install
mnemosyne-memory`` then ``mnemosyne-install`` links ``$HERMES_HOME/plugins/mnemosyne`` to
the installed ``hermes_memory_provider`` package (no ``plugin.yaml``: the folder is found
by the ``MemoryProvider`` text check) and sets ``memory.provider: mnemosyne`` in
``$HERMES_HOME/config.yaml``. The installer runs in a real subprocess with
``HERMES_HOME=<memoryport home>``. Storage is SQLite FTS5; the ``embeddings`` extra
(fastembed, a model download) is not installed, and no embedding API key is set, so it
runs keyword-only and offline. Its database goes where ``MNEMOSYNE_DATA_DIR`` says (its
README's variable; the default is ``~/.hermes/mnemosyne/data``).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

import memoryport
from fixtures.helpers import isolate
from memoryport.plugins import discover, load
from memoryport.testing import ProviderConformance

_KEYS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "MNEMOSYNE_EMBEDDING_API_KEY")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No embedding API key (it would be used for remote embeddings); no outbound socket."""
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def run_installer(home: Path) -> subprocess.CompletedProcess[str]:
    """``mnemosyne-install`` with ``HERMES_HOME`` pointing at the memoryport home."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"HERMES_HOME": str(home), "HOME": str(home.parent / "user"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "mnemosyne.install"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def install(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install as its README says; keep its database inside the home."""
    done = run_installer(home)
    assert done.returncode == 0, done.stdout + done.stderr
    data = home / "mnemosyne" / "data"
    monkeypatch.setenv("MNEMOSYNE_DATA_DIR", str(data))
    return data


def link_like_the_installer(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link ``mnemosyne-install`` makes, without the subprocess (for the kit's many homes)."""
    spec = importlib.util.find_spec("hermes_memory_provider")  # locates, does not import
    assert spec is not None and spec.origin is not None
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / "mnemosyne").symlink_to(Path(spec.origin).parent)
    monkeypatch.setenv("MNEMOSYNE_DATA_DIR", str(home / "mnemosyne" / "data"))


def load_mnemosyne(home: Path) -> Any:
    result = load("mnemosyne", home)
    assert result.ok, result.traceback
    return result.provider


def test_the_installer_writes_a_folder_memoryport_discovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate(tmp_path, monkeypatch)
    install(home, monkeypatch)
    link = home / "plugins" / "mnemosyne"
    assert link.is_symlink() and (link / "__init__.py").is_file()
    assert not (link / "plugin.yaml").exists()
    config = yaml.safe_load((home / "config.yaml").read_text())
    assert config == {"memory": {"provider": "mnemosyne"}}
    found = discover(home)
    assert found.providers["mnemosyne"].source == "user"
    assert "mnemosyne" not in sys.modules  # listing imports nothing


def test_store_then_recall_through_memoryport_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate(tmp_path, monkeypatch)
    data = install(home, monkeypatch)
    memory = memoryport.open(user_id="alice")  # memory.provider as the installer set it
    try:
        assert [getattr(p, "name", "") for p in memory.providers][-1] == "mnemosyne"
        memory.start_session()
        tools = {t["function"]["name"] for t in memory.openai_tools()}
        assert {"mnemosyne_remember", "mnemosyne_recall", "mnemosyne_forget"} <= tools
        stored = json.loads(
            memory.call_tool(
                "mnemosyne_remember",
                {"content": "Alice prefers the helix editor", "importance": 0.9},
            )
        )
        assert stored["status"] == "stored", stored
        found = json.loads(memory.call_tool("mnemosyne_recall", {"query": "helix editor"}))
        assert [row["content"] for row in found["results"]] == ["Alice prefers the helix editor"]
        assert found["results"][0]["id"] == stored["memory_id"]
        turn = memory.begin_turn("Which editor does Alice prefer, helix?")
        context = "\n".join(text for _, text in turn.contexts)
        assert "Alice prefers the helix editor" in context, turn.contexts
        memory.end_turn(turn, "Helix.")
        assert memory.flush(10.0) == 0
        health = memory.health()["mnemosyne"]["hooks"]
        assert health["prefetch"]["errors"] == 0 and health["sync_turn"]["errors"] == 0
    finally:
        memory.close()
    assert (data / "mnemosyne.db").is_file()
    assert not (tmp_path / "user" / ".hermes").exists()  # nothing in a Hermes home


def test_a_new_session_recalls_what_an_earlier_one_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate(tmp_path, monkeypatch)
    install(home, monkeypatch)
    first = memoryport.open(user_id="alice")
    try:
        first.start_session()
        first.call_tool(
            "mnemosyne_remember",
            {"content": "Alice moved to Lisbon", "importance": 0.8, "scope": "global"},
        )
    finally:
        first.close()
    second = memoryport.open(user_id="alice")
    try:
        second.start_session()
        found = json.loads(second.call_tool("mnemosyne_recall", {"query": "Lisbon"}))
        assert any("Lisbon" in row["content"] for row in found["results"]), found
    finally:
        second.close()


class TestMnemosyneConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _installed(self, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", str(tmp_path / "user"))  # it writes logs under ~/.hermes
        monkeypatch.chdir(tmp_path)  # tools given a relative path write there
        link_like_the_installer(home, monkeypatch)

    def make_provider(self, home: Path) -> Any:
        return load_mnemosyne(home)
