"""Wiring: build the parts of a ``Memory`` from ``<home>/config.yaml``.

This is the only module that names concrete parts (the SQLite or PostgreSQL session store,
the curated and sessions providers, the plugin loader). ``memoryport.open`` calls
:func:`wire`; shells that need the session store alone (``memoryport sessions ...``) call
:func:`open_session_store`.

memoryport's own providers are registered the way a plugin registers its provider: each
entry of :data:`DEFAULT_PROVIDERS` is a ``register(ctx)`` function that calls
``ctx.register_memory_provider(provider)`` (as ``llm`` registers its own default plugins
through its plugin path); the configured ``memory.provider`` plugin's ``register(ctx)``
goes through the plugin loader, and every provider collected is then handed to
``MemoryManager.add_provider``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport.config import Config
from memoryport.errors import ConfigError
from memoryport.manager import ManagerSettings, MemoryManager
from memoryport.plugins.loader import PluginContext
from memoryport.providers.curated import (
    BuiltinMemoryProvider,
    create_builtin_provider,
    curated_options,
)
from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.base import SessionStore

__all__ = [
    "DEFAULT_PROVIDERS",
    "DefaultsContext",
    "Wiring",
    "open_session_store",
    "register_curated",
    "register_sessions",
    "wire",
]

log = logging.getLogger("memoryport")


def open_session_store(config: Config, home: Path, user_id: str | None) -> SessionStore:
    """Open the configured session store backend (SQLite by default)."""
    hidden = tuple(config.sessions.hidden_sources)
    if config.sessions.backend == "postgres":
        if not config.sessions.dsn:
            raise ConfigError(
                "sessions.backend is 'postgres' but sessions.dsn is empty; "
                "set it with: memoryport config set sessions.dsn postgresql://..."
            )
        from memoryport.storage.sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(config.sessions.dsn, user_id=user_id, hidden_sources=hidden)
    from memoryport.storage.sessions.sqlite import SQLiteSessionStore

    return SQLiteSessionStore(home / "state.db", user_id=user_id, hidden_sources=hidden)


class DefaultsContext(PluginContext):
    """The ``ctx`` memoryport's own ``register(ctx)`` functions get: a plugin context plus
    the loaded config, the open session store and the user id."""

    def __init__(self, home: Path, config: Config, store: SessionStore, user_id: str) -> None:
        super().__init__(home, "memoryport")
        self.config = config
        self.store = store
        self.user_id = user_id


def register_curated(ctx: DefaultsContext) -> None:
    """Register curated memory (``MEMORY.md``/``USER.md``) unless both files are disabled."""
    settings = ctx.config.memory
    if not (settings.memory_enabled or settings.user_profile_enabled):
        return
    ctx.register_memory_provider(
        create_builtin_provider(ctx.home, user_id=ctx.user_id, **curated_options(settings))
    )


def register_sessions(ctx: DefaultsContext) -> None:
    """Register ``session_search`` over the session store (``Memory`` owns the store)."""
    ctx.register_memory_provider(create_sessions_provider(ctx.store))


DEFAULT_PROVIDERS: tuple[Callable[[DefaultsContext], None], ...] = (
    register_curated,
    register_sessions,
)
"""memoryport's own providers, registered first and in this order."""


def _load_external(config: Config, home: Path) -> Any | None:
    name = config.memory.provider
    if not name:
        return None
    from memoryport.plugins.loader import load

    result = load(name, home)
    if result.provider is None:
        log.warning("memory provider %r could not be loaded: %s", name, result.error)
    return result.provider


def _load_general(config: Config, home: Path) -> list[Any]:
    """The enabled Hermes general plugins (``plugins.enabled``), each as one provider."""
    from memoryport.plugins.general import load_enabled

    return [r.provider for r in load_enabled(config, home) if r.provider is not None]


@dataclass(frozen=True)
class Wiring:
    """The parts ``Memory`` is made of: the manager with every provider, the store, curated."""

    manager: MemoryManager
    store: SessionStore
    curated: BuiltinMemoryProvider | None


def wire(
    home: Path,
    config: Config,
    user_id: str | None,
    *,
    providers: Sequence[Any] = (),
    manager_settings: ManagerSettings | None = None,
    load_provider: bool = True,
) -> Wiring:
    """Open the store and register the default providers, the configured plugin's provider
    (unless ``load_provider`` is False) and ``providers``, in that order."""
    general = _load_general(config, home) if load_provider else []  # not counted as external
    settings = manager_settings or ManagerSettings(
        prefetch_deadline_s=config.memory.prefetch_deadline_s,
        max_external_providers=config.memory.max_external_providers + len(general),
    )
    manager = MemoryManager(settings)
    store = open_session_store(config, home, user_id)
    ctx = DefaultsContext(home, config, store, user_id or "")
    for register in DEFAULT_PROVIDERS:
        register(ctx)
    external = [_load_external(config, home)] if load_provider else []
    for provider in [*ctx.providers, *external, *general, *providers]:
        if provider is not None:
            manager.add_provider(provider)
    curated = next((p for p in ctx.providers if isinstance(p, BuiltinMemoryProvider)), None)
    return Wiring(manager, store, curated)
