"""The active provider's own command group (``memoryport <provider> ...``).

A provider contributes commands with a ``register_cli(group)`` function, in its
``cli.py`` submodule or in its main module. memoryport passes a ``click.Group`` named
after the plugin. Providers written for Hermes expect an ``argparse`` parser instead
(``register_cli(subparser)`` plus a ``<name>_command(args)`` handler or
``set_defaults(func=...)``); when the click call fails with ``AttributeError`` because
the function used argparse methods, memoryport hands it a parser and runs it through a
pass-through click command. Only the active provider (``memory.provider``) is
imported, so inactive providers never run code just to build ``--help``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import re
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from memoryport.config import load_config
from memoryport.errors import MemoryportError
from memoryport.plugins import hermes_compat
from memoryport.plugins.loader import LoadResult, load

__all__ = ["active_provider_command", "provider_command"]

logger = logging.getLogger(__name__)


def _cli_module(result: LoadResult) -> types.ModuleType | None:
    """``<plugin>.cli`` if it exists, else the plugin module itself."""
    info = result.info
    base = result.module
    if base is None and info is not None and info.module:
        base = importlib.import_module(info.module.partition(":")[0])
    if base is None:
        return None
    is_package = hasattr(base, "__path__")
    if is_package and importlib.util.find_spec(f"{base.__name__}.cli") is not None:
        return importlib.import_module(f"{base.__name__}.cli")
    return base


def _argparse_command(
    name: str, register: Callable[[Any], Any], module: types.ModuleType
) -> click.Command:
    parser = argparse.ArgumentParser(prog=f"memoryport {name}")
    register(parser)
    safe = re.sub(r"\W", "_", name)
    handler = getattr(module, f"{safe}_command", None)

    @click.command(
        name,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
        help=f"Commands of the active memory provider {name!r}.",
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> None:
        namespace = parser.parse_args(list(args))
        func = getattr(namespace, "func", None) or handler
        if func is None:
            parser.print_help()
            return
        func(namespace)

    return command


def provider_command(name: str, home: Path) -> click.Command | None:
    """Build plugin ``name``'s command group, or None when it has none (or fails to load)."""
    result = load(name, home)
    if not result.ok or result.info is None:
        return None
    try:
        with hermes_compat.hermes_shims():
            module = _cli_module(result)
            register = getattr(module, "register_cli", None) if module else None
            if module is None or not callable(register):
                return None
            group = click.Group(name, help=f"Commands of the active memory provider {name!r}.")
            try:
                register(group)
                return group
            except AttributeError:
                return _argparse_command(name, register, module)
    except Exception as exc:  # a broken provider CLI must not break memoryport's CLI
        logger.warning("provider %r: could not build its commands: %s", name, exc)
        return None


def active_provider_command(home: Path) -> click.Command | None:
    """The command group of the provider selected in ``<home>/config.yaml``, if any."""
    try:
        name = load_config(home).memory.provider
    except MemoryportError:
        return None
    if not name:
        return None
    return provider_command(name, home)
