"""The bundled ``mentisdb`` provider: durable, hash-chained semantic memory in a MentisDB
daemon over HTTP (``memory.provider: mentisdb``, extra ``mentisdb``). See ``README.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.providers.mentisdb.provider import MentisDBProvider
from memoryport.providers.mentisdb.settings import Settings

__all__ = ["MentisDBProvider", "create_mentisdb_provider", "register"]


def create_mentisdb_provider(home: Path | None = None) -> MentisDBProvider:
    """A new, un-initialized provider with the settings of ``<home>`` (config.yaml, then
    the environment and ``.env``); the defaults without a home."""
    return MentisDBProvider(Settings.load(home))


def register(ctx: Any) -> None:
    """Plugin entry: register the provider configured from ``ctx.home``."""
    ctx.register_memory_provider(create_mentisdb_provider(Path(ctx.home)))
