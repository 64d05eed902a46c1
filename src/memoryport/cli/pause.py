"""``memoryport pause`` / ``memoryport resume``: stop memory writes and/or recall for every
shell on this home (agent, CLI, MCP, UI) until resumed. A thin shell over
:mod:`memoryport.admin.pause`."""

from __future__ import annotations

from pathlib import Path

import click

from memoryport.admin import pause as admin_pause
from memoryport.cli._common import echo_json, get_home, home_option

__all__ = ["pause_command", "resume_command"]


def _describe(state: admin_pause.PauseState) -> str:
    if not state.active:
        return "Memory is not paused: writes and recall run."
    what = " and ".join(k for k in ("writes", "recall") if getattr(state, k))
    return f"Paused: {what}. Resume with `memoryport resume`."


@click.command("pause")
@click.option("--writes/--no-writes", default=True, show_default=True,
              help="Refuse memory writes (tool writes answer MemoryPaused; syncs are held).")
@click.option("--recall", is_flag=True, help="Also inject no recall into turns.")
@click.option("--reason", default="", help="A note shown with the pause.")
@click.option("--json", "as_json", is_flag=True, help="Print the pause state as JSON.")
@home_option
def pause_command(writes: bool, recall: bool, reason: str, as_json: bool,
                  home: Path | None) -> None:
    """Pause memory writes (and with --recall, recall) for every shell on this home."""
    if not writes and not recall:
        raise click.UsageError("nothing to pause: drop --no-writes or add --recall")
    state = admin_pause.pause(get_home(None, home), writes=writes, recall=recall, by="cli",
                              reason=reason)
    echo_json(state.to_dict()) if as_json else click.echo(_describe(state))


@click.command("resume")
@click.option("--json", "as_json", is_flag=True, help="Print the pause state as JSON.")
@home_option
def resume_command(as_json: bool, home: Path | None) -> None:
    """Resume memory writes and recall; held syncs are delivered by the next turn."""
    state = admin_pause.resume(get_home(None, home), by="cli")
    echo_json(state.to_dict()) if as_json else click.echo(_describe(state))
