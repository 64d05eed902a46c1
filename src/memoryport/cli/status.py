"""``memoryport status``: built-in memory, the selected provider and its live health.

What is shown comes from :func:`memoryport.admin.status.gather_status`; this module prints
it and sets the exit code.
"""

from __future__ import annotations

from typing import Any

import click

from memoryport.admin.status import gather_status, problems
from memoryport.cli._common import echo_json, get_home, json_option, plural
from memoryport.display import printable

__all__ = ["status_command"]


def _print_builtin(data: dict[str, Any]) -> None:
    click.echo(click.style("Built-in memory", bold=True) + ": always active")
    for target, info in data["targets"].items():
        state = "" if info["enabled"] else " (disabled)"
        entries = info["entries"]
        count = plural(entries, "entry") if isinstance(entries, int) else entries
        click.echo(
            f"  {target}{state}: {count}, {info['used']}/{info['limit']} "
            f"chars ({info['percent']}%) - {info.get('location', info['path'])}"
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
    for key, value in (p.get("details") or {}).items():
        click.echo(printable(f"  {key.replace('_', ' ')}: {value}"))
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
    pause = data.get("pause") or {}
    if pause.get("active"):
        paused = " and ".join(k for k in ("writes", "recall") if pause.get(k))
        click.echo(click.style("Paused", bold=True) + f": {paused} (by {pause.get('by') or '?'};"
                   " resume with `memoryport resume`)")
    _print_builtin(data["builtin"])
    _print_provider(data["provider"])
    names = ", ".join(f"{p['name']} ({p['source']})" for p in data["providers"]) or "none"
    click.echo(click.style("Installed providers", bold=True) + f": {names}")
    for problem in data["discovery_problems"]:
        click.echo(f"  warning: {problem}")
    for row in (data.get("plugins") or {}).get("plugins", []):
        if row.get("enabled"):
            state = row.get("error") or f"tools: {', '.join(row.get('tools', [])) or '-'}"
            click.echo(click.style("General plugin", bold=True) + f" {row['name']}: {state}")
