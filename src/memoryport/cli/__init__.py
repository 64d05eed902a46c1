"""The ``memoryport`` command line: a thin shell over the Python API, one module per noun."""

from __future__ import annotations

import click

from memoryport import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memoryport")
def main() -> None:
    """memoryport: portable long-term memory for LLM agents."""


# Command groups register here, one import per module.
