"""The bundled ``supermemory`` provider: Supermemory cloud memory through the official SDK
(semantic recall, profile facts, turn and session capture, custom containers),
``memory.provider: supermemory``.

See ``README.md`` in this package for setup, settings, tools and how it was tested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.supermemory.provider import SupermemoryProvider, strip_recalled
from memoryport.providers.supermemory.settings import Settings

__all__ = ["SupermemoryProvider", "create_supermemory_provider", "register", "strip_recalled"]


def create_supermemory_provider(home: Path | None = None) -> SupermemoryProvider:
    """A new, un-initialized provider with the settings of ``<home>/config.yaml``."""
    if home is None:
        return SupermemoryProvider()
    section = load_config(home).provider_section("supermemory")
    return SupermemoryProvider(Settings.from_section(section), home)


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``'s config.yaml."""
    ctx.register_memory_provider(create_supermemory_provider(Path(ctx.home)))
