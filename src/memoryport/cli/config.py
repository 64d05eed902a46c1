"""``memoryport config``: read and change ``config.yaml``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from memoryport.cli._common import echo_json, get_home, json_option
from memoryport.config import config_path, get_value, load_config, set_value

__all__ = ["config_group"]


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


@click.group("config")
def config_group() -> None:
    """Read and change settings in <home>/config.yaml."""


@config_group.command("get")
@click.argument("key")
@json_option
def get_command(key: str, as_json: bool) -> None:
    """Print the value of one setting.

    Example: `memoryport config get memory.provider`.
    """
    value = get_value(get_home(), key)
    if as_json:
        echo_json({"key": key, "value": value})
    else:
        click.echo(_render(value))


@config_group.command("set")
@click.argument("key")
@click.argument("value")
def set_command(key: str, value: str) -> None:
    """Set one setting; the value is converted to the setting's type.

    Examples: `memoryport config set memory.nudge_interval 5`,
    `memoryport config set sessions.hidden_sources tool,subagent`.
    """
    home = get_home()
    set_value(home, key, value)
    click.echo(f"{key} = {_render(get_value(home, key))}")
    if key == "memory.provider" and value.strip():
        _warn_if_not_installed(home, value.strip())


def _warn_if_not_installed(home: Path, name: str) -> None:
    """Warn when the newly selected provider is not installed (discovery imports nothing)."""
    from memoryport.plugins.discovery import discover

    found = discover(home)
    if found.get(name) is None:
        known = ", ".join(sorted(found.providers)) or "none"
        click.echo(
            f"warning: no memory provider named {name!r} is installed yet (installed: "
            f"{known}); until it is, agents run with built-in memory only. Install it, or "
            "copy its plugin directory to <home>/plugins/ (`memoryport providers list`).",
            err=True,
        )


@config_group.command("path")
@json_option
def path_command(as_json: bool) -> None:
    """Print the path of config.yaml (for the selected home and profile)."""
    home = get_home()
    if as_json:
        echo_json({"home": str(home), "config": str(config_path(home))})
    else:
        click.echo(str(config_path(home)))


@config_group.command("show")
@json_option
def show_command(as_json: bool) -> None:
    """Print the effective configuration (defaults filled in)."""
    data = load_config(get_home()).to_dict()
    if as_json:
        echo_json(data)
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False).rstrip())
