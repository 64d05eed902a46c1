"""hermes-llmwiki 0.1.1 from PyPI, copied as a bare plugin folder and run unmodified.

Install layout: **bare package folder**. The wheel's entry point is in a group Hermes does
not read (``hermes.memory_provider``) and its repository has no ``__init__.py`` at the
root, so the way Hermes (and memoryport) loads it is the package folder itself in
``$HERMES_HOME/plugins/llmwiki/``: an ``__init__.py`` that subclasses ``MemoryProvider``
and defines ``register(ctx)``, with sibling modules imported relatively, and no
``plugin.yaml``. Configuration is what its README says: ``memory.llmwiki.vault_path`` in
``~/.hermes/config.yaml`` (it reads that file, not the active home; ``HOME`` is the test's
temp dir). The vault is plain Markdown, searched with ripgrep when present, else Python.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

import memoryport
from fixtures.helpers import isolate
from memoryport.plugins import discover, load
from memoryport.provider import MemoryProvider
from memoryport.testing import ProviderConformance
from memoryport.types import InitContext


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def install(home: Path) -> Path:
    """Copy the installed package folder to <home>/plugins/llmwiki; configure the vault."""
    spec = importlib.util.find_spec("hermes_llmwiki")  # where pip put it; not imported
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).parent
    target = home / "plugins" / "llmwiki"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    vault = Path.home() / "wiki"
    vault.mkdir(parents=True, exist_ok=True)
    hermes_config = Path.home() / ".hermes" / "config.yaml"
    hermes_config.parent.mkdir(parents=True, exist_ok=True)
    hermes_config.write_text(
        yaml.safe_dump({"memory": {"provider": "llmwiki", "llmwiki": {"vault_path": str(vault)}}})
    )
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "llmwiki"}}))
    return vault


def load_llmwiki(home: Path) -> Any:
    result = load("llmwiki", home)
    assert result.ok, result.traceback
    return result.provider


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def test_the_bare_folder_is_discovered_and_loaded_as_a_package(home: Path) -> None:
    install(home)
    found = discover(home)
    assert found.providers["llmwiki"].source == "user"
    provider = load_llmwiki(home)
    assert isinstance(provider, MemoryProvider)  # it subclassed the agent.memory_provider ABC
    assert type(provider).__name__ == "LlmwikiMemoryProvider"
    assert type(provider).__module__.startswith("_memoryport_user_plugins.llmwiki")
    assert "hermes_llmwiki" not in sys.modules  # the folder ran, not the pip-installed copy
    assert provider.is_available()


def test_store_then_recall_through_memoryport_open(home: Path) -> None:
    vault = install(home)
    memory = memoryport.open(user_id="alice")
    try:
        assert [getattr(p, "name", "") for p in memory.providers][-1] == "llmwiki"
        memory.start_session()
        tools = {t["function"]["name"] for t in memory.openai_tools()}
        assert {"search_wiki", "append_note", "create_entity"} <= tools
        created = json.loads(
            memory.call_tool(
                "create_entity",
                {"name": "Helix", "type": "entity", "content": "Alice prefers the helix editor"},
            )
        )
        assert created["status"] == "ok", created
        found = json.loads(memory.call_tool("search_wiki", {"query": "helix"}))
        assert [row["path"] for row in found["data"]] == ["entities/Helix.md"]
        assert "Alice prefers the helix editor" in found["data"][0]["snippet"]
        turn = memory.begin_turn("helix")
        context = "\n".join(text for _, text in turn.contexts)
        assert "Alice prefers the helix editor" in context, turn.contexts
        memory.end_turn(turn, "You use helix, Alice.")
        assert memory.flush(10.0) == 0
    finally:
        memory.close()
    # sync_turn wrote the turn to today's chronicle note; read it back from disk.
    (daily,) = (vault / "chronicle" / "daily").glob("*.md")
    text = daily.read_text(encoding="utf-8")
    assert "**User:** helix" in text and "**Assistant:** You use helix, Alice." in text


def test_session_end_summarises_into_the_daily_note(home: Path) -> None:
    vault = install(home)
    provider = load_llmwiki(home)
    provider.initialize("s1", **InitContext(home=home, user_id="alice").to_kwargs())
    provider.on_session_end(
        [
            {"role": "user", "content": "I moved to Lisbon."},
            {"role": "assistant", "content": "Lisbon it is."},
        ]
    )
    provider.shutdown()
    (daily,) = (vault / "chronicle" / "daily").glob("*.md")
    text = daily.read_text(encoding="utf-8")
    assert "**Session End:**" in text and "**Turns:** 2" in text
    assert "i moved to lisbon." in text  # its (lower-cased) topic line


class TestLlmwikiConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _user_home(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """It reads and writes ``~``: keep that inside the test's temp dir."""
        monkeypatch.setenv("HOME", str(tmp_path / "user"))
        monkeypatch.chdir(tmp_path)  # tools given a relative path write there

    def make_provider(self, home: Path) -> Any:
        install(home)
        return load_llmwiki(home)

    def test_hooks_tolerate_calls_before_initialize(self, provider: Any) -> None:
        """A known deviation of hermes-llmwiki 0.1.1: its hooks read attributes that
        ``initialize`` sets, so they raise before it. The manager only calls hooks after a
        successful initialize (and isolates a hook that raises); this pins the behaviour
        so an upstream fix is noticed."""
        with pytest.raises(AttributeError, match="_vault_path"):
            provider.prefetch("anything")
