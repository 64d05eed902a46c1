"""``memoryport migrate openclaw|hermes|restore``: bring memory from another agent.

A thin shell over :mod:`memoryport.admin.migrate`: parse options, show the preview,
ask (unless ``--yes``), apply, print the report (a table, or one JSON object with
``--json``). See docs/migration.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memoryport.admin.migrate import (
    HermesOptions,
    OpenClawOptions,
    Report,
    apply_openclaw,
    cleanup_openclaw,
    migrate_hermes,
    plan_openclaw,
    restore_backup,
)
from memoryport.cli._common import echo_json, get_home, home_option, print_table
from memoryport.cli.sessions_common import progress_bar
from memoryport.display import printable

__all__ = ["migrate_group", "print_report"]

_PATH = click.Path(path_type=Path)
_DIR = click.Path(file_okay=False, path_type=Path)


def print_report(report: Report, as_json: bool) -> None:
    """The report as one JSON object, or warnings, a table, totals, paths and notes."""
    if as_json:
        echo_json(report.to_dict())
        return
    for warning in report.warnings:
        click.echo(f"warning: {printable(warning)}", err=True)
    state = "applied" if report.applied else ("dry run" if report.dry_run else "preview")
    rows = [[printable(r.kind), printable(r.source), printable(r.target), r.action,
             printable(r.detail)] for r in report.rows]  # fmt: skip
    print_table(f"{report.name} migration ({state}): {printable(report.source)}",
                ["kind", "source", "target", "action", "detail"], rows)  # fmt: skip
    totals = ", ".join(f"{action} {count}" for action, count in report.actions().items())
    click.echo(f"{len(report.rows)} item(s): {totals or 'nothing found'}")
    for key, count in report.counts.items():
        click.echo(f"{key}: {count}")
    for key, path in report.paths.items():
        click.echo(f"{key}: {printable(path)}")
    for note in report.notes:
        click.echo(printable(note))


def _check_json(as_json: bool, yes: bool, dry_run: bool) -> None:
    if as_json and not (yes or dry_run):
        raise click.UsageError("--json cannot ask for confirmation: add --yes or --dry-run")


@click.group("migrate")
def migrate_group() -> None:
    """Bring memory from another agent (OpenClaw, Hermes) into this home."""


@migrate_group.group("openclaw", invoke_without_command=True)
@click.option("--source", type=_DIR, default=None,
              help="OpenClaw directory [default: ~/.openclaw, ~/.clawdbot, ~/.moltbot].")
@click.option("--dry-run", is_flag=True, help="Preview only; write nothing at all.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
@click.option("--preset", type=click.Choice(["full", "user-data"]), default="full",
              show_default=True, help="full: also archive settings (and secrets with "
              "--migrate-secrets); user-data: memory, profile, skills, workspace files.")
@click.option("--overwrite", is_flag=True, help="Replace conflicting targets instead of skipping.")
@click.option("--migrate-secrets", is_flag=True,
              help="Also copy allowlisted API keys into .env (0600); needs --preset full.")
@click.option("--workspace-target", type=_DIR, default=None,
              help="Copy workspace instructions (SOUL.md, AGENTS.md, ...) to this directory.")
@click.option("--skill-conflict", type=click.Choice(["skip", "overwrite", "rename"]),
              default="skip", show_default=True, help="What to do with a skill that exists.")
@click.option("--no-backup", is_flag=True, help="Skip the backup of the home before applying.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@home_option
@click.pass_context
def openclaw_group(ctx: click.Context, /, home: Path | None, as_json: bool, yes: bool,
                   dry_run: bool, no_backup: bool, **choices: Any) -> None:  # fmt: skip
    """Migrate an OpenClaw workspace: preview, then apply after confirmation (or --yes).

    `memoryport migrate openclaw cleanup` renames leftover OpenClaw directories.
    """
    if ctx.invoked_subcommand is not None:
        return
    _check_json(as_json, yes, dry_run)
    options = OpenClawOptions(backup=not no_backup, **choices)
    plan = plan_openclaw(get_home(ctx, home), options)
    plan.report.dry_run = dry_run
    if dry_run:
        print_report(plan.report, as_json)
        return
    if not yes:
        print_report(plan.report, False)
        click.confirm("Apply this migration?", abort=True, err=True)
    print_report(apply_openclaw(plan), as_json)


@openclaw_group.command("cleanup")
@click.option("--source", type=_DIR, default=None, help="The OpenClaw directory to rename.")
@click.option("--dry-run", is_flag=True, help="Show what would be renamed.")
@click.option("--yes", "-y", is_flag=True, help="Rename without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def cleanup_command(source: Path | None, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Rename leftover OpenClaw directories to <name>.pre-migration."""
    _check_json(as_json, yes, dry_run)
    preview = cleanup_openclaw(source, dry_run=True)
    if dry_run:
        print_report(preview, as_json)
        return
    if not yes:
        print_report(preview, False)
        click.confirm("Rename these directories?", abort=True, err=True)
    print_report(cleanup_openclaw(source), as_json)


@migrate_group.command("hermes")
@click.option("--source", type=_DIR, default=None, help="Hermes home [default: ~/.hermes].")
@click.option("--dry-run", is_flag=True, help="Count what would be imported; write nothing.")
@click.option("--no-profiles", is_flag=True, help="Skip the Hermes home's profiles/.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@home_option
@click.pass_context
def hermes_command(ctx: click.Context, home: Path | None, source: Path | None, dry_run: bool,
                   no_profiles: bool, as_json: bool) -> None:  # fmt: skip
    """Import a Hermes home: MEMORY.md/USER.md and every session of state.db (idempotent)."""
    options = HermesOptions(source=source, dry_run=dry_run, profiles=not no_profiles)
    with progress_bar() as progress:
        report = migrate_hermes(get_home(ctx, home), options, progress)
    print_report(report, as_json)


@migrate_group.command("restore")
@click.argument("backup", type=_PATH)
@click.option("--yes", "-y", is_flag=True, help="Restore without asking.")
@home_option
@click.pass_context
def restore_command(ctx: click.Context, backup: Path, yes: bool, home: Path | None) -> None:
    """Put the home back as a migration's backup (home-backup.zip) saved it."""
    target = get_home(ctx, home)
    if not yes:
        click.confirm(f"Replace the contents of {target} with {backup}?", abort=True, err=True)
    count = restore_backup(target, backup)
    click.echo(f"Restored {count} file(s) into {printable(str(target))}.")
