"""The provider conformance kit: a pytest base class provider authors subclass.

Usage, in your own test module::

    from memoryport.testing import ProviderConformance

    class TestMyProvider(ProviderConformance):
        def make_provider(self, home):
            return MyProvider()

Every bundled provider runs it. The checks: ``is_available()`` does no network I/O
(sockets are blocked during the call), ``initialize`` accepts the documented kwargs, tool
schemas are valid OpenAI function schemas with unique names, ``handle_tool_call`` returns a
JSON string for good, bad and unknown arguments, every hook tolerates being called before
``initialize`` and after ``shutdown``, and ``shutdown`` is idempotent.

Providers written to the seed-01 proposal (``initialize(session_key, config)``,
``enrich_turn``, ``on_turn_complete``, ``on_compress``, ``capabilities()``) run the same
checks: every call goes through the manager's hook adapter, and ``provider_config(home)``
is the ``config`` their ``initialize`` receives. ``capabilities()``, when defined, must
return a well-formed dict (see ``examples/seed01_provider``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryport.manager._capabilities import CURATED_TARGETS
from memoryport.manager._hooks import inspect_provider
from memoryport.manager._seed01 import LabelledContext
from memoryport.types import InitContext

__all__ = ["ProviderConformance", "call_hook", "sample_arguments"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SAMPLE_BY_TYPE: dict[str, Any] = {
    "string": "conformance probe",
    "integer": 1,
    "number": 1.0,
    "boolean": True,
    "array": [],
    "object": {},
}
_MESSAGES = [
    {"role": "user", "content": "I prefer tea over coffee."},
    {"role": "assistant", "content": "Noted."},
]


def call_hook(provider: Any, hook: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``hook`` the way the manager does (signature-adapted); run async hooks to the end."""
    bound = inspect_provider(provider, "conformance").hooks[hook]
    result = bound.call(*args, **kwargs)
    if inspect.isawaitable(result):

        async def _await() -> Any:
            return await result

        return asyncio.run(_await())
    return result


