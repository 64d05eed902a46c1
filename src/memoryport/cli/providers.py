"""``memoryport providers``: the installed provider plugins (listing never imports them)."""

from __future__ import annotations

from typing import Any

import click

from memoryport.admin.providers import describe, discover
from memoryport.cli._common import echo_json, get_home, json_option, print_table
from memoryport.config import load_config

__all__ = ["providers_group"]


@click.group("providers")
def providers_group() -> None:
    """List and inspect memory provider plugins."""


@providers_group.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """List installed providers (read from plugin.yaml / package metadata only)."""
    home = get_home()
    found = discover(home)
    active = load_config(home).memory.provider
    if as_json:
        echo_json(
            {
                "active": active,
                "providers": [
                    {**info.to_dict(), "active": name == active}
                    for name, info in found.providers.items()
                ],
                "problems": found.problems,
            }
        )
        return
    rows = [
        (
            ("* " if name == active else "  ") + name,
            info.source,
            info.manifest.version,
            info.manifest.description.splitlines()[0][:70] if info.manifest.description else "",
        )
        for name, info in found.providers.items()
    ]
    print_table("Memory providers", ["name", "source", "version", "description"], rows)
    if not rows:
        click.echo("No provider plugins installed; built-in memory is always available.")
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)


@providers_group.command("show")
@click.argument("name")
@click.option("--check", is_flag=True, help="Also import it: availability, tools, config schema.")
@json_option
def show_command(name: str, check: bool, as_json: bool) -> None:
    """Show one provider's metadata; with --check, load it and report what it offers.

    With --check, exits 1 when the plugin fails to load.
    """
    home = get_home()
    if name.lower() in BUILTIN_NAMES:
        _show_builtin(as_json)
        return
    data = describe(name, home, check=check)
    if as_json:
        echo_json(data)
    else:
        _print_show(data)
    if check and not data["loaded"]:
        raise SystemExit(1)


BUILTIN_NAMES = ("builtin", "built-in", "none", "default")
"""Names meaning "built-in memory only" (``memoryport setup builtin``)."""

_BUILTIN_TEXT = (
    "Built-in memory: MEMORY.md / USER.md (curated memory) and session search over "
    "state.db. Always active; an external provider adds to it. Select only the built-in "
    "memory with `memoryport setup builtin`."
)


def _show_builtin(as_json: bool) -> None:
    data = {
        "name": "builtin",
        "source": "builtin",
        "installed": True,
        "description": _BUILTIN_TEXT,
        "tools": ["memory", "session_search"],
    }
    if as_json:
        echo_json(data)
        return
    click.echo("name: builtin")
    click.echo("source: built into memoryport (always installed)")
    click.echo(f"description: {_BUILTIN_TEXT}")
    click.echo("tools: memory, session_search")


def _print_show(data: dict[str, Any]) -> None:
    manifest = data["manifest"]
    click.echo(f"name: {data['name']}")
    click.echo(f"source: {data['source']}")
    click.echo(f"location: {data['location']}")
    click.echo(f"version: {data['version'] or '-'}")
    click.echo(f"description: {data['description'] or '-'}")
    for key in ("pip_dependencies", "hooks", "requires_env"):
        if manifest[key]:
            click.echo(f"{key}: {', '.join(manifest[key])}")
    for dep in manifest["external_dependencies"]:
        click.echo(f"external dependency: {dep['name']} (install: {dep['install'] or '-'})")
    fields = data.get("config_schema") or manifest["config"]
    for field in fields:
        flags = [f for f in ("required", "secret") if field.get(f)]
        extra = f" [{', '.join(flags)}]" if flags else ""
        default = f" (default: {field['default']!r})" if "default" in field else ""
        click.echo(f"  config {field.get('key')}{extra}{default}: {field.get('description', '')}")
    if "loaded" in data:
        click.echo(f"loaded: {'yes' if data['loaded'] else 'no'}")
        if data["error"]:
            click.echo(data["error"].rstrip())
    if "available" in data:
        click.echo(f"available: {'yes' if data['available'] else 'no'}")
        click.echo(f"tools: {', '.join(str(t) for t in data['tools']) or '-'}")
