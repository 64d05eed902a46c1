"""``memoryport audit``: who read and wrote memory, when, through which shell.

Thin over :mod:`memoryport.admin.audit`; stored text is printed through
:func:`memoryport.display.printable`.
"""

from __future__ import annotations

from pathlib import Path

import click

from memoryport.admin.audit import events, parse_since, retention_days, set_retention_days
from memoryport.cli._common import Column, echo_json, get_home, home_option, print_table
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["audit_command"]

_COLUMNS: list[str | Column] = ["when (UTC)", "shell", "kind", "action", "target",
                                Column("session", fold=True), "revision", "detail"]


@click.command("audit")
@home_option
@click.option("--since", default="", metavar="WHEN",
              help="Only events since then: 30m, 12h, 7d, 2w or an ISO date/time (UTC).")
@click.option("--shell", default=None, help="Only this shell (cli, mcp, ui, api, ...).")
@click.option("--kind", type=click.Choice(["read", "write"]), default=None,
              help="Only reads or only writes.")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=100,
              show_default=True, help="Show at most this many events (newest first).")
@click.option("--retention-days", "retention", type=click.IntRange(min=0, max=36_500),
              default=None, help="Keep events this many days from now on (0: forever); "
                                 "prunes older events at once.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def audit_command(home: Path | None, since: str, shell: str | None, kind: str | None,
                  limit: int, retention: int | None, as_json: bool) -> None:
    """List recorded reads and writes of memory, newest first.

    JSON: {"events": [{"id", "ts", "at", "shell", "kind", "action", "target",
    "session_id", "user_id", "revision", "detail"}], "count": N, "retention_days": D}.
    """
    resolved = get_home(None, home)
    try:
        start = parse_since(since) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from exc
    try:
        pruned = set_retention_days(resolved, retention) if retention is not None else 0
        rows = [e.to_dict() for e in events(resolved, since=start, shell=shell, kind=kind,
                                            limit=limit)]
        days = retention_days(resolved)
    except MemoryportError as exc:
        raise click.ClickException(printable(str(exc))) from exc
    if as_json:
        echo_json({"events": rows, "count": len(rows), "retention_days": days})
        return
    if retention is not None:
        click.echo(f"retention: {days} days ({pruned} older events pruned)")
    table = [(r["at"], r["shell"], r["kind"], r["action"], printable(r["target"])[:40],
              printable(r["session_id"]), r["revision"], printable(r["detail"])[:60])
             for r in rows]
    print_table(f"Audit log ({len(rows)} events, kept {days or 'forever'} days)", _COLUMNS,
                table)
