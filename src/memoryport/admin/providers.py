"""Provider plugins for shells: list them, load one, read its config schema, probe it.

Listing (``discover``) reads ``plugin.yaml`` files and package metadata only; nothing is
imported. ``load`` imports one plugin and records a failure instead of raising.
``probe_health`` runs a loaded provider through a real manager (``initialize`` and one
prefetch, as a subagent so it writes nothing) and returns the manager's health view.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryport.config import Config
from memoryport.errors import PluginError
from memoryport.manager import ManagerSettings, MemoryManager
from memoryport.plugins import Discovery, LoadResult, ProviderInfo, discover, load
from memoryport.plugins.commands import active_provider_command
from memoryport.provider import MemoryProvider
from memoryport.types import InitContext

__all__ = [
    "Discovery",
    "LoadResult",
    "ProviderInfo",
    "active_provider_command",
    "config_schema",
    "describe",
    "discover",
    "load",
    "probe_health",
    "secret_fields",
]

PROBE_QUERY = "memoryport status probe"
"""The recall query ``probe_health`` sends."""

PROBE_SESSION = "memoryport-status"
"""The session id ``probe_health`` initializes the provider with."""


def config_schema(provider: Any, info: ProviderInfo) -> list[dict[str, Any]]:
    """The provider's ``get_config_schema()``, or its manifest's ``config`` when it has none.

    A provider that only matches the shape may lack the method; that counts as none.
    Whatever ``get_config_schema()`` raises propagates.
    """
    get_schema = getattr(provider, "get_config_schema", None)
    schema = [dict(s) for s in (get_schema() if callable(get_schema) else None) or []]
    return schema or [dict(s) for s in info.manifest.config]


def secret_fields(home: Path) -> dict[str, dict[str, Mapping[str, Any]]]:
    """``{provider: {key: field spec}}`` of the fields each installed provider's manifest
    marks secret (nothing is imported). A broken plugin directory gives ``{}``, so callers
    that mask by name still work."""
    try:
        found = discover(home)
    except Exception:  # a broken plugin directory must not hide the masking by name
        return {}
    return {
        name: {str(spec["key"]): spec for spec in info.manifest.config if spec.get("secret")}
        for name, info in found.providers.items()
    }


def _offered(provider: Any) -> dict[str, Any]:
    """What a loaded provider offers: availability, config schema, tool names."""
    try:
        schema = list(provider.get_config_schema() or [])
    except Exception as exc:  # the schema is advisory here
        schema = [{"key": "?", "description": f"get_config_schema() failed: {exc}"}]
    return {
        "available": bool(provider.is_available()),
        "config_schema": schema,
        "tools": [s.get("name") for s in provider.get_tool_schemas() or []],
    }


def describe(name: str, home: Path, *, check: bool = False) -> dict[str, Any]:
    """One installed provider's metadata (``ProviderInfo.to_dict()``) as JSON.

    With ``check`` the plugin is imported: ``loaded``, ``error`` (the traceback), and when
    it loaded ``available``, ``config_schema`` and ``tools``. ``PluginError`` naming the
    installed providers when ``name`` is not installed.
    """
    found = discover(home)
    info = found.get(name)
    if info is None:
        installed = ", ".join(found.providers) or "none"
        raise PluginError(f"provider {name!r} is not installed (installed: {installed})")
    data: dict[str, Any] = info.to_dict()
    if check:
        result = load(name, home, discovery=found)
        data["loaded"] = result.ok
        data["error"] = result.traceback or result.error
        if result.provider is not None:
            data.update(_offered(result.provider))
    return data


def probe_health(provider: MemoryProvider, home: Path, config: Config) -> dict[str, Any]:
    """Run the provider through a manager (initialize + one prefetch) and report health.

    The provider is initialized with ``agent_context="subagent"`` (providers skip writes
    for it) and shut down before this returns.
    """
    deadline = config.memory.prefetch_deadline_s
    manager = MemoryManager(
        # initialize gets the manager's own deadline: a provider whose SDK takes seconds
        # to import (mem0 under load) is still probed, not reported as dead
        ManagerSettings(prefetch_deadline_s=deadline,
                        init_deadline_s=max(deadline, ManagerSettings().init_deadline_s))
    )
    try:
        manager.add_provider(provider)
        manager.initialize_all(
            PROBE_SESSION,
            **InitContext(home=home, platform="cli", agent_context="subagent").to_kwargs(),
        )
        manager.prefetch_all(PROBE_QUERY, session_id=PROBE_SESSION)
        return manager.health()
    finally:
        manager.shutdown_all()
