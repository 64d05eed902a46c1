"""The ``memoryport`` command line: a thin shell over the Python API, one module per noun.

Root options ``--home PATH`` (env ``MEMORYPORT_HOME``) and ``--profile NAME`` (env
``MEMORYPORT_PROFILE``) select the home for every subcommand; groups read it with
``memoryport.cli._common.get_home(ctx)``. While a command runs, the selected home's
``.env`` is loaded into the environment (variables already set win), so every command
sees the secrets ``memoryport setup`` stored, as ``memoryport.open()`` does.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import click

from memoryport import __version__
from memoryport.cli._common import AppContext, MemoryportGroup, export_home_env, load_home_env
from memoryport.config import ConfigWarning, validate_name
from memoryport.errors import ConfigError, MemoryportError


# Both options are eager so that `memoryport --profile p --help` already knows the
# profile when it lists the active provider's command group.
def _check_profile(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value:
        try:
            validate_name(value, "profile")
        except ConfigError as exc:
            raise click.BadParameter(str(exc)) from exc
    return value or None


@click.group(cls=MemoryportGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memoryport")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="MEMORYPORT_HOME",
    default=None,
    is_eager=True,
    help="Home directory [env MEMORYPORT_HOME; default ~/.memoryport].",
)
@click.option(
    "--profile",
    envvar="MEMORYPORT_PROFILE",
    default=None,
    callback=_check_profile,
    is_eager=True,
    help="Profile: uses <home>/profiles/NAME/ [env MEMORYPORT_PROFILE].",
)
@click.pass_context
def main(ctx: click.Context, home: Path | None, profile: str | None) -> None:
    """memoryport: portable long-term memory for LLM agents."""
    app = AppContext(home_option=home, profile=profile)
    ctx.obj = app
    export_home_env(ctx, home, profile)
    try:
        load_home_env(ctx, app.home)
    except MemoryportError as exc:
        # Every command still runs; the ones that need a secret from .env fail clearly.
        warnings.warn(f"{exc} (its variables are not loaded)", ConfigWarning, stacklevel=1)
    except OSError:
        pass  # the home path itself is unusable; the command says so


# Command groups, one module per noun: (module, attribute).
_COMMANDS = (
    ("memoryport.cli.config", "config_group"),
    ("memoryport.cli.doctor", "doctor_command"),
    ("memoryport.cli.providers", "providers_group"),
    ("memoryport.cli.plugins", "plugins_group"),
    ("memoryport.cli.setup", "setup_command"),
    ("memoryport.cli.status", "status_command"),
    ("memoryport.cli.memory", "memory_group"),
    ("memoryport.cli.chat", "chat_command"),
    ("memoryport.cli.sessions", "sessions_group"),
    ("memoryport.cli.facts", "facts_group"),
    ("memoryport.cli.why", "why_command"),
    ("memoryport.cli.pause", "pause_command"),
    ("memoryport.cli.pause", "resume_command"),
    ("memoryport.cli.migrate", "migrate_group"),
    ("memoryport.cli.archive", "export_command"),
    ("memoryport.cli.archive", "import_command"),
    ("memoryport.cli.ui", "ui_command"),
    ("memoryport.cli.audit", "audit_command"),
    ("memoryport.cli.serve", "serve_command"),
    ("memoryport.cli.storage", "storage_group"),
)


def _register_commands() -> None:
    for module_name, attribute in _COMMANDS:
        command = getattr(importlib.import_module(module_name), attribute)
        main.add_command(command)


_register_commands()
