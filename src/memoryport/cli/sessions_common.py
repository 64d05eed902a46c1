"""Pieces the ``memoryport sessions`` command modules share: options, the store, progress."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from memoryport.admin import sessions as admin_sessions
from memoryport.admin.sessions import Progress, SessionStore
from memoryport.cli._common import get_home, home_option, load_home_env
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = [
    "DURATION",
    "open_store",
    "progress_bar",
    "require_session",
    "session_options",
    "short",
    "when",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def session_options(func: _F) -> _F:
    """``--home`` and ``--user``, shared by every ``sessions`` command."""
    func = click.option(
        "--user", "user_id", default="", metavar="USER_ID", help="Only this user's sessions."
    )(func)
    return home_option(func)


@contextmanager
def open_store(home: Path | None, user_id: str) -> Iterator[SessionStore]:
    """The configured session store; a ``MemoryportError`` becomes a one-line exit 1."""
    try:
        resolved = get_home(None, home)
        ctx = click.get_current_context(silent=True)
        if home is not None and ctx is not None:
            load_home_env(ctx, resolved)  # the root loaded the root home's .env
        store = admin_sessions.open_store(resolved, user_id or None)
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        yield store
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()


def require_session(store: SessionStore, session_id: str) -> None:
    """Exit 1 with ``no session 'ID'`` unless the session exists (for this user)."""
    if not admin_sessions.session_exists(store, session_id):
        raise click.ClickException(f"no session {printable(session_id)!r}")


def when(ts: float | None) -> str:
    """A timestamp as local ``YYYY-mm-dd HH:MM`` (empty for none)."""
    return "" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def short(text: str, width: int = 70) -> str:
    """``text`` on one line, escaped for a terminal, cut to ``width`` with an ellipsis."""
    flat = " ".join(printable(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@contextmanager
def progress_bar() -> Iterator[Progress | None]:
    """A rich progress bar on stderr when stderr is a terminal, else ``None`` (no output).

    Yields a store ``progress(phase, done, total)`` callback: one bar per phase.
    """
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import Progress as Bars

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Bars(*columns, TimeElapsedColumn(), console=Console(stderr=True)) as bars:
        tasks: dict[str, TaskID] = {}

        def report(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bars.add_task(phase, total=total or None)
            bars.update(tasks[phase], completed=done, total=total or None)

        yield report


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_MAX_SECONDS = 100 * 365 * 86400


class Duration(click.ParamType[float]):
    """``30m``, ``12h``, ``1d``, ``2w`` or plain seconds, as seconds (0 to 100 years)."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        """Parse ``value`` into seconds or fail with a usage error."""
        if isinstance(value, (int, float)):
            return float(value)
        match = _DURATION_RE.match(str(value))
        seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else -1.0
        if not 0 <= seconds <= _MAX_SECONDS:
            self.fail(
                f"expected a duration like 30m, 12h, 1d or 2w (at most 100 years), not {value!r}",
                param,
                ctx,
            )
        return seconds


DURATION = Duration()
"""The click type for ``--older-than``-style options."""
