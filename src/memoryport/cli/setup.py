"""``memoryport setup``: pick, install and configure a memory provider.

Interactive by default; fully scriptable with ``--set key=value`` and ``--yes``::

    memoryport setup mem0 --set api_key=... --set region=eu-west --yes
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from memoryport.admin.providers import (
    Discovery,
    ProviderInfo,
    config_schema,
    discover,
    load,
)
from memoryport.cli._common import get_home, load_home_env
from memoryport.config import (
    coerce,
    config_path,
    ensure_home,
    env_path,
    get_secret,
    load_config,
    provider_env_var,
    save_config,
    write_env,
)
from memoryport.config.schema import validate_config
from memoryport.errors import ConfigError, PluginError
from memoryport.provider import MemoryProvider

__all__ = ["setup_command"]

_BUILTIN_NAMES = ("", "builtin", "built-in", "none")
_RESERVED = ("memory", "sessions", "agent")
_FIELD_TYPES: dict[str, type[Any]] = {"integer": int, "number": float, "boolean": bool}


# --------------------------------------------------------------------------- dependencies


def _requirement_name(spec: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return match.group(1) if match else spec.strip()


def missing_requirements(specs: tuple[str, ...]) -> list[str]:
    """The pip requirement specs whose distribution is not installed."""
    missing = []
    for spec in specs:
        try:
            metadata.distribution(_requirement_name(spec))
        except metadata.PackageNotFoundError:
            missing.append(spec)
    return missing


def run_pip(requirements: list[str]) -> int:
    """Install into the running interpreter's environment; returns pip's exit code."""
    command = [sys.executable, "-m", "pip", "install", *requirements]
    click.echo("$ " + " ".join(shlex.quote(c) for c in command))
    return subprocess.run(command, check=False).returncode


def _install_dependencies(info: ProviderInfo, yes: bool, install: bool) -> None:
    missing = missing_requirements(info.manifest.pip_dependencies)
    if not missing:
        return
    click.echo(f"{info.name} needs: {', '.join(missing)}")
    if not install:
        click.echo("Skipping installation (--no-install).")
        return
    if not yes and not click.confirm("Install them now with pip?", default=True):
        click.echo("Not installed; the provider may fail to load until they are.")
        return
    if run_pip(missing) != 0:
        raise PluginError(f"pip could not install {', '.join(missing)}", plugin=info.name)


def _external_hints(info: ProviderInfo) -> None:
    for dep in info.manifest.external_dependencies:
        if dep.check:
            try:
                ok = (
                    subprocess.run(
                        shlex.split(dep.check), capture_output=True, timeout=10, check=False
                    ).returncode
                    == 0
                )
            except (OSError, subprocess.TimeoutExpired, ValueError):
                ok = False
            if ok:
                continue
        click.echo(f"External dependency {dep.name!r} is needed.")
        if dep.install:
            click.echo(f"  Install it with: {dep.install}")


# --------------------------------------------------------------------------- values


def _parse_sets(pairs: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--set")
        values[key.strip()] = value
    return values


def _field_type(spec: dict[str, Any]) -> type[Any]:
    declared = spec.get("type")
    if isinstance(declared, str) and declared in _FIELD_TYPES:
        return _FIELD_TYPES[declared]
    default = spec.get("default")
    return type(default) if isinstance(default, bool | int | float) else str


def _prompt_field(spec: dict[str, Any], current: Any, secret_set: bool) -> Any:
    key = str(spec["key"])
    label = str(spec.get("description") or key)
    if spec.get("url"):
        click.echo(f"  {key}: get it at {spec['url']}")
    if spec.get("secret"):
        hint = " (leave empty to keep the current value)" if secret_set else ""
        return click.prompt(
            f"{label}{hint}", default="", hide_input=True, show_default=False
        ).strip()
    choices = spec.get("choices")
    default = current if current not in (None, "") else spec.get("default")
    if choices:
        return click.prompt(
            label,
            type=click.Choice([str(c) for c in choices]),
            default=None if default is None else str(default),
        )
    return click.prompt(label, default="" if default is None else str(default), show_default=True)


def _collect(
    name: str, schema: list[dict[str, Any]], sets: dict[str, str], home: Path, interactive: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return (non-secret values, secret env var -> value) for the schema fields."""
    section = load_config(home).provider_section(name)
    values: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    for spec in schema:
        key = str(spec["key"])
        env_var = provider_env_var(name, spec)
        secret_set = get_secret(home, env_var) is not None
        if key in sets:
            raw: Any = sets[key]
        elif interactive:
            raw = _prompt_field(spec, section.get(key), secret_set)
        else:
            raw = section.get(key, spec.get("default"))
        if raw in (None, ""):
            continue
        value = coerce(f"{name}.{key}", raw, _field_type(spec))
        if spec.get("secret"):
            secrets[env_var] = str(value)
        else:
            values[key] = value
    unknown = sorted(set(sets) - {str(s["key"]) for s in schema})
    if unknown:
        known = ", ".join(str(s["key"]) for s in schema) or "none"
        raise ConfigError(f"{name}: unknown setting(s) {', '.join(unknown)} (known: {known})")
    return values, secrets


