"""``memoryport sessions export|import|rebuild-index|prune``: the commands that move or
maintain whole stores. Each shows a progress bar on a terminal (stderr) and none when
piped; each error exits 1 with one line saying what to do.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import click

from memoryport.admin.sessions import OnConflict, export, rebuild_and_verify
from memoryport.cli._common import audited, echo_json, plural
from memoryport.cli.sessions_common import (
    DURATION,
    open_store,
    progress_bar,
    require_session,
    session_options,
    short,
    when,
)
from memoryport.errors import MemoryportError

__all__ = ["export_command", "import_command", "prune_command", "rebuild_index_command"]


@contextlib.contextmanager
def _output(path: Path) -> Iterator[IO[str]]:
    """Stdout for ``-``; else a private temp file beside ``path``, renamed over it only
    when the export succeeded (a failed export leaves no partial file)."""
    if str(path) == "-":
        yield sys.stdout
        return
    parent = path.parent
    if not parent.is_dir():
        raise click.ClickException(
            f"cannot write {path}: the directory {parent} does not exist; create it first "
            "or choose another --output"
        )
    try:
        fd, temp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            yield out
        os.replace(temp, path)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


@click.command("export")
@session_options
@click.option("--session", "session_ids", multiple=True, help="Only these sessions.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default="-",
    help="File to write (created 0600; replaced only when the export succeeds) [default: stdout].",
)
@audited("read", "sessions export")
def export_command(
    home: Path | None, user_id: str, session_ids: tuple[str, ...], output: Path
) -> None:
    """Export sessions as JSONL: a header, then each session once followed by its messages.

    With nothing to export the file holds the header alone (it imports as nothing).
    """
    with open_store(home, user_id) as store:
        for session_id in session_ids:
            require_session(store, session_id)
        with progress_bar() as bar, _output(output) as out:
            counts = export(store, out, session_ids=session_ids, progress=bar)
    where = "stdout" if str(output) == "-" else str(output)
    click.echo(
        f"exported {plural(counts.sessions, 'session')} "
        f"({plural(counts.messages, 'message')}) to {where}",
        err=True,
    )


def _open_source(source: Path) -> IO[bytes]:
    if str(source) == "-":
        return sys.stdin.buffer
    try:
        return source.open("rb")
    except OSError as exc:
        raise click.ClickException(f"cannot read {source}: {exc.strerror}") from exc


@click.command("import")
@session_options
@click.argument("source", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option(
    "--on-conflict",
    type=click.Choice(["skip", "replace", "error"]),
    default="skip",
    show_default=True,
    help="What to do with a session id that already exists.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def import_command(
    home: Path | None, user_id: str, source: Path, on_conflict: str, as_json: bool
) -> None:
    """Import an export (any version; ids, timestamps and metadata are kept).

    All or nothing: every line is checked first, then everything is written in one
    transaction. A bad line is refused with its line number and nothing is stored.
    """
    name = "stdin" if str(source) == "-" else str(source)
    with open_store(home, user_id) as store, _open_source(source) as stream:
        try:
            with progress_bar() as bar:
                report = store.import_jsonl(
                    stream, on_conflict=cast(OnConflict, on_conflict), progress=bar
                )
        except MemoryportError as exc:
            raise click.ClickException(f"{name}: {exc}; nothing was imported") from exc
    if as_json:
        echo_json(
            {
                "sessions_imported": report.sessions_imported,
                "messages_imported": report.messages_imported,
                "sessions_skipped": report.sessions_skipped,
            }
        )
        return
    click.echo(
        f"imported {plural(report.sessions_imported, 'session')} "
        f"({plural(report.messages_imported, 'message')}), "
        f"skipped {report.sessions_skipped} already present"
    )


@click.command("rebuild-index")
@session_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def rebuild_index_command(home: Path | None, user_id: str, as_json: bool) -> None:
    """Rebuild the full-text indexes from the stored messages, then verify them."""
    with open_store(home, user_id) as store, progress_bar() as bar:
        rebuild_and_verify(store, progress=bar)
    if as_json:
        echo_json({"rebuilt": True, "verified": True})
        return
    click.echo("full-text indexes rebuilt and verified")


@click.command("prune")
@session_options
@click.option(
    "--older-than",
    "older_than",
    type=DURATION,
    default="1d",
    show_default=True,
    help="Only sessions last active longer ago than this (30m, 12h, 1d, 2w).",
)
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def prune_command(
    home: Path | None, user_id: str, older_than: float, dry_run: bool, as_json: bool
) -> None:
    """Remove empty sessions (no messages, no child sessions) older than --older-than."""
    with open_store(home, user_id) as store:
        found = store.prune_empty_sessions(older_than=older_than, dry_run=dry_run)
    if as_json:
        echo_json(
            {
                "sessions": [s.to_dict() for s in found],
                "count": len(found),
                "dry_run": dry_run,
                "older_than_seconds": older_than,
            }
        )
        return
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {plural(len(found), 'empty session')}")
    for session in found:
        click.echo(
            f"  {short(session.id, 80)}  [{short(session.source, 20)}]  {when(session.started_at)}"
        )
