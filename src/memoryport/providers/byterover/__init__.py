"""The bundled ``byterover`` provider: ByteRover's local-first knowledge tree through the
``brv`` CLI (npm ``byterover-cli``), run as a subprocess with a timeout: recall into each
turn, insights saved before compression, ``brv_query``/``brv_curate``/``brv_status``;
``memory.provider: byterover``.

See ``README.md`` in this package for setup, settings, tools and how it was tested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.byterover.provider import ByteRoverProvider
from memoryport.providers.byterover.settings import Settings

__all__ = ["ByteRoverProvider", "create_byterover_provider", "register"]


def create_byterover_provider(home: Path | None = None) -> ByteRoverProvider:
    """A new, un-initialized provider with the settings of ``<home>/config.yaml``."""
    if home is None:
        return ByteRoverProvider()
    section = load_config(home).provider_section("byterover")
    return ByteRoverProvider(Settings.from_section(section), home)


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``'s config.yaml."""
    ctx.register_memory_provider(create_byterover_provider(Path(ctx.home)))