def _validate(
    instance: Any,
    name: str,
    schema: list[dict[str, Any]],
    values: dict[str, Any],
    secrets: dict[str, str],
    home: Path,
) -> None:
    check = dict(values)
    for spec in schema:
        env_var = provider_env_var(name, spec)
        if spec.get("secret") or spec.get("env_var"):
            secret = secrets.get(env_var) or get_secret(home, env_var)
            if secret is not None and spec["key"] not in check:
                check[str(spec["key"])] = secret
    problems = validate_config(schema, check)
    rules = getattr(instance, "check_config", None)
    if not problems and callable(rules):
        problems = [str(p) for p in rules(dict(values))]
    if problems:
        raise ConfigError(
            f"invalid settings for {name}:\n  " + "\n  ".join(problems), problems=problems
        )


# --------------------------------------------------------------------------- flow


def _pick(found: Discovery, current: str) -> str:
    names = list(found.providers)
    click.echo("Memory providers:")
    click.echo("  0. Built-in only (MEMORY.md / USER.md and session search)")
    for index, name in enumerate(names, start=1):
        desc = found.providers[name].manifest.description.splitlines()
        click.echo(f"  {index}. {name}" + (f": {desc[0][:70]}" if desc else ""))
    default = names.index(current) + 1 if current in names else 0
    choice = click.prompt("Choose", type=click.IntRange(0, len(names)), default=default)
    return "" if choice == 0 else names[choice - 1]


def _overrides_post_setup(provider: Any) -> bool:
    method = getattr(type(provider), "post_setup", None)
    return callable(method) and method is not MemoryProvider.post_setup


def _activate(home: Path, name: str, section: dict[str, Any] | None = None) -> None:
    updates: dict[str, Any] = {"memory": {"provider": name}}
    if section:
        updates[name] = section
    save_config(home, updates)


@click.command("setup")
@click.argument("provider", required=False)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a config field.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask: install dependencies, use defaults.")
@click.option("--no-install", is_flag=True, help="Never run pip.")
def setup_command(provider: str | None, sets: tuple[str, ...], yes: bool, no_install: bool) -> None:
    """Choose the memory provider, install its dependencies and configure it."""
    home = get_home()
    ensure_home(home)
    found = discover(home)
    if provider is None:
        if yes:
            raise click.UsageError("name a PROVIDER (or 'builtin') when using --yes")
        provider = _pick(found, load_config(home).memory.provider)
    if provider.lower() in _BUILTIN_NAMES:
        _activate(home, "")
        click.echo(f"Built-in memory only; no external provider ({config_path(home)}).")
        return
    info = found.get(provider)
    if info is None:
        raise PluginError(
            f"provider {provider!r} is not installed (installed: "
            f"{', '.join(found.providers) or 'none'}); see `memoryport providers list`",
            plugin=provider,
        )
    if provider in _RESERVED:
        raise PluginError(
            f"provider name {provider!r} clashes with a config block", plugin=provider
        )
    _install_dependencies(info, yes, not no_install)
    _external_hints(info)
    result = load(provider, home)
    if result.provider is None:
        raise PluginError(f"could not load {provider!r}:\n{result.traceback or result.error}")
    instance = result.provider
    sets_map = _parse_sets(sets)
    if _overrides_post_setup(instance) and not sets_map and not yes:
        instance.post_setup(str(home), load_config(home).to_dict())
        _activate(home, provider)
        click.echo(f"Activated {provider!r} ({config_path(home)}).")
        return
    schema = config_schema(instance, info)
    values, secrets = _collect(provider, schema, sets_map, home, interactive=not yes)
    _validate(instance, provider, schema, values, secrets, home)
    if secrets:
        write_env(home, secrets)
        load_home_env(click.get_current_context(), home)  # the provider reads os.environ
    _activate(home, provider, values)
    save_native = getattr(instance, "save_config", None)
    if callable(save_native):
        save_native(values, str(home))
    click.echo(f"Activated {provider!r} ({config_path(home)}).")
    if secrets:
        click.echo(f"Secrets stored in {env_path(home)}: {', '.join(sorted(secrets))}")
    if not instance.is_available():
        click.echo(f"Note: {provider!r} reports it is not available yet; see `memoryport status`.")
