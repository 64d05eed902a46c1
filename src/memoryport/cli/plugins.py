"""``memoryport plugins``: Hermes general plugins (tools and hooks), listed and enabled."""

from __future__ import annotations

from typing import Any

import click

from memoryport.admin.plugins import general_report, set_enabled
from memoryport.cli._common import echo_json, get_home, json_option, load_config_or_defaults
from memoryport.display import printable

__all__ = ["plugins_group"]


@click.group("plugins")
def plugins_group() -> None:
    """List, enable and disable Hermes general plugins (hermes_agent.plugins)."""


def _state(row: dict[str, Any]) -> str:
    if not row.get("installed", True):
        return "enabled, NOT INSTALLED"
    if not row.get("enabled"):
        return "disabled"
    if row.get("error"):
        return "enabled, FAILED"
    if "loaded" not in row:
        return "enabled"
    return f"enabled, {len(row.get('tools', []))} tools, hooks: {', '.join(row['hooks']) or '-'}"


@plugins_group.command("list")
@click.option("--no-check", is_flag=True, help="Do not load the enabled plugins.")
@json_option
def list_command(no_check: bool, as_json: bool) -> None:
    """List installed general plugins; enabled ones are loaded to report their tools."""
    home = get_home()
    report = general_report(home, load_config_or_defaults(home), check=not no_check)
    if as_json:
        echo_json(report)
        return
    for row in report["plugins"]:
        where = f"{row.get('source', '')} {row.get('version', '')}".strip()
        click.echo(f"{printable(row['name'])}  [{where or '-'}]  {_state(row)}")
        if row.get("error"):
            click.echo(f"    error: {printable(str(row['error']).splitlines()[0])}")
        for warning in row.get("warnings", []):
            click.echo(f"    warning: {printable(warning)}")
    if not report["plugins"]:
        click.echo("No general plugins installed.")
    for problem in report["problems"]:
        click.echo(f"warning: {printable(problem)}", err=True)


@plugins_group.command("enable")
@click.argument("name")
def enable_command(name: str) -> None:
    """Add NAME to plugins.enabled (it runs from the next session on)."""
    names = set_enabled(get_home(), name, True)
    click.echo(f"Enabled {name!r}; plugins.enabled: {', '.join(names)}")


@plugins_group.command("disable")
@click.argument("name")
def disable_command(name: str) -> None:
    """Remove NAME from plugins.enabled."""
    names = set_enabled(get_home(), name, False)
    click.echo(f"Disabled {name!r}; plugins.enabled: {', '.join(names) or '(none)'}")
