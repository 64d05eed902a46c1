"""Shared pieces of the command line: the active home, output helpers, the root group class.

Other command groups get the home the user selected (``memoryport --home X --profile Y``)
with ``get_home(ctx)``; while a command runs, the root group also exports the two
choices as ``MEMORYPORT_HOME`` / ``MEMORYPORT_PROFILE`` so code that calls
``memoryport.config.resolve_home()`` without arguments agrees with the command line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import click
from rich.console import Console
from rich.table import Table

from memoryport.config import resolve_home
from memoryport.errors import MemoryportError

__all__ = [
    "AppContext",
    "MemoryportGroup",
    "echo_json",
    "get_app",
    "get_home",
    "is_terminal",
    "json_option",
    "make_console",
    "mask",
    "print_table",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class AppContext:
    """What the root options selected: ``--home`` and ``--profile`` (None = from env)."""

    home_option: Path | None = None
    profile: str | None = None

    @property
    def home(self) -> Path:
        """The resolved, profile-scoped home directory."""
        return resolve_home(self.home_option, self.profile)


def get_app(ctx: click.Context | None = None) -> AppContext:
    """The ``AppContext`` of the running command (defaults when run outside ``main``)."""
    ctx = ctx or click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    obj = root.obj if root is not None else None
    return obj if isinstance(obj, AppContext) else AppContext()


def get_home(ctx: click.Context | None = None, home: Path | None = None) -> Path:
    """The home a command should use: its own ``--home`` if given, else the root's choice."""
    app = get_app(ctx)
    if home is not None:
        return resolve_home(home, app.profile)
    return app.home


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output) to a read command."""
    decorator: Any = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    return cast(F, decorator(func))


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def is_terminal() -> bool:
    """True when stdout is an interactive terminal (rich output); else plain text."""
    return sys.stdout.isatty()


def make_console() -> Console:
    """A console on stdout that prints plain text when stdout is not a terminal."""
    plain = not is_terminal()
    return Console(
        file=sys.stdout,
        no_color=plain,
        highlight=False,
        soft_wrap=plain,
        emoji=False,
        markup=not plain,
    )


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A rich table on a terminal; tab-separated lines with a header otherwise."""
    if not is_terminal():
        click.echo(f"{title}:")
        click.echo("\t".join(columns))
        for row in rows:
            click.echo("\t".join("" if cell is None else str(cell) for cell in row))
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    make_console().print(table)


def mask(value: Any) -> str:
    """How a secret is shown: ``set`` or ``missing``, never its value."""
    return "set" if value not in (None, "") else "missing"


class MemoryportGroup(click.Group):
    """Root group: turns ``MemoryportError`` into a clean error exit and adds the active
    provider's own command group (only the active provider's, as in Hermes)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a ``MemoryportError`` becomes ``Error: ...`` and exit 1."""
        try:
            return super().invoke(ctx)
        except MemoryportError as exc:
            raise click.ClickException(str(exc)) from exc

    def _provider_command(self, ctx: click.Context) -> click.Command | None:
        from memoryport.plugins.commands import active_provider_command

        try:
            home = resolve_home(ctx.params.get("home"), ctx.params.get("profile"))
        except MemoryportError:
            return None
        command = active_provider_command(home)
        if command is None or command.name in self.commands:
            return None
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The built-in commands plus the active provider's group, if it has one."""
        names = list(super().list_commands(ctx))
        command = self._provider_command(ctx)
        if command is not None and command.name:
            names.append(command.name)
        return names

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Look up a built-in command, then the active provider's group."""
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        command = self._provider_command(ctx)
        return command if command is not None and command.name == cmd_name else None


def export_home_env(ctx: click.Context, home: Path | None, profile: str | None) -> None:
    """Export ``--home`` / ``--profile`` to the environment until the command finishes."""
    changes = {"MEMORYPORT_HOME": str(home) if home else None, "MEMORYPORT_PROFILE": profile}
    saved: dict[str, str | None] = {}
    for key, value in changes.items():
        if value is None:
            continue
        saved[key] = os.environ.get(key)
        os.environ[key] = value

    def restore() -> None:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old

    ctx.call_on_close(restore)


def iter_commands(group: click.Group, prefix: str = "memoryport") -> Iterator[str]:
    """Every command path under ``group``, e.g. ``memoryport providers list``."""
    for name in sorted(group.commands):
        command = group.commands[name]
        path = f"{prefix} {name}"
        yield path
        if isinstance(command, click.Group):
            yield from iter_commands(command, path)
