"""Pieces ``memoryport memory`` and ``memoryport memory edit`` share: options, opening the files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memoryport.admin.curated import CuratedMemory, memory_settings, open_curated
from memoryport.cli._common import get_home, home_option
from memoryport.config import MemorySettings
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["TARGETS", "open_store", "store_options"]

_F = TypeVar("_F", bound=Callable[..., Any])

TARGETS = click.Choice(["memory", "user"])
"""The ``--target`` choices."""


def store_options(func: _F) -> _F:
    """``--home`` and ``--user``, shared by every command of the group."""
    func = click.option(
        "--user",
        "user_id",
        default="",
        metavar="USER_ID",
        help="Use this user's own files (memories/users/<id>/).",
    )(func)
    return home_option(func)


def open_store(home: Path | None, user_id: str, *, degrade: bool = False) -> CuratedMemory:
    """Open the store with the limits and switches from ``<home>/config.yaml``.

    ``home`` is this command's ``--home``; without it the root ``memoryport --home/--profile``
    choice (or ``$MEMORYPORT_HOME``, or ``~/.memoryport``) applies. With ``degrade`` (read
    commands) an invalid ``config.yaml`` gives a warning and the default settings.
    """
    resolved = get_home(None, home)
    try:
        settings = memory_settings(resolved)
    except (MemoryportError, ValueError, OSError) as exc:
        if not degrade:
            raise click.ClickException(str(exc)) from exc
        click.echo(
            f"warning: {printable(str(exc))}\nwarning: config.yaml could not be read; showing "
            "memory with the default settings (fix it with `memoryport config show`).",
            err=True,
        )
        settings = MemorySettings()
    try:
        return open_curated(resolved, user_id, settings)
    except (MemoryportError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
