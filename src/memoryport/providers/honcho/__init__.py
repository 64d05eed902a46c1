"""The bundled ``honcho`` provider: Honcho's cross-session user modelling through the
``honcho-ai`` SDK (``memory.provider: honcho``, extra ``honcho``). See ``README.md``; its
command group (``memoryport honcho ...``) is in ``cli.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.errors import ConfigError
from memoryport.providers.honcho.config import HonchoConfig
from memoryport.providers.honcho.provider import HonchoProvider

__all__ = ["HonchoConfig", "HonchoProvider", "create_honcho_provider", "register"]


def create_honcho_provider(home: Path | None = None) -> HonchoProvider:
    """A new, un-initialized provider with the settings resolved for ``home``'s profile
    (the defaults without a home, or when the file is invalid: ``initialize`` then says
    what is wrong)."""
    if home is None:
        return HonchoProvider()
    try:
        return HonchoProvider(HonchoConfig.load(home), home)
    except ConfigError:
        return HonchoProvider(home=home)


def register(ctx: Any) -> None:
    """Plugin entry: register the provider for ``ctx.home``'s profile."""
    ctx.register_memory_provider(create_honcho_provider(Path(ctx.home)))
