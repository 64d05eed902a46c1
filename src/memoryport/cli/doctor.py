"""``memoryport doctor``: find problems in the home directory and say how to fix each.

The checks are :func:`memoryport.admin.doctor.diagnose`; this module prints the findings
and exits 1 when one failed.
"""

from __future__ import annotations

from dataclasses import asdict

import click

from memoryport.admin.doctor import diagnose
from memoryport.cli._common import echo_json, get_home, json_option

__all__ = ["doctor_command"]

_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


@click.command("doctor")
@json_option
def doctor_command(as_json: bool) -> None:
    """Check home, secrets, SQLite, the session store and provider; exit 1 on problems."""
    home = get_home()
    checks = diagnose(home)
    failed = [c for c in checks if c.status == "fail"]
    if as_json:
        echo_json({"home": str(home), "ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        for check in checks:
            click.echo(f"[{_MARK[check.status]}] {check.name}: {check.detail}")
            if check.fix and check.status != "ok":
                click.echo(f"       fix: {check.fix}")
        click.echo(f"{len(failed)} problem(s) found." if failed else "No problems found.")
    if failed:
        raise SystemExit(1)
