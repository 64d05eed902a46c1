"""The bundled ``openviking`` provider: a self-hosted OpenViking server over its HTTP API
(``viking://`` hierarchy, tiered reads, session-end extraction), ``memory.provider:
openviking``.

See ``README.md`` in this package for setup, settings, tools and how it was tested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.openviking.provider import OpenVikingProvider
from memoryport.providers.openviking.settings import Settings

__all__ = ["OpenVikingProvider", "create_openviking_provider", "register"]


def create_openviking_provider(home: Path | None = None) -> OpenVikingProvider:
    """A new, un-initialized provider with the settings of ``<home>/config.yaml``."""
    if home is None:
        return OpenVikingProvider()
    section = load_config(home).provider_section("openviking")
    return OpenVikingProvider(Settings.from_section(section), home)


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``'s config.yaml."""
    ctx.register_memory_provider(create_openviking_provider(Path(ctx.home)))
