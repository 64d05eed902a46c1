"""``memoryport storage copy``: move the home's memory to PostgreSQL.

A thin shell over :func:`memoryport.admin.storage.copy_sessions`,
:mod:`memoryport.admin.storage_curated` and
:func:`memoryport.admin.storage_facts.copy_holographic`: a progress bar on a terminal
(stderr), summary lines (or one JSON object with ``--json``), exit 1 with one line saying
what to do when it fails.
"""

from __future__ import annotations

from pathlib import Path

import click

from memoryport.admin.facts import database_path
from memoryport.admin.sessions import Progress
from memoryport.admin.storage import CopyReport, copy_sessions, describe_target
from memoryport.admin.storage_curated import copy_audit, copy_curated
from memoryport.admin.storage_facts import copy_holographic
from memoryport.cli._common import echo_json, get_home, home_option, json_option, plural
from memoryport.cli.sessions_common import progress_bar
from memoryport.config import set_value
from memoryport.errors import MemoryportError

__all__ = ["storage_group"]


def _copy_sessions(root: Path, dsn: str, on_conflict: str,
                   progress: Progress | None) -> CopyReport:
    """The session part of the copy: none without ``state.db`` when the home has other
    memory to copy (a home with nothing at all is the error ``copy_sessions`` gives)."""
    if not (root / "state.db").is_file() and (
            database_path(root).is_file() or (root / "memories").is_dir()):
        return CopyReport(0, 0, 0, describe_target(dsn))
    return copy_sessions(
        root, dsn, on_conflict=on_conflict,  # type: ignore[arg-type]
        progress=None if progress is None else lambda d, t: progress("copying", d, t))


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
    """Copy the home's memory to PostgreSQL: session history, curated memory, audit
    log, facts and stored turns, each streamed in chunks.

    Safe to run again after an interruption: each chunk lands whole, and with the
    default --on-conflict skip what was already copied is skipped (sessions by id,
    curated targets, facts by statement, stored turns by session). The files are left
    in place.
    """
    root = get_home(home=home)
    try:
        with progress_bar() as progress:
            report = _copy_sessions(root, dsn, on_conflict, progress)
            holographic = copy_holographic(root, dsn, progress=progress)
        curated = copy_curated(root, dsn)  # MEMORY.md/USER.md with history, before a switch
        audit_events = copy_audit(root, dsn)
        if switch:
            set_value(root, "storage.backend", "postgres")
            set_value(root, "storage.dsn", dsn)
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json({**report.__dict__, "curated": curated.__dict__,
                   "holographic": holographic.__dict__,
                   "audit_events": audit_events, "switched": switch})
        return
    click.echo(f"copied curated memory: {plural(curated.targets, 'target')}, "
               f"{plural(curated.revisions, 'revision')}; skipped {len(curated.skipped)}; "
               f"audit log: {plural(audit_events, 'event')}")
    click.echo(f"copied {plural(holographic.facts, 'fact')} (skipped "
               f"{holographic.facts_skipped} already there) and "
               f"{plural(holographic.turns, 'stored turn')} (skipped "
               f"{plural(holographic.sessions_skipped, 'session')} already there)")
    click.echo(
        f"copied {plural(report.sessions, 'session')} ({plural(report.messages, 'message')})"
        f" to {report.target}; skipped {plural(report.skipped, 'session')} already there"
    )
    if switch:
        click.echo("config.yaml now uses it: storage.backend = postgres")
    else:
        click.echo("to use it: memoryport config set storage.backend postgres (and storage.dsn)")
