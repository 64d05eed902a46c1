"""``memoryport status``: built-in memory, the selected provider and its live health."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memoryport.cli._common import echo_json, get_home, json_option, mask, plural
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
from memoryport.display import printable
from memoryport.errors import MemoryportError
from memoryport.plugins import Discovery, discover, load
from memoryport.provider import MemoryProvider
from memoryport.types import InitContext

__all__ = ["gather_status", "probe_health", "problems", "status_command"]

_PROBE_QUERY = "memoryport status probe"


def _builtin_status(home: Path, config: Config) -> dict[str, Any]:
    from memoryport.providers.curated import CuratedMemory

    settings = config.memory
    store = CuratedMemory(
        home,
        memory_char_limit=settings.memory_char_limit,
        user_char_limit=settings.user_char_limit,
        memory_enabled=settings.memory_enabled,
        user_profile_enabled=settings.user_profile_enabled,
    )
    targets: dict[str, Any] = {}
    for target in store.targets:
        try:
            usage = store.usage(target)
            entries: int | str = len(store.entries(target))
            used, limit, percent = usage.used, usage.limit, usage.percent
        except (MemoryportError, OSError) as exc:
            entries, used, limit, percent = f"unreadable: {exc}", 0, 0, 0
        targets[target] = {
            "path": str(store.path(target)),
            "enabled": store.is_enabled(target),
            "entries": entries,
            "used": used,
            "limit": limit,
            "percent": percent,
        }
    return {"active": True, "targets": targets}


def probe_health(provider: MemoryProvider, home: Path, config: Config) -> dict[str, Any]:
    """Run the provider through a manager (initialize + one prefetch) and report health."""
    from memoryport.manager import ManagerSettings, MemoryManager

    deadline = config.memory.prefetch_deadline_s
    manager = MemoryManager(
        ManagerSettings(prefetch_deadline_s=deadline, init_deadline_s=max(deadline, 1.0))
    )
    try:
        manager.add_provider(provider)
        manager.initialize_all(
            "memoryport-status",
            **InitContext(home=home, platform="cli", agent_context="subagent").to_kwargs(),
        )
        manager.prefetch_all(_PROBE_QUERY, session_id="memoryport-status")
        return manager.health()
    finally:
        manager.shutdown_all()


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
    return found


def gather_status(home: Path, *, probe: bool = True) -> dict[str, Any]:
    """Everything ``memoryport status`` shows, as a JSON-ready dict."""
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
    data["builtin"] = _builtin_status(home, config)
    found = discover(home)
    name = config.memory.provider
    data["provider"] = _safe_provider_status(name, home, config, probe, found) if name else None
    data["providers"] = [
        {"name": n, "source": i.source, "version": i.manifest.version}
        for n, i in found.providers.items()
    ]
    data["discovery_problems"] = found.problems
    return data


def _print_builtin(data: dict[str, Any]) -> None:
    click.echo(click.style("Built-in memory", bold=True) + ": always active")
    for target, info in data["targets"].items():
        state = "" if info["enabled"] else " (disabled)"
        entries = info["entries"]
        count = plural(entries, "entry") if isinstance(entries, int) else entries
        click.echo(
            f"  {target}{state}: {count}, {info['used']}/{info['limit']} "
            f"chars ({info['percent']}%) - {info['path']}"
        )


def _print_health(health: dict[str, Any]) -> None:
    for provider_name, view in health.items():
        click.echo(f"  health of {provider_name}:")
        for hook, stats in sorted((view.get("hooks") or {}).items()):
            click.echo(
                f"    {hook}: calls={stats.get('calls')} errors={stats.get('errors')} "
                f"timeouts={stats.get('timeouts')} skipped={stats.get('skipped')} "
                f"p50={stats.get('p50_ms')}ms p95={stats.get('p95_ms')}ms"
            )
            if stats.get("last_error"):
                click.echo(f"      last error: {stats['last_error']}")
        for key in ("breaker", "queue"):
            if key in view:
                click.echo(f"    {key}: {view[key]}")


def _print_provider(p: dict[str, Any] | None) -> None:
    if p is None:
        click.echo(click.style("Provider", bold=True) + ": none (built-in only)")
        return
    click.echo(click.style("Provider", bold=True) + f": {p['name']}")
    click.echo(f"  plugin: {'installed' if p['installed'] else 'MISSING'}")
    for key in ("source", "location", "version"):
        if p.get(key):
            click.echo(f"  {key}: {p[key]}")
    if "available" in p:
        click.echo(f"  available: {'yes' if p['available'] else 'no'}")
    for key, value in (p.get("config") or {}).items():
        click.echo(printable(f"  config {key}: {value}"))
    for var in p.get("missing_env", []):
        click.echo(f"  missing env var: {var}")
    for problem in p.get("config_problems", []):
        click.echo(f"  config problem: {problem}")
    for warning in p.get("warnings", []):
        click.echo(f"  warning: {warning}")
    if p.get("error"):
        click.echo("  load error:")
        click.echo(printable("    " + str(p["error"]).rstrip().replace("\n", "\n    ")))
    if p.get("health"):
        _print_health(p["health"])
    if p.get("health_error"):
        click.echo(f"  health probe failed: {p['health_error']}")


@click.command("status")
@click.option("--no-probe", is_flag=True, help="Do not initialize the provider to measure health.")
@json_option
def status_command(no_probe: bool, as_json: bool) -> None:
    """Show built-in memory, the selected provider (config, availability, health).

    Exits 1 when config.yaml or .env cannot be read (the rest is shown with default
    settings) and when the selected provider is not installed or fails to load.
    """
    data = gather_status(get_home(), probe=not no_probe)
    if as_json:
        echo_json(data)
    else:
        _print_status(data)
    found = problems(data)
    if found:
        raise click.ClickException("; ".join(found))


def _print_status(data: dict[str, Any]) -> None:
    click.echo(f"Home: {data['home']} (profile {data['profile']})")
    click.echo(f"Config: {data['config_path']}")
    if data.get("config_error"):
        click.echo("  config: INVALID (see the error below); showing default settings")
    if data.get("env_error"):
        click.echo("  .env: UNREADABLE (see the error below); its secrets are not used")
    _print_builtin(data["builtin"])
    _print_provider(data["provider"])
    names = ", ".join(f"{p['name']} ({p['source']})" for p in data["providers"]) or "none"
    click.echo(click.style("Installed providers", bold=True) + f": {names}")
    for problem in data["discovery_problems"]:
        click.echo(f"  warning: {problem}")