def _unwrap(schema: Any) -> Any:
    if isinstance(schema, dict) and schema.get("type") == "function":
        return schema.get("function")
    return schema


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Plausible arguments for a tool schema: every required property gets a typed sample."""
    params = schema.get("parameters") or {}
    properties = params.get("properties") or {}
    args: dict[str, Any] = {}
    for name in params.get("required") or []:
        spec = properties.get(name) or {}
        if spec.get("enum"):
            args[name] = spec["enum"][0]
        else:
            args[name] = _SAMPLE_BY_TYPE.get(str(spec.get("type", "string")), "probe")
    return args


def _lifecycle_calls() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    return [
        ("system_prompt_block", (), {}),
        ("on_turn_start", (1, "hello"), {}),
        (
            "prefetch",
            ("what do I like to drink?",),
            {"session_id": "conformance", "history": list(_MESSAGES)},
        ),
        ("queue_prefetch", ("what do I like to drink?",), {"session_id": "conformance"}),
        ("sync_turn", ("I prefer tea.", "Noted."), {"session_id": "conformance"}),
        ("on_memory_write", ("add", "user", "Prefers tea", {"session_id": "conformance"}), {}),
        ("on_pre_compress", (list(_MESSAGES),), {"compression_count": 1}),
        ("on_delegation", ("summarise", "done"), {"child_session_id": "child"}),
        (
            "on_session_switch",
            ("conformance-2",),
            {"parent_session_id": "conformance", "reason": "new"},
        ),
        ("on_session_end", (list(_MESSAGES),), {}),
    ]


class ProviderConformance:
    """Subclass with ``make_provider(home)``; pytest then runs every conformance check."""

    session_id = "conformance"

    def make_provider(self, home: Path) -> Any:
        """Return a fresh, un-initialized provider instance. Subclasses must override this."""
        raise TypeError(f"{type(self).__name__} must define make_provider(self, home)")

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture
    def home(self, tmp_path: Path) -> Path:
        """A fresh home directory for the provider's data."""
        path = tmp_path / "home"
        path.mkdir()
        return path

    @pytest.fixture
    def provider(self, home: Path) -> Iterator[Any]:
        """A fresh provider; shut down after the test."""
        instance = self.make_provider(home)
        yield instance
        call_hook(instance, "shutdown")

    @pytest.fixture
    def ready(self, provider: Any, home: Path) -> Any:
        """The provider, initialized with every documented kwarg."""
        config = self.provider_config(home)
        call_hook(
            provider, "initialize", self.session_id, **self.init_kwargs(home),
            provider_config=config,
        )
        return provider

    def provider_config(self, home: Path) -> dict[str, Any]:
        """The provider's ``config.yaml`` section (a seed-01 ``initialize``'s ``config``)."""
        return {}

    def init_kwargs(self, home: Path) -> dict[str, Any]:
        """The documented ``initialize`` kwargs, all set."""
        return InitContext(
            home=home,
            platform="cli",
            user_id="conformance-user",
            agent_identity="default",
            agent_workspace=str(home),
            parent_session_id="",
            session_title="Conformance",
            chat_id="chat-1",
            chat_type="dm",
            thread_id="thread-1",
            gateway_session_key="gw-1",
        ).to_kwargs()

    def tool_schemas(self, provider: Any) -> list[dict[str, Any]]:
        """The provider's schemas, unwrapped from ``{"type": "function", ...}`` if needed."""
        return [_unwrap(s) for s in call_hook(provider, "get_tool_schemas") or []]

    # ------------------------------------------------------------------ checks
    def test_name_is_a_short_identifier(self, provider: Any) -> None:
        """``name`` is a non-empty string without path separators."""
        assert isinstance(provider.name, str) and provider.name.strip()
        assert "/" not in provider.name and "\\" not in provider.name

    def test_is_available_does_no_network_io(
        self, provider: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``is_available()`` returns a bool without opening a socket or resolving a name."""

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("is_available() attempted network I/O")

        monkeypatch.setattr(socket.socket, "connect", refuse)
        monkeypatch.setattr(socket.socket, "connect_ex", refuse)
        monkeypatch.setattr(socket, "create_connection", refuse)
        monkeypatch.setattr(socket, "getaddrinfo", refuse)
        assert isinstance(call_hook(provider, "is_available"), bool)

    def test_initialize_accepts_documented_kwargs(self, ready: Any) -> None:
        """``initialize(session_id, **documented kwargs)`` does not raise."""
        assert ready is not None

    def test_tool_schemas_are_valid_openai_functions(self, ready: Any) -> None:
        """Every schema has a valid unique name, a description and an object ``parameters``."""
        schemas = self.tool_schemas(ready)
        names = [s.get("name") for s in schemas]
        assert len(names) == len(set(names)), f"duplicate tool names: {names}"
        for schema in schemas:
            assert isinstance(schema, dict)
            assert isinstance(schema.get("name"), str) and _TOOL_NAME.match(schema["name"])
            assert isinstance(schema.get("description", ""), str)
            params = schema.get("parameters", {"type": "object", "properties": {}})
            assert isinstance(params, dict) and params.get("type") == "object"
            assert isinstance(params.get("properties", {}), dict)
            json.dumps(schema)

    def test_handle_tool_call_returns_json(self, ready: Any) -> None:
        """Good, bad and unknown tool calls all come back as JSON strings."""
        schemas = self.tool_schemas(ready)
        if not callable(getattr(ready, "handle_tool_call", None)):
            assert not schemas, "a provider with tools must implement handle_tool_call"
            return
        for schema in schemas:
            for args in (sample_arguments(schema), {}, {"unexpected": object.__name__}):
                result = call_hook(ready, "handle_tool_call", schema["name"], args)
                assert isinstance(result, str), f"{schema['name']} returned {type(result)}"
                json.loads(result)
        unknown = call_hook(ready, "handle_tool_call", "no_such_tool_xyz", {})
        assert isinstance(unknown, str)
        json.loads(unknown)

    def test_hooks_tolerate_calls_before_initialize(self, provider: Any) -> None:
        """Every lifecycle hook may be called on an un-initialized provider."""
        for hook, args, kwargs in _lifecycle_calls():
            call_hook(provider, hook, *args, **kwargs)

    def test_hooks_run_after_initialize(self, ready: Any) -> None:
        """A full lifecycle on an initialized provider raises nothing; text hooks return str."""
        for hook, args, kwargs in _lifecycle_calls():
            result = call_hook(ready, hook, *args, **kwargs)
            if hook in ("system_prompt_block", "prefetch", "on_pre_compress"):
                text = result is None or isinstance(result, str)
                assert text or isinstance(result, LabelledContext), f"{hook} returned {result!r}"

    def test_capabilities_are_well_formed(self, ready: Any) -> None:
        """``capabilities()`` (optional) returns a dict: ``tool_names`` names tools the
        provider has, ``suppresses_local_writes`` is a bool or ``{"memory"|"user": bool}``."""
        if not callable(getattr(ready, "capabilities", None)):
            return
        caps = call_hook(ready, "capabilities")
        assert isinstance(caps, dict), f"capabilities() returned {caps!r}, expected a dict"
        if "tool_names" in caps:
            names = caps["tool_names"]
            assert isinstance(names, set | frozenset | list | tuple), f"tool_names: {names!r}"
            own = {s.get("name") for s in self.tool_schemas(ready)}
            assert set(names) <= own, f"tool_names {set(names) - own} are not its tools"
        if "suppresses_local_writes" in caps:
            flags = caps["suppresses_local_writes"]
            ok = isinstance(flags, bool) or (
                isinstance(flags, dict)
                and set(flags) <= CURATED_TARGETS
                and all(isinstance(v, bool) for v in flags.values())
            )
            assert ok, f"suppresses_local_writes: {flags!r}"

    def test_hooks_tolerate_calls_after_shutdown(self, ready: Any) -> None:
        """After ``shutdown`` every hook is still safe to call."""
        call_hook(ready, "shutdown")
        for hook, args, kwargs in _lifecycle_calls():
            call_hook(ready, hook, *args, **kwargs)

    def test_shutdown_is_idempotent(self, ready: Any) -> None:
        """``shutdown`` may be called several times."""
        call_hook(ready, "shutdown")
        call_hook(ready, "shutdown")
        call_hook(ready, "shutdown")
