"""``memoryport why REF``: where a stored memory came from — its provenance and the text
of the turn it was written in. A thin shell over :func:`memoryport.admin.why.why`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from memoryport.admin.why import why
from memoryport.cli._common import audited, echo_json, get_home, home_option
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["why_command"]


def _when(epoch: Any) -> str:
    if not isinstance(epoch, int | float) or not epoch:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(epoch)))


def _print_turn(turn: dict[str, Any] | None) -> None:
    if turn is None:
        click.echo("source turn: not recorded (no session) or its session is not stored")
        return
    if not turn.get("found"):
        click.echo(f"source turn: not found in session {printable(turn['session_id'])}")
        return
    click.echo(f"source turn ({_when(turn.get('timestamp'))}, session "
               f"{printable(turn['session_id'])}):")
    for key in ("user_message", "assistant_message"):
        message = turn.get(key)
        if message:
            click.echo(f"  {message['role']}: {printable(message['content'])}")


@click.command("why")
@click.argument("ref")
@click.option("--user", "user_id", default="", metavar="USER_ID",
              help="Look in this user's memory (default: the no-user scope).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@home_option
@audited("read", "why", target="ref")
def why_command(ref: str, user_id: str, as_json: bool, home: Path | None) -> None:
    """Where a memory came from: REF is a curated revision (memory:12, user:3) or a fact
    (fact:7, #7)."""
    try:
        found = why(get_home(None, home), ref, user_id=user_id)
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(found)
        return
    if found["kind"] == "fact":
        click.echo(f"{found['ref']}: recorded {_when(found.get('recorded_at'))} from "
                   f"{printable(str(found.get('source_kind') or '?'))} by "
                   f"{printable(str(found.get('actor') or '?'))}")
    else:
        row = found["revision"]
        click.echo(f"{found['ref']}: {row['action']} at {row['at']} by "
                   f"{printable(found['source'])}"
                   + (f", tool call {printable(found['tool_call_id'])}"
                      if found["tool_call_id"] else ""))
        for change in row.get("changes") or []:
            click.echo(f"  {change['action']}: {printable(str(change.get('content') or ''))}")
    _print_turn(found.get("turn"))
