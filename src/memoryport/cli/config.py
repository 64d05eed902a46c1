"""``memoryport config``: read and change ``config.yaml``.

Secrets are never printed: a password in ``sessions.dsn`` and provider fields that are
secret (by the provider's schema or by name, e.g. ``api_key``) show as ``***`` in
``config show``, ``config get`` and the echo of ``config set``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from memoryport.admin.providers import discover, secret_fields
from memoryport.cli._common import echo_json, get_home, json_option
from memoryport.config import (
    config_path,
    get_value,
    load_config,
    provider_env_var,
    set_value,
)
from memoryport.config.secrets import HIDDEN, looks_secret, mask_config, mask_dsn
from memoryport.display import printable
from memoryport.errors import ConfigError

__all__ = ["config_group"]


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _masked(home: Path, dotted: str, value: Any) -> Any:
    """``value`` of ``dotted`` as it may be shown: secrets become ``***``."""
    section, _, key = dotted.partition(".")
    if dotted in ("sessions.dsn", "storage.dsn") and isinstance(value, str):
        return mask_dsn(value)
    if section in ("memory", "sessions", "storage", "agent") or value in (None, ""):
        return value
    if looks_secret(key) or key in secret_fields(home).get(section, {}):
        return HIDDEN
    return value


@click.group("config")
def config_group() -> None:
    """Read and change settings in <home>/config.yaml."""


@config_group.command("get")
@click.argument("key")
@json_option
def get_command(key: str, as_json: bool) -> None:
    """Print the value of one setting.

    Secrets are shown as ***. Example: `memoryport config get memory.provider`.
    """
    home = get_home()
    value = _masked(home, key, get_value(home, key))
    if as_json:
        echo_json({"key": key, "value": value})
    else:
        click.echo(printable(_render(value)))


def _refuse_schema_secret(home: Path, key: str) -> None:
    """A field the provider marks secret belongs in .env, not in config.yaml."""
    section, _, field = key.partition(".")
    spec = secret_fields(home).get(section, {}).get(field)
    if spec is None:
        return
    env_var = provider_env_var(section, spec)
    raise ConfigError(
        f"{key} is a secret: it is not stored in config.yaml. Run `memoryport setup "
        f"{section}` (it stores it in <home>/.env, mode 0600), or set {env_var} in the "
        "environment or in <home>/.env"
    )


@config_group.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
def set_command(key: str, value: str) -> None:
    """Set one setting; the value is converted to the setting's type.

    The value is checked against the setting's range before anything is written.

    Examples: `memoryport config set memory.nudge_interval 5`,
    `memoryport config set sessions.hidden_sources tool,subagent`. Negative numbers need
    no `--` (they are refused where the setting's range excludes them). Provider fields
    marked secret are refused: store them with `memoryport setup NAME` (in .env).
    """
    home = get_home()
    _refuse_schema_secret(home, key)
    set_value(home, key, value)
    shown = _masked(home, key, get_value(home, key))
    click.echo(printable(f"{key} = {_render(shown)}"))
    if key == "memory.provider" and value.strip():
        _warn_if_not_installed(home, value.strip())


def _warn_if_not_installed(home: Path, name: str) -> None:
    """Warn when the newly selected provider is not installed (discovery imports nothing)."""
    found = discover(home)
    if found.get(name) is None:
        known = ", ".join(sorted(found.providers)) or "none"
        click.echo(
            printable(
                f"warning: no memory provider named {name!r} is installed yet (installed: "
                f"{known}); until it is, agents run with built-in memory only. Install it, "
                "or copy its plugin directory to <home>/plugins/ (`memoryport providers "
                "list`)."
            ),
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
    """Print the effective configuration (defaults filled in).

    Secrets (a password in sessions.dsn, provider keys) are shown as ***.
    """
    home = get_home()
    secret_keys = {name: set(specs) for name, specs in secret_fields(home).items()}
    data = mask_config(load_config(home).to_dict(), secret_keys)
    if as_json:
        echo_json(data)
    else:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        click.echo(printable(text.rstrip()))
