"""``memoryport memory history|diff|restore``: the revision trail of curated memory.

Thin over :mod:`memoryport.admin.curated`: ``history`` and ``diff`` read the logs beside the
files (``memories/.history/<file>.jsonl``); ``restore`` goes through ``memoryport.open()``
like every other write, so the budget, the safety scan and every provider's
``on_memory_write`` apply and the restore is itself a new revision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memoryport.admin.curated import history_rows, restore_revision, revision_diff
from memoryport.cli._common import audited, get_home
from memoryport.cli.memory_common import TARGETS, open_store, store_options
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["diff_command", "history_command", "restore_command"]

_PREVIEW = 100


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return printable(flat if len(flat) <= _PREVIEW else flat[:_PREVIEW] + "...")


def _print_row(row: dict[str, Any]) -> None:
    who = [row["source"] or "?"]
    for key, label in (("session_id", "session"), ("tool_call_id", "call"), ("user_id", "user")):
        if row.get(key):
            who.append(f"{label}={row[key]}")
    if row.get("restored_from"):
        who.append(f"from={row['restored_from']}")
    flag = "" if row["applied"] else "  [not applied: the writer stopped before saving]"
    click.echo(f"{row['id']}  {row['at']}  {row['action']}  {printable(' '.join(who))}{flag}")
    for change in row["changes"]:
        if change.get("previous") and change["action"] == "replace":
            click.echo(f"    - {_preview(change['previous'])}")
        sign = "-" if change["action"] == "remove" else "+"
        click.echo(f"    {sign} {_preview(change['content'])}")


@click.command("history")
@click.option("--target", type=TARGETS, default=None, help="Only this target [default: both].")
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=1_000_000),
    default=50,
    show_default=True,
    help="Show at most this many revisions (newest first).",
)
@click.option("--all", "show_all", is_flag=True, help="Show every kept revision.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_options
@audited("read", "memory history", target="target")
def history_command(
    home: Path | None,
    user_id: str,
    target: str | None,
    limit: int,
    show_all: bool,
    as_json: bool,
) -> None:
    """List recorded revisions, newest first: id, time, action, provenance, entries changed.

    JSON: {"revisions": [{"id", "target", "rev", "at", "ts", "action", "source",
    "session_id", "tool_call_id", "user_id", "changes", "restored_from", "applied"}],
    "count": N, "total": M}.
    """
    store = open_store(home, user_id, degrade=True)
    try:
        rows = history_rows(store, target)
    except MemoryportError as exc:
        raise click.ClickException(printable(str(exc))) from exc
    shown = rows if show_all else rows[:limit]
    if as_json:
        payload = {"revisions": shown, "count": len(shown), "total": len(rows)}
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    if not rows:
        click.echo("No revisions recorded yet.")
        return
    for row in shown:
        _print_row(row)
    if len(shown) < len(rows):
        click.echo(f"({len(rows) - len(shown)} older revisions not shown; use --all)")


@click.command("diff")
@click.argument("rev")
@click.option(
    "--target", type=TARGETS, default="memory", show_default=True,
    help="Target of a bare revision number.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_options
@audited("read", "memory diff", target="rev")
def diff_command(home: Path | None, user_id: str, rev: str, target: str, as_json: bool) -> None:
    """Show what revision REV (e.g. memory:12) changed, as a unified diff of the file.

    JSON: {"revision": {... "before", "after"}, "diff": "..."}.
    """
    store = open_store(home, user_id, degrade=True)
    try:
        result = revision_diff(store, rev, target)
    except MemoryportError as exc:
        raise click.ClickException(printable(str(exc))) from exc
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False))
        return
    _print_row(result["revision"])
    click.echo(printable(result["diff"]).rstrip("\n") or "(no textual change)")


@click.command("restore")
@click.argument("rev")
@click.option(
    "--target", type=TARGETS, default="memory", show_default=True,
    help="Target of a bare revision number.",
)  # fmt: skip
@click.option(
    "--before", is_flag=True,
    help="Restore the text as it was before REV (undo REV) instead of after it.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_options
def restore_command(
    home: Path | None, user_id: str, rev: str, target: str, before: bool, as_json: bool
) -> None:
    """Make the file hold its text after revision REV again (a new revision).

    The budget and the safety scan apply to the restored content; refused restores change
    nothing and exit 1. JSON: {"success", "target", "message", "usage", "entry_count",
    "restored_from", "revision"}.
    """
    try:
        payload = restore_revision(
            get_home(None, home), user_id, rev, before=before, default_target=target
        )
    except (MemoryportError, ValueError, OSError) as exc:
        if as_json:
            click.echo(json.dumps({"success": False, "error": str(exc)}, ensure_ascii=False))
            raise SystemExit(1) from exc
        raise click.ClickException(printable(str(exc))) from exc
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    new = f" New revision {payload['revision']}." if payload["revision"] else ""
    click.echo(f"{payload['message']}{new} {payload['target']}: {payload['usage']}")
