"""nyx-memory 7.16.0 from PyPI, loaded through its entry point and run unmodified.

Install layout: **entry point**. ``pip install nyx-memory`` declares ``nyx`` (and the old
name ``nexsandglass``) in Hermes' group ``hermes_agent.memory_providers``; nothing is
copied. Configuration is what ``hermes memory setup`` writes: ``$HERMES_HOME/nyx.json``
with ``data_dir`` (the default is ``~/.neurobase``, shared with nyx's own CLI). Storage is
SQLite; no API key, no model (the ``vector`` extra is not installed).

nyx fixes its data directory when ``nexsandglass`` is first imported (one nyx memory per
process, as its README says), so each test ends the way a nyx process ends (its exit hook
flushes the search index) and drops the ``nexsandglass*`` modules, as a restart would.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import memoryport
from fixtures.helpers import isolate
from memoryport.plugins import discover, load
from memoryport.testing import ProviderConformance
from memoryport.types import InitContext

_PREFIX = "nexsandglass"


@pytest.fixture(autouse=True)
def _fresh_nyx(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """nyx's register() exports NEXSANDBASE_HOME and nexsandglass caches its data dir."""
    monkeypatch.setenv("NEXSANDBASE_HOME", "unset")
    monkeypatch.delenv("NEXSANDBASE_HOME")  # restored (removed) at teardown
    yield
    restart_nyx()


def restart_nyx() -> None:
    """What ending the process does for nyx, then forget its modules (a fresh import next).

    nyx warms its index on a background thread (``nyx-warm``) that imports more of its
    modules; dropping the modules while it runs leaves a half-imported package for the
    next test, so that thread is waited for first.
    """
    for thread in threading.enumerate():
        if thread.name.startswith("nyx") and thread is not threading.current_thread():
            thread.join(timeout=30)
    vault = sys.modules.get("nexsandglass.features.sandglass_vault")
    if vault is not None:
        vault.flush_index()  # nyx's atexit hook, run while this test's home still exists
        vault._idx_cache = None  # type: ignore[attr-defined]  # so that hook has nothing left to do at interpreter exit
    for name in [m for m in sys.modules if m.startswith(_PREFIX)]:
        del sys.modules[name]


def configure(home: Path) -> Path:
    """What ``hermes memory setup`` writes for nyx, plus memoryport's provider choice."""
    home.mkdir(parents=True, exist_ok=True)
    data = home / "nyx"
    (home / "nyx.json").write_text(json.dumps({"data_dir": str(data)}))
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "nyx"}}))
    return data


def load_nyx(home: Path) -> Any:
    result = load("nyx", home)
    assert result.ok, result.traceback
    return result.provider


def test_discovered_from_its_entry_point_without_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate(tmp_path, monkeypatch)
    before = set(sys.modules)
    found = discover(home)
    nyx = found.providers["nyx"]
    assert nyx.source == "hermes_entry_point"
    assert nyx.distribution == "nyx-memory"
    assert nyx.manifest.version == "7.16.0"  # from the plugin.yaml shipped beside the module
    assert found.providers["nexsandglass"].distribution == "nyx-memory"  # the old name
    assert not [m for m in set(sys.modules) - before if m.startswith(_PREFIX)]


def test_store_then_recall_through_memoryport_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate(tmp_path, monkeypatch)
    data = configure(home)
    memory = memoryport.open(user_id="alice")
    try:
        names = [getattr(p, "name", "") for p in memory.providers]
        assert names[-1] == "nexsandglass"  # the name its provider registers
        memory.start_session()
        tools = {t["function"]["name"] for t in memory.openai_tools()}
        assert {"fact_store", "sandglass_search", "nyx_forget"} <= tools
        stored = json.loads(
            memory.call_tool(
                "fact_store", {"action": "add", "content": "Alice prefers the helix editor"}
            )
        )
        assert stored["status"] == "added", stored
        found = json.loads(memory.call_tool("fact_store", {"action": "search", "query": "helix"}))
        assert any("helix editor" in row["text"] for row in found["results"]), found
        turn = memory.begin_turn("I moved to Lisbon last year.")
        memory.end_turn(turn, "Nice, Lisbon it is.")
        assert memory.flush(10.0) == 0
        turn = memory.begin_turn("Where do I live now? Lisbon?")
        context = "\n".join(text for _, text in turn.contexts)
        assert "Lisbon" in context, turn.contexts
        memory.end_turn(turn, "In Lisbon.")
        health = memory.health()["nexsandglass"]["hooks"]
        assert health["sync_turn"]["errors"] == 0 and health["prefetch"]["errors"] == 0
    finally:
        memory.close()
    # Everything lives where nyx.json says: inside the memoryport home.
    assert (data / "sandglass.db").is_file()
    assert not (tmp_path / "user" / ".neurobase").exists()


def test_a_second_process_run_recalls_what_the_first_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolate(tmp_path, monkeypatch)
    configure(home)
    provider = load_nyx(home)
    provider.initialize("s1", **InitContext(home=home, user_id="alice").to_kwargs())
    provider.handle_tool_call("fact_store", {"action": "add", "content": "Alice plays chess"})
    provider.shutdown()
    restart_nyx()  # as if the agent restarted
    again = load_nyx(home)
    again.initialize("s2", **InitContext(home=home, user_id="alice").to_kwargs())
    found = json.loads(again.handle_tool_call("sandglass_search", {"query": "chess"}))
    assert any("chess" in row["text"] for row in found), found
    again.shutdown()


class TestNyxConforms(ProviderConformance):
    @pytest.fixture(autouse=True)
    def _user_home(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Its default data dir and key files live under ``~``: keep that in the temp dir."""
        monkeypatch.setenv("HOME", str(tmp_path / "user"))
        monkeypatch.chdir(tmp_path)  # tools given a relative path write there

    def make_provider(self, home: Path) -> Any:
        configure(home)
        return load_nyx(home)
