"""``memoryport storage copy``: move the home's session history to PostgreSQL.

A thin shell over :func:`memoryport.admin.storage.copy_sessions`: a progress bar on a
terminal (stderr), one summary line (or one JSON object with ``--json``), exit 1 with
one line saying what to do when it fails.
"""

from __future__ import annotations

from pathlib import Path

import click

from memoryport.admin.storage import copy_sessions
from memoryport.admin.storage_curated import copy_audit, copy_curated
from memoryport.cli._common import echo_json, get_home, home_option, json_option, plural
from memoryport.cli.sessions_common import progress_bar
from memoryport.config import set_value
from memoryport.errors import MemoryportError

__all__ = ["storage_group"]


@click.group("storage")
def storage_group() -> None:
    """Where memory is stored: move it between backends."""


@storage_group.command("copy")
@home_option
@click.option(
    "--to", "dsn", required=True, metavar="DSN", help="Target PostgreSQL (postgresql://...)."
)
@click.option(
    "--on-conflict",
    type=click.Choice(["skip", "replace", "error"]),
    default="skip",
    show_default=True,
    help="A session id already in the target: keep it, overwrite it, or stop.",
)
@click.option("--switch", is_flag=True, help="Then set storage.backend=postgres and storage.dsn.")
@json_option
def copy_command(
    home: Path | None, dsn: str, on_conflict: str, switch: bool, as_json: bool
) -> None:
    """Copy the session history (state.db) to PostgreSQL, streamed in chunks.

    Safe to run again after an interruption: each chunk lands whole, and with the
    default --on-conflict skip the sessions already copied are skipped. Curated memory
    (MEMORY.md/USER.md with their history) and the audit log are copied too; the fact
    store stays files.
    """
    root = get_home(home=home)
    try:
        with progress_bar() as progress:
            report = copy_sessions(
                root,
                dsn,
                on_conflict=on_conflict,  # type: ignore[arg-type]
                progress=None if progress is None else lambda d, t: progress("copying", d, t),
            )
        curated = copy_curated(root, dsn)  # MEMORY.md/USER.md with history, before a switch
        audit_events = copy_audit(root, dsn)
        if switch:
            set_value(root, "storage.backend", "postgres")
            set_value(root, "storage.dsn", dsn)
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json({**report.__dict__, "curated": curated.__dict__,
                   "audit_events": audit_events, "switched": switch})
        return
    click.echo(f"copied curated memory: {plural(curated.targets, 'target')}, "
               f"{plural(curated.revisions, 'revision')}; skipped {len(curated.skipped)}; "
               f"audit log: {plural(audit_events, 'event')}")
    click.echo(
        f"copied {plural(report.sessions, 'session')} ({plural(report.messages, 'message')})"
        f" to {report.target}; skipped {plural(report.skipped, 'session')} already there"
    )
    if switch:
        click.echo("config.yaml now uses it: storage.backend = postgres")
    else:
        click.echo("to use it: memoryport config set storage.backend postgres (and storage.dsn)")
