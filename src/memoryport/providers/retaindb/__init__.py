"""The bundled ``retaindb`` provider: RetainDB cloud memory over its HTTP API (hybrid
search, typed memories, delta context), ``memory.provider: retaindb``.

See ``README.md`` in this package for setup, settings, tools and how it was tested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.retaindb.provider import RetainDBProvider
from memoryport.providers.retaindb.settings import Settings

__all__ = ["RetainDBProvider", "create_retaindb_provider", "register"]


def create_retaindb_provider(home: Path | None = None) -> RetainDBProvider:
    """A new, un-initialized provider with the settings of ``<home>/config.yaml`` (the
    defaults without a home); ``ConfigError`` names every invalid setting."""
    if home is None:
        return RetainDBProvider()
    section = load_config(home).provider_section("retaindb")
    return RetainDBProvider(Settings.from_section(section), home)


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``'s config.yaml (the
    mode decides which tools it offers, before ``initialize``)."""
    ctx.register_memory_provider(create_retaindb_provider(Path(ctx.home)))
