"""Shared pieces of the command line: the active home, output helpers, the root group class.

Other command groups get the home the user selected (``memoryport --home X --profile Y``)
with ``get_home(ctx)``; while a command runs, the root group also exports the two
choices as ``MEMORYPORT_HOME`` / ``MEMORYPORT_PROFILE`` so code that calls
``memoryport.config.resolve_home()`` without arguments agrees with the command line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import click
from rich.console import Console
from rich.table import Table

from memoryport.config import Config, ConfigWarning, load_config, read_env, resolve_home
from memoryport.errors import MemoryportError

__all__ = [
    "AppContext",
    "Column",
    "MemoryportGroup",
    "echo_json",
    "get_app",
    "get_home",
    "is_terminal",
    "json_option",
    "load_config_or_defaults",
    "load_home_env",
    "make_console",
    "plural",
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


def home_option(func: F) -> F:
    """Add a group-level ``--home`` (overrides the root's ``--home``/``--profile`` choice)."""
    decorator: Any = click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="memoryport home [default: $MEMORYPORT_HOME or ~/.memoryport].",
    )
    return cast(F, decorator(func))


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


@dataclass(frozen=True)
class Column:
    """A table column; ``fold=True`` never truncates its cells (ids must stay copyable)."""

    name: str
    fold: bool = False


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 entry``/``2 entries``-style counts: ``plural(1, "hit")`` -> ``"1 hit"``."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural_form or (noun[:-1] + 'ies' if noun.endswith('y') else noun + 's')}"


def print_table(title: str, columns: Sequence[str | Column], rows: Sequence[Sequence[Any]]) -> None:
    """A rich table on a terminal; tab-separated lines with a header otherwise.

    On a terminal, ``Column(name, fold=True)`` columns get the width of their longest
    cell and fold instead of ending in an ellipsis, so ids can be copied whole.
    """
    specs = [c if isinstance(c, Column) else Column(c) for c in columns]
    cells = [["" if cell is None else str(cell) for cell in row] for row in rows]
    if not is_terminal():
        click.echo(f"{title}:")
        click.echo("\t".join(c.name for c in specs))
        for row in cells:
            click.echo("\t".join(row))
        return
    table = Table(title=title)
    for index, spec in enumerate(specs):
        if spec.fold:
            widest = max((len(row[index]) for row in cells), default=0)
            table.add_column(spec.name, overflow="fold", min_width=max(widest, len(spec.name)))
        else:
            table.add_column(spec.name)
    for row in cells:
        table.add_row(*row)
    make_console().print(table)


def load_config_or_defaults(home: Path) -> Config:
    """``config.yaml`` for a read-only command: on error, warn and use the defaults.

    Commands that only read (listings, ``status``) keep working when ``config.yaml`` is
    broken; the warning names the file, the line and what to do. Commands that write
    should call ``load_config`` and fail instead.
    """
    try:
        return load_config(home)
    except MemoryportError as exc:
        warnings.warn(f"{exc} (using the default settings)", ConfigWarning, stacklevel=2)
        return Config()


@contextlib.contextmanager
def _config_warnings_once() -> Iterator[None]:
    """Show each distinct ``ConfigWarning`` once, as a plain line on stderr."""
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", ConfigWarning)
        original = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
            if not issubclass(category, ConfigWarning):
                original(message, category, *args, **kw)
                return
            text = str(message)
            if text not in seen:
                seen.add(text)
                click.echo(f"warning: {text}", err=True)

        warnings.showwarning = show
        yield


class MemoryportGroup(click.Group):
    """Root group: turns ``MemoryportError`` into a clean error exit and adds the active
    provider's own command group (only the active provider's, as in Hermes)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a ``MemoryportError`` becomes ``Error: ...`` and exit 1.

        Configuration warnings (``ConfigWarning``) print once per command as one
        ``warning: ...`` line on stderr.
        """
        with _config_warnings_once():
            try:
                return super().invoke(ctx)
            except MemoryportError as exc:
                raise click.ClickException(str(exc)) from exc

    def _provider_command(self, ctx: click.Context) -> click.Command | None:
        from memoryport.admin.providers import active_provider_command

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


def _set_env_until_close(ctx: click.Context, changes: dict[str, str]) -> None:
    """Set ``changes`` in ``os.environ``; put the old values back when ``ctx`` closes."""
    saved: dict[str, str | None] = {}
    for key, value in changes.items():
        saved[key] = os.environ.get(key)
        os.environ[key] = value

    def restore() -> None:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old

    ctx.call_on_close(restore)


def export_home_env(ctx: click.Context, home: Path | None, profile: str | None) -> None:
    """Export ``--home`` / ``--profile`` to the environment until the command finishes."""
    changes = {"MEMORYPORT_HOME": str(home) if home else None, "MEMORYPORT_PROFILE": profile}
    _set_env_until_close(ctx, {k: v for k, v in changes.items() if v is not None})


_LOADED_KEY = "memoryport.env_loaded"


def load_home_env(ctx: click.Context, home: Path) -> list[str]:
    """Load ``<home>/.env`` into the environment until the command finishes.

    Variables set in the real environment win; ones an earlier call loaded from a
    ``.env`` are updated (so a command that just wrote ``.env`` sees the new values).
    Returns the names that were set.
    """
    loaded: set[str] = ctx.find_root().meta.setdefault(_LOADED_KEY, set())
    changes = {
        key: value
        for key, value in read_env(home).items()
        if key not in os.environ or (key in loaded and os.environ[key] != value)
    }
    _set_env_until_close(ctx, changes)
    loaded.update(changes)
    return sorted(changes)


def iter_commands(group: click.Group, prefix: str = "memoryport") -> Iterator[str]:
    """Every command path under ``group``, e.g. ``memoryport providers list``."""
    for name in sorted(group.commands):
        command = group.commands[name]
        path = f"{prefix} {name}"
        yield path
        if isinstance(command, click.Group):
            yield from iter_commands(command, path)


def audited(kind: str, action: str, *, target: str = "") -> Callable[[F], F]:
    """Record a successful run of the decorated command in the home's audit log (shell
    ``cli``; ``target``: the name of the keyword argument that says what was read or
    written). Put it closest to the function, under the click decorators. Nothing is
    recorded for a home that does not exist (reading creates nothing) or when the command
    fails; auditing never fails a command."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            result = func(*args, **kwargs)
            from memoryport.admin import audit  # the audit log is the API layer's

            home = get_home(None, kwargs.get("home"))
            if home.is_dir():
                audit.record(home, "cli", kind, action,
                             target=str(kwargs.get(target) or "") if target else "",
                             user_id=str(kwargs.get("user_id") or ""))
            return result

        return cast(F, run)

    return decorate
