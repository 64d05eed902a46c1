"""The bundled ``holographic`` provider: durable facts with an entity index, trust and
contradiction handling, recalled into each turn (``memory.provider: holographic``).

The name is the reference system's, so migrated configurations keep working; ``probe``,
``related`` and ``reason`` run on the entity index (no holographic reduced
representations: the reference's HRR queries were measured to return noise). See
``docs/holographic.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.holographic.provider import DB_NAME, HolographicProvider
from memoryport.providers.holographic.settings import Settings

__all__ = ["DB_NAME", "HolographicProvider", "create_holographic_provider", "register"]


def create_holographic_provider(home: Path | None = None) -> HolographicProvider:
    """A new, un-initialized provider with the settings of ``<home>/config.yaml`` (the
    defaults without a home); ``ConfigError`` names every invalid setting."""
    if home is None:
        return HolographicProvider()
    section = load_config(home).provider_section("holographic")
    return HolographicProvider(Settings.from_section(section))


def register(ctx: Any) -> None:
    """Plugin entry: register the provider, configured from ``ctx.home``'s config.yaml
    (the mode decides which tools it offers, before ``initialize``)."""
    ctx.register_memory_provider(create_holographic_provider(Path(ctx.home)))
