"""Two real third-party Hermes memory providers from PyPI, loaded and run unmodified.

* ``verbatim-memory`` registers ``verbatim = verbatim:register`` in Hermes' entry-point
  group ``hermes_agent.memory_providers`` and subclasses ``agent.memory_provider``'s ABC.
* ``hermes-local-memory`` ships a plugin shim meant for ``$HERMES_HOME/plugins/`` whose
  ``register(ctx)`` registers a provider that does not subclass anything (shape only).

Both work offline (SQLite); both are in the ``dev`` extra.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import hermes_local_memory
import pytest
import yaml
from hermes_local_memory.hermes_plugin import write_plugin_shim

from fixtures.helpers import isolate
from memoryport.manager import ManagerSettings, MemoryManager
from memoryport.plugins import discover, load
from memoryport.plugins.hermes_compat import SHIM_NAMES
from memoryport.provider import MemoryProvider
from memoryport.testing import ProviderConformance
from memoryport.types import InitContext


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def install_local_memory(home: Path) -> Path:
    """What `hermes-local-memory install` does: a shim dir under <home>/plugins/."""
    package_root = Path(hermes_local_memory.__file__).resolve().parent.parent
    shim = write_plugin_shim(home / "plugins" / "local_memory", package_root=package_root)
    return shim.parent


def enable_verbatim_capture(home: Path) -> None:
    """Verbatim reads `memory.verbatim` from the profile's config.yaml (off by default)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {"memory": {"provider": "verbatim", "verbatim": {"capture": {"enabled": True}}}}
        )
    )


def hermes_kwargs(home: Path, **fields: Any) -> dict[str, Any]:
    """initialize() kwargs as Hermes passes them: unset fields are left out, not ''.

    Verbatim validates ``agent_workspace`` as an identifier, so an empty string (which
    ``InitContext.to_kwargs()`` sends for unset fields) or a filesystem path is refused.
    """
    kwargs = InitContext(home=home, **fields).to_kwargs()
    return {k: v for k, v in kwargs.items() if v != ""}


def load_verbatim(home: Path) -> Any:
    result = load("verbatim", home)
    assert result.ok, result.traceback
    return result.provider


def load_local_memory(home: Path) -> Any:
    install_local_memory(home)
    result = load("local_memory", home)
    assert result.ok, result.traceback
    return result.provider


# ----------------------------------------------------------------- discovery


def test_both_are_discovered_without_import(tmp_path: Path) -> None:
    home = tmp_path / "h"
    install_local_memory(home)
    before = set(sys.modules)
    found = discover(home)
    verbatim = found.providers["verbatim"]
    assert verbatim.source == "hermes_entry_point"
    assert verbatim.distribution == "verbatim-memory"
    assert verbatim.manifest.name == "verbatim"  # read from its shipped plugin.yaml
    assert "on_session_end" in verbatim.manifest.hooks
    assert found.providers["local_memory"].source == "user"
    assert not [m for m in set(sys.modules) - before if m.startswith(("verbatim", "hermes_local"))]


# ----------------------------------------------------------------- verbatim


def test_verbatim_loads_unmodified_and_runs_a_lifecycle(tmp_path: Path) -> None:
    home = tmp_path / "h"
    enable_verbatim_capture(home)
    provider = load_verbatim(home)
    assert isinstance(provider, MemoryProvider)  # it subclassed our stand-in ABC
    assert type(provider).__module__ == "verbatim.provider"
    for name in SHIM_NAMES:
        assert name not in sys.modules
    assert provider.is_available()
    provider.initialize("s1", **hermes_kwargs(home, user_id="alice"))
    tools = {t["name"] for t in provider.get_tool_schemas()}
    assert tools == {"verbatim_recall", "verbatim_evidence"}
    result = json.loads(provider.handle_tool_call("verbatim_recall", {"query": "editor"}))
    assert result["ok"] is True
    assert provider.prefetch("which editor do I use?", session_id="s1") == ""
    provider.sync_turn("My editor is helix.", "Noted: helix.", session_id="s1")
    provider.on_session_end([{"role": "user", "content": "My editor is helix."}])
    report = provider._last_drain["drain_report"]
    assert report["succeeded"] >= 1 and report["failed"] == 0
    provider.shutdown()
    # Its store lives under the memoryport home, nowhere else.
    assert (home / "verbatim").is_dir()
    assert not (Path.home() / ".hermes").exists()


class TestVerbatimConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return load_verbatim(home)

    def init_kwargs(self, home: Path) -> dict[str, Any]:
        kwargs = {k: v for k, v in super().init_kwargs(home).items() if v != ""}
        kwargs["agent_workspace"] = "conformance-workspace"  # an id, not a path
        return kwargs


# ----------------------------------------------------------------- hermes-local-memory


def test_local_memory_full_turn_through_the_manager(tmp_path: Path) -> None:
    home = tmp_path / "h"
    provider = load_local_memory(home)
    assert not isinstance(provider, MemoryProvider)  # accepted by shape (Protocol, not ABC)
    manager = MemoryManager(ManagerSettings(prefetch_deadline_s=5.0))
    try:
        assert manager.add_provider(provider)
        manager.initialize_all("s1", **InitContext(home=home, user_id="alice").to_kwargs())
        assert manager.has_tool("memory_conclude")
        stored = json.loads(
            manager.handle_tool_call(
                "memory_conclude",
                {"content": "Alice prefers the helix editor", "kind": "preference"},
            )
        )
        assert "error" not in stored, stored
        manager.sync_all("I moved to Lisbon last year.", "Nice, Lisbon it is.")
        assert manager.flush(5.0) == 0
        found = json.loads(manager.handle_tool_call("memory_search", {"query": "helix"}))
        assert "helix" in json.dumps(found)
        context = manager.prefetch_all("which editor does Alice prefer? helix")
        assert any("helix" in text for _, text in context), context
        manager.on_session_end([{"role": "user", "content": "bye"}])
        health = manager.health()
        assert health["local"]["hooks"]["prefetch"]["calls"] >= 1
        assert health["local"]["hooks"]["prefetch"]["errors"] == 0
    finally:
        manager.shutdown_all()
    assert (home / "memory" / "local_memory.sqlite").exists()


def test_local_memory_profiles_are_isolated(tmp_path: Path) -> None:
    root = tmp_path / "root"
    work, play = root / "profiles" / "work", root / "profiles" / "play"
    for home, fact in ((work, "works on compilers"), (play, "plays chess")):
        provider = load_local_memory(home)
        provider.initialize("s", **InitContext(home=home).to_kwargs())
        provider.handle_tool_call("memory_conclude", {"content": f"Alice {fact}"})
        provider.shutdown()
    work_provider = load("local_memory", work).provider
    assert work_provider is not None
    work_provider.initialize("s2", **InitContext(home=work).to_kwargs())
    text = json.dumps(
        json.loads(work_provider.handle_tool_call("memory_search", {"query": "chess"}))
    )
    assert "chess" not in text
    assert "compilers" in json.dumps(
        json.loads(work_provider.handle_tool_call("memory_search", {"query": "compilers"}))
    )


class TestLocalMemoryConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return load_local_memory(home)

    def test_hooks_tolerate_calls_before_initialize(self, provider: Any) -> None:
        """A known deviation of hermes-local-memory 0.3.1: its hooks raise before
        ``initialize``. The manager only calls hooks after a successful initialize (and
        isolates a hook that raises), so the package still runs; this test pins the
        behaviour so an upstream fix is noticed."""
        with pytest.raises(RuntimeError, match="initialize"):
            provider.prefetch("anything")
