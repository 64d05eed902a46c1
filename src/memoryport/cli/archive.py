"""``memoryport export`` / ``memoryport import``: a whole home as one portable archive.

A thin shell over :mod:`memoryport.admin.archive` (see docs/migration.md).
"""

from __future__ import annotations

from pathlib import Path

import click

from memoryport.admin.archive import default_archive_path, export_home, import_archive
from memoryport.cli._common import echo_json, get_home, home_option
from memoryport.cli.migrate import print_report
from memoryport.cli.sessions_common import progress_bar
from memoryport.display import printable

__all__ = ["export_command", "import_command"]


@click.command("export")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Archive to write [default: ./memoryport-export-<time>.zip].")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@home_option
@click.pass_context
def export_command(ctx: click.Context, out: Path | None, as_json: bool, home: Path | None
                   ) -> None:  # fmt: skip
    """Write curated memory (with history), sessions, facts and providers to one archive."""
    target = out or default_archive_path()
    with progress_bar() as progress:
        manifest = export_home(get_home(ctx, home), target, progress)
    if as_json:
        echo_json({"archive": str(target), "manifest": manifest})
        return
    curated, sessions = manifest["curated"], manifest["sessions"]
    click.echo(f"Wrote {printable(str(target))}:")
    click.echo(f"  curated: {curated['files']} file(s), {curated['entries']} entries, "
               f"{curated['revisions']} revisions")  # fmt: skip
    click.echo(f"  sessions: {sessions['sessions']} sessions, {sessions['messages']} messages")
    for name, part in sorted(manifest["providers"].items()):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(part.get("counts", {}).items()))
        click.echo(f"  provider {name}: {counts}")


@click.command("import")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@home_option
@click.pass_context
def import_command(ctx: click.Context, archive: Path, as_json: bool, home: Path | None) -> None:
    """Restore an archive from `memoryport export` into this home (merging into what is
    there; importing twice adds nothing)."""
    with progress_bar() as progress:
        report = import_archive(get_home(ctx, home), archive, progress)
    print_report(report, as_json)
