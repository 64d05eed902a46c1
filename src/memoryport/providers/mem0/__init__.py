"""The bundled ``mem0`` provider: Mem0 memory on the platform (API key) or the open-source
library with a local vector store (``memory.provider: mem0``, extra ``mem0``). See
``README.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.providers.mem0.backend import HashEmbedder
from memoryport.providers.mem0.provider import Mem0Provider
from memoryport.providers.mem0.settings import Settings

__all__ = ["HashEmbedder", "Mem0Provider", "create_mem0_provider", "register"]


def create_mem0_provider(home: Path | None = None) -> Mem0Provider:
    """A new, un-initialized provider with the settings of ``<home>`` (config.yaml, then
    the environment and ``.env``); the defaults without a home."""
    return Mem0Provider(Settings.load(home))


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``."""
    ctx.register_memory_provider(create_mem0_provider(Path(ctx.home)))
