"""The ``memoryport`` command line: a thin shell over the Python API, one module per noun.

Root options ``--home PATH`` (env ``MEMORYPORT_HOME``) and ``--profile NAME`` (env
``MEMORYPORT_PROFILE``) select the home for every subcommand; groups read it with
``memoryport.cli._common.get_home(ctx)``.
"""

from __future__ import annotations

from pathlib import Path

import click

from memoryport import __version__
from memoryport.cli._common import AppContext, MemoryportGroup, export_home_env
from memoryport.config import validate_name
from memoryport.errors import ConfigError


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
    ctx.obj = AppContext(home_option=home, profile=profile)
    export_home_env(ctx, home, profile)


# Command groups register here, one import per module.
from memoryport.cli.config import config_group; main.add_command(config_group)  # noqa: E402, E702, I001
from memoryport.cli.doctor import doctor_command; main.add_command(doctor_command)  # noqa: E402, E702, I001
from memoryport.cli.providers import providers_group; main.add_command(providers_group)  # noqa: E402, E702, I001
from memoryport.cli.setup import setup_command; main.add_command(setup_command)  # noqa: E402, E702, I001
from memoryport.cli.status import status_command; main.add_command(status_command)  # noqa: E402, E702, I001
from memoryport.cli.memory import memory_group; main.add_command(memory_group)  # noqa: E402, E702, I001
from memoryport.cli.chat import chat_command; main.add_command(chat_command)  # noqa: E402, E702, I001
from memoryport.cli.sessions import sessions_group; main.add_command(sessions_group)  # noqa: E402, E702, I001
