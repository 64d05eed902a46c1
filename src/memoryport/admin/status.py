"""What ``memoryport status`` reports about a home, as one JSON-ready dict.

``gather_status(home)`` reads ``config.yaml`` and ``.env`` (a broken one is reported, and
the defaults are used), the curated-memory budgets, every installed provider (discovery
only) and the selected provider: loaded, available, its config with secrets masked, what
is missing and, with ``probe``, its live health. ``problems(data)`` lists what should make
a shell report failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.admin.curated import usage_summary
from memoryport.admin.facts import status_details
from memoryport.admin.pause import pause_state
from memoryport.admin.plugins import general_report
from memoryport.admin.providers import Discovery, discover, load, probe_health
from memoryport.config import (
    Config,
    config_path,
    get_secret,
    load_config,
    missing_env_vars,
    profile_name,
    provider_env_var,
    read_env,
    validate_provider_config,
)
from memoryport.errors import MemoryportError

__all__ = ["gather_status", "mask", "problems"]


def mask(value: Any) -> str:
    """How a secret is shown: ``set`` or ``missing``, never its value."""
    return "set" if value not in (None, "") else "missing"


def _masked_config(name: str, config: Config, schema: list[dict[str, Any]], home: Path) -> Any:
    shown: dict[str, Any] = dict(config.provider_section(name))
    for spec in schema:
        key = str(spec.get("key"))
        if spec.get("secret"):
            shown[key] = mask(shown.get(key) or get_secret(home, provider_env_var(name, spec)))
    return shown


def _provider_status(
    name: str, home: Path, config: Config, probe: bool, found: Discovery
) -> dict[str, Any]:
    info = found.get(name)
    status: dict[str, Any] = {"name": name, "installed": info is not None}
    if info is None:
        status["error"] = f"plugin {name!r} is not installed"
        return status
    status.update(source=info.source, location=info.location, version=info.manifest.version)
    result = load(name, home, discovery=found)
    status["loaded"] = result.ok
    status["warnings"] = result.warnings
    if result.provider is None:
        status["error"] = result.traceback or result.error
        return status
    provider = result.provider
    try:
        schema = [dict(s) for s in provider.get_config_schema() or []]
    except Exception as exc:
        schema, status["schema_error"] = [], f"{type(exc).__name__}: {exc}"
    schema = schema or [dict(s) for s in info.manifest.config]
    try:
        status["available"] = bool(provider.is_available())
    except Exception as exc:
        status["available"], status["availability_error"] = False, f"{type(exc).__name__}: {exc}"
    status["config"] = _masked_config(name, config, schema, home)
    status["config_problems"] = validate_provider_config(name, schema, config, home)
    status["missing_env"] = sorted(
        set(missing_env_vars(name, schema, config, home))
        | {v for v in info.manifest.requires_env if get_secret(home, v) is None}
    )
    if name == "holographic":
        status["details"] = status_details(home)
    if probe and status["available"]:
        try:
            status["health"] = probe_health(provider, home, config)
        except Exception as exc:
            status["health_error"] = f"{type(exc).__name__}: {exc}"
    return status


def _safe_provider_status(
    name: str, home: Path, config: Config, probe: bool, found: Discovery
) -> dict[str, Any]:
    """``_provider_status``, with an unreadable .env or config reported, not raised."""
    try:
        return _provider_status(name, home, config, probe, found)
    except MemoryportError as exc:
        return {"name": name, "installed": found.get(name) is not None, "error": str(exc)}


def problems(data: dict[str, Any]) -> list[str]:
    """What makes ``memoryport status`` exit 1: a broken config/.env or active provider."""
    found: list[str] = []
    if data.get("config_error"):
        found.append(f"config.yaml is invalid: {data['config_error']}")
    if data.get("env_error"):
        found.append(f".env is unreadable: {data['env_error']}")
    provider = data.get("provider")
    if provider and not provider.get("installed"):
        found.append(f"provider {provider['name']!r} is selected but not installed")
    elif provider and provider.get("error"):
        found.append(f"provider {provider['name']!r} failed to load (see above)")
    for row in (data.get("plugins") or {}).get("plugins", []):
        if row.get("enabled") and row.get("error"):
            found.append(f"general plugin {row['name']!r} is enabled but did not load (see above)")
    return found


def gather_status(home: Path, *, probe: bool = True) -> dict[str, Any]:
    """Everything ``memoryport status`` shows, as a JSON-ready dict.

    Keys: ``home``, ``profile``, ``config_path``, ``config_error``/``env_error`` (when
    unreadable), ``builtin`` (curated memory per target), ``provider`` (None for built-in
    only), ``providers`` (installed: name, source, version), ``discovery_problems``,
    ``pause`` (what is paused: ``memoryport.admin.pause``).
    """
    data: dict[str, Any] = {
        "home": str(home),
        "profile": profile_name(home),
        "config_path": str(config_path(home)),
    }
    try:
        config = load_config(home)
    except MemoryportError as exc:
        data["config_error"] = str(exc)
        config = Config()
    try:
        read_env(home)
    except MemoryportError as exc:
        data["env_error"] = str(exc)
    data["builtin"] = usage_summary(home, config.memory)
    found = discover(home)
    name = config.memory.provider
    data["provider"] = _safe_provider_status(name, home, config, probe, found) if name else None
    data["providers"] = [
        {"name": n, "source": i.source, "version": i.manifest.version}
        for n, i in found.providers.items()
    ]
    data["discovery_problems"] = found.problems
    data["plugins"] = general_report(home, config)  # Hermes general plugins (plugins.enabled)
    data["pause"] = pause_state(home).to_dict()
    return data
