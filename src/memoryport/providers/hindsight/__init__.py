"""The bundled ``hindsight`` provider: Hindsight memory banks (cloud or a self-hosted/local
server) through the ``hindsight-client`` SDK: auto-retain, recall or reflect into each
turn, retain/recall/reflect tools; ``memory.provider: hindsight``.

See ``README.md`` in this package for setup, settings, tools and how it was tested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.hindsight.provider import HindsightProvider
from memoryport.providers.hindsight.settings import Settings

__all__ = ["HindsightProvider", "create_hindsight_provider", "register"]


def create_hindsight_provider(home: Path | None = None) -> HindsightProvider:
    """A new, un-initialized provider with the settings of ``<home>/config.yaml``."""
    if home is None:
        return HindsightProvider()
    section = load_config(home).provider_section("hindsight")
    return HindsightProvider(Settings.from_section(section), home)


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``'s config.yaml."""
    ctx.register_memory_provider(create_hindsight_provider(Path(ctx.home)))
