"""Wiring (issue 11 item 4): construction lives in ``memoryport._wiring``, memoryport's own
providers are registered through ``register(ctx)`` like a plugin's, ``Memory`` alone owns
the session store, and SIGTERM handling is opt-in."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import pytest

from agent_support import make_memory
from memoryport._wiring import DEFAULT_PROVIDERS, DefaultsContext, open_session_store, wire
from memoryport.agent import Agent, ChatClient
from memoryport.config import Config, MemorySettings


def _sentinel(signum: int, frame: FrameType | None) -> None:
    """A host program's own SIGTERM handler."""


@pytest.fixture
def host_handler() -> object:
    """Install a host SIGTERM handler for the test; restore the previous one after."""
    before = signal.signal(signal.SIGTERM, _sentinel)
    yield _sentinel
    signal.signal(signal.SIGTERM, before)


def test_default_providers_register_like_a_plugin(tmp_path: Path) -> None:
    config = Config()
    store = open_session_store(config, tmp_path, None)
    ctx = DefaultsContext(tmp_path, config, store, "")
    for register in DEFAULT_PROVIDERS:
        register(ctx)
    assert [p.name for p in ctx.providers] == ["builtin", "sessions"]
    store.close()


def test_curated_is_not_registered_when_both_files_are_disabled(tmp_path: Path) -> None:
    config = Config(memory=MemorySettings(memory_enabled=False, user_profile_enabled=False))
    parts = wire(tmp_path, config, None, load_provider=False)
    assert parts.curated is None
    assert [p.name for p in parts.manager.providers] == ["sessions"]
    parts.manager.shutdown_all()
    parts.store.close()


def test_provider_shutdown_leaves_the_store_to_memory(tmp_path: Path) -> None:
    parts = wire(tmp_path, Config(), None, load_provider=False)
    parts.manager.initialize_all("s0", home=str(tmp_path))
    parts.manager.shutdown_all()  # the sessions provider must not close the store
    parts.store.create_session("s1", source="cli")
    assert parts.store.get_session("s1").id == "s1"
    parts.store.close()


def test_memory_close_closes_the_store(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    memory.start_session(source="cli")
    turn = memory.begin_turn("hello")
    memory.end_turn(turn, "hi")
    store = memory.sessions
    memory.close()
    with pytest.raises(Exception):  # noqa: B017 - the backend's own closed-store error
        store.create_session("after-close", source="cli")


def test_open_installs_no_signal_handler_by_default(tmp_path: Path, host_handler: object) -> None:
    memory = make_memory(tmp_path)
    memory.start_session()
    assert signal.getsignal(signal.SIGTERM) is host_handler
    memory.close()


def test_close_on_sigterm_is_opt_in_and_chains(tmp_path: Path, host_handler: object) -> None:
    memory = make_memory(tmp_path)
    assert memory.close_on_sigterm() is True
    installed = signal.getsignal(signal.SIGTERM)
    assert installed is not host_handler and callable(installed)
    memory.close()


def test_the_reference_agent_opts_in(tmp_path: Path, host_handler: object) -> None:
    memory = make_memory(tmp_path)
    client = ChatClient("fake-model", base_url="http://127.0.0.1:9/v1", api_key="test")
    Agent(memory, client, handle_sigterm=False)
    assert signal.getsignal(signal.SIGTERM) is host_handler
    Agent(memory, client)
    assert signal.getsignal(signal.SIGTERM) is not host_handler
    memory.close()


def test_every_runtime_dependency_is_imported() -> None:
    """No unused runtime dependency (``pluggy`` was declared and never imported)."""
    import re
    import tomllib

    root = Path(__file__).resolve().parents[1]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    modules = {"pyyaml": "yaml"}
    source = "\n".join(p.read_text() for p in (root / "src" / "memoryport").rglob("*.py"))
    for dep in deps:
        name = re.split(r"[<>=\[ ;]", dep, maxsplit=1)[0].lower()
        module = modules.get(name, name.replace("-", "_"))
        assert re.search(rf"^\s*(?:import|from) {module}\b", source, re.M), dep
