"""``memoryport honcho ...``: the provider's command group, listed only while Honcho is the
active provider (``memory.provider: honcho``). Every command acts on the active profile's
host block (``memoryport`` or ``memoryport.<profile>``) of the ``honcho.json`` in use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memoryport.config import ensure_home, profile_name, resolve_home, save_config, write_env
from memoryport.errors import MemoryportError
from memoryport.providers.honcho.config import (
    LEVELS,
    OBSERVATION_MODES,
    RECALL_MODES,
    HonchoConfig,
    host_key,
)
from memoryport.providers.honcho.provider import HonchoProvider
from memoryport.providers.honcho.schema import edit_file, set_host

__all__ = ["register_cli"]


def _home() -> Path:
    obj = click.get_current_context().find_root().obj
    home = getattr(obj, "home", None)
    return Path(home) if home is not None else resolve_home()


def _set(values: dict[str, Any]) -> None:
    home = _home()
    path = edit_file(home, lambda data, host: set_host(data, host, values))
    shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
    click.echo(f"{host_key(home)}: {shown} ({path})")


def _resolved(home: Path) -> dict[str, Any]:
    config = HonchoConfig.load(home)
    data = {k: v for k, v in vars(config).items() if k != "api_key"}
    data["api_key"] = "set" if config.api_key else "missing"
    data["url"] = config.url
    data["dialectic_pass_levels"] = config.pass_levels()
    return data


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option("--no-probe", is_flag=True, help="Do not contact the server.")
def status_command(as_json: bool, no_probe: bool) -> None:
    """Show the resolved config of the active profile and whether the server answers."""
    home = _home()
    try:
        data: dict[str, Any] = {"profile": profile_name(home), "config": _resolved(home)}
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from None
    if not no_probe and data["config"]["enabled"]:
        provider = HonchoProvider(HonchoConfig.load(home), home)
        try:
            provider.initialize("memoryport-honcho-status", home=str(home),
                                agent_context="subagent")
            data["server"] = provider.status()
        finally:
            provider.shutdown()
    if as_json:
        click.echo(json.dumps(data, default=str))
        return
    config = data["config"]
    click.echo(f"host {config['host']} (profile {data['profile']}), file:"
               f" {config['path'] or 'none (defaults)'}")
    for key in ("enabled", "url", "workspace", "peer_name", "ai_peer", "recall_mode",
                "observation_mode", "write_frequency", "session_strategy", "dialectic_depth",
                "dialectic_cadence", "context_cadence", "context_tokens", "api_key"):
        click.echo(f"  {key}: {config[key]}")
    server = data.get("server")
    if server:
        state = "reachable" if server["reachable"] else f"UNREACHABLE: {server['error']}"
        click.echo(f"  server: {state}; pending writes: {server['pending_writes']}")


@click.command("setup")
@click.option("--api-key", default=None, help="Honcho API key (stored in <home>/.env).")
@click.option("--base-url", default=None, help="Self-hosted Honcho URL.")
@click.option("--workspace", default=None)
@click.option("--peer-name", default=None, help="User peer name.")
@click.option("--ai-peer", default=None, help="AI peer name.")
@click.option("--recall-mode", type=click.Choice(RECALL_MODES), default=None)
@click.option("--yes", "-y", is_flag=True, help="Do not ask; use what was given.")
def setup_command(api_key: str | None, base_url: str | None, workspace: str | None,
                  peer_name: str | None, ai_peer: str | None, recall_mode: str | None,
                  yes: bool) -> None:
    """Set up Honcho (cloud or self-hosted) for the active profile and activate it."""
    home = _home()
    ensure_home(home)
    if not yes:
        if base_url is None and click.confirm("Self-hosted Honcho?", default=False):
            base_url = click.prompt("Base URL", default="http://localhost:8000")
        if api_key is None and not base_url:
            api_key = click.prompt("API key (app.honcho.dev)", hide_input=True,
                                   default="", show_default=False) or None
        peer_name = peer_name or click.prompt("Your peer name", default="") or None
        recall_mode = recall_mode or click.prompt(
            "Recall mode", type=click.Choice(RECALL_MODES), default="hybrid")
    values: dict[str, Any] = {k: v for k, v in (("baseUrl", base_url), ("workspace", workspace),
                                ("peerName", peer_name), ("aiPeer", ai_peer),
                                ("recallMode", recall_mode)) if v}
    values["enabled"] = True
    if api_key:
        write_env(home, {"HONCHO_API_KEY": api_key})
    _set(values)
    save_config(home, {"memory": {"provider": "honcho"}})
    click.echo("Honcho is the active memory provider." + (
        " API key stored in .env." if api_key else ""))


@click.command("enable")
def enable_command() -> None:
    """Turn Honcho on for the active profile."""
    _set({"enabled": True})


@click.command("disable")
def disable_command() -> None:
    """Turn Honcho off for the active profile."""
    _set({"enabled": False})


@click.command("mode")
@click.argument("mode", type=click.Choice([*RECALL_MODES, *OBSERVATION_MODES]))
def mode_command(mode: str) -> None:
    """Change the recall mode (hybrid/context/tools) or observation mode
    (directional/unified)."""
    _set({"recallMode" if mode in RECALL_MODES else "observationMode": mode})


@click.command("peer")
@click.option("--user", "user", default=None, help="User peer name.")
@click.option("--ai", "ai", default=None, help="AI peer name.")
@click.option("--reasoning", type=click.Choice(LEVELS), default=None,
              help="Base dialectic reasoning level.")
def peer_command(user: str | None, ai: str | None, reasoning: str | None) -> None:
    """Update the user or AI peer name (or the reasoning level)."""
    values = {k: v for k, v in (("peerName", user), ("aiPeer", ai),
                                ("dialecticReasoningLevel", reasoning)) if v}
    if not values:
        raise click.UsageError("give --user NAME, --ai NAME or --reasoning LEVEL")
    _set(values)


@click.command("tokens")
@click.option("--context", type=click.IntRange(50), default=None, help="contextTokens.")
@click.option("--dialectic", type=click.IntRange(50), default=None,
              help="dialecticMaxChars.")
def tokens_command(context: int | None, dialectic: int | None) -> None:
    """Set the context token budget or the dialectic max chars."""
    values = {k: v for k, v in (("contextTokens", context), ("dialecticMaxChars", dialectic))
              if v is not None}
    if not values:
        raise click.UsageError("give --context N or --dialectic N")
    _set(values)


@click.command("map")
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Directory to map (default: the current one).")
def map_command(name: str, directory: Path | None) -> None:
    """Map the current directory to a Honcho session name."""
    where = str((directory or Path.cwd()).resolve())
    if not name.strip():
        raise click.UsageError("the session name must not be empty")

    def change(data: dict[str, Any], host: str) -> None:
        data.setdefault("sessions", {})[where] = name.strip()

    path = edit_file(_home(), change)
    click.echo(f"{where} -> session {name.strip()!r} ({path})")


@click.command("sync")
def sync_command() -> None:
    """Create a host block for every memoryport profile (aiPeer = the profile name)."""
    home = _home()
    root = home.parent.parent if home.parent.name == "profiles" else home
    profiles = sorted(p.name for p in (root / "profiles").glob("*") if p.is_dir())
    hosts = {"memoryport": "memoryport", **{f"memoryport.{p}": p for p in profiles}}
    created: list[str] = []

    def change(data: dict[str, Any], host: str) -> None:
        blocks = data.setdefault("hosts", {})
        for key, ai in hosts.items():
            if key not in blocks:
                blocks[key] = {"aiPeer": ai}
                created.append(key)

    path = edit_file(root, change)
    click.echo(f"host blocks created: {', '.join(created) or 'none'} ({path})")


def register_cli(group: click.Group) -> None:
    """Add the commands to ``memoryport honcho``."""
    for command in (setup_command, status_command, enable_command, disable_command,
                    mode_command, peer_command, tokens_command, map_command, sync_command):
        group.add_command(command)
