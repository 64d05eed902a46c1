"""The fact store for shells (``memoryport facts ...``): open it for a home and a user,
list, search, show (with entities and history) and forget facts. Reads and forget work
on the store directly (the SQLite file, or the profile's PostgreSQL schema with
``storage.backend: postgres``), without starting any provider."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memoryport.config import load_config, profile_name
from memoryport.errors import StoreError
from memoryport.providers.holographic import DB_NAME
from memoryport.providers.holographic.settings import QUERY_VECTORS_DEFAULT
from memoryport.storage.facts.postgres_open import open_stores, schema_for
from memoryport.storage.facts.records import Fact, as_of_time
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, query_encoder, vectors

__all__ = [
    "EMBEDDINGS_MODULES",
    "Fact",
    "FactStore",
    "database_path",
    "embeddings_present",
    "forget_fact",
    "list_facts",
    "open_facts",
    "search_facts",
    "show_fact",
    "status_details",
    "why_fact",
]

EMBEDDINGS_MODULES = ("numpy", "tokenizers")
"""What the ``embeddings`` extra installs (what runs the MiniLM model, no download at run
time); the provider works without it on the lexical, entity and date signals."""


def database_path(home: Path) -> Path:
    """Where the ``holographic`` provider keeps its facts under ``home``."""
    return home / DB_NAME


@contextmanager
def _open_stores(home: Path, user_id: str | None) -> Iterator[tuple[FactStore, TurnIndex]]:
    """The fact store and turn index of ``home`` where its ``storage.backend`` keeps them
    (``<home>/holographic.db``, or the profile's PostgreSQL schema); ``StoreError`` for a
    SQLite home with none yet (nothing is created by reading)."""
    storage = load_config(home).storage
    path = database_path(home)
    if storage.backend == "sqlite" and not path.is_file():
        raise StoreError(
            f"no fact store at {path}; enable it with: memoryport config set memory.provider"
            " holographic"
        )
    store, turns = open_stores(path, backend=storage.backend, dsn=storage.dsn,
                               profile=profile_name(home), user_id=user_id)
    try:
        yield store, turns
    finally:
        turns.close()
        store.close()


@contextmanager
def open_facts(home: Path, user_id: str | None = None) -> Iterator[FactStore]:
    """The fact store of ``home`` scoped to ``user_id``, on the home's storage backend;
    ``StoreError`` when a SQLite home has none yet (nothing is created by reading)."""
    with _open_stores(home, user_id) as (store, _turns):
        yield store


def list_facts(store: FactStore, *, limit: int, include_retired: bool = False) -> list[Fact]:
    """Facts newest first (also those under the trust floor)."""
    return store.list_facts(limit=limit, include_retired=include_retired)


def search_facts(store: FactStore, query: str, *, limit: int, as_of: str | None = None
                 ) -> list[Fact]:
    """Ranked live facts for ``query`` (above the trust floor, as recall sees them);
    ``as_of`` (a date or ISO date-time) searches what was believed then."""
    when = as_of_time(as_of) if as_of else None
    return store.search(query, limit=limit, as_of=when)


def why_fact(store: FactStore, fact_id: int) -> dict[str, Any]:
    """Where a fact came from (``FactStore.why``) and its supersession chain."""
    return {**store.why(fact_id), "chain": [f.to_dict() for f in store.chain(fact_id)]}


def show_fact(store: FactStore, fact_id: int) -> dict[str, Any]:
    """One fact with its entities, history and contradictions; ``StoreError`` if unknown."""
    fact = store.get(fact_id)
    if fact is None:
        raise StoreError(f"no fact #{fact_id}; list facts with: memoryport facts list")
    return {
        "fact": fact.to_dict(),
        "revisions": [r.to_dict() for r in store.revisions(fact_id)],
        "contradictions": [c.to_dict() for c in store.contradictions(fact_id=fact_id)],
    }


def forget_fact(store: FactStore, fact_id: int) -> bool:
    """Delete a fact for good (see ``FactStore.forget``); False when there was none."""
    return store.forget(fact_id, actor="cli")


def embeddings_present() -> bool:
    """True when every module of the ``embeddings`` extra can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in EMBEDDINGS_MODULES)


def status_details(home: Path, user_id: str | None = None) -> dict[str, Any]:
    """What ``memoryport status`` shows for the ``holographic`` provider: its database,
    the live / retired facts and the stored turns of ``user_id``'s scope (0 before the
    first write; reading creates nothing), and whether the embeddings extra is
    installed."""
    path = database_path(home)
    details: dict[str, Any] = {
        "database": str(path), "user": user_id or "(default)", "facts": 0,
        "retired_facts": 0, "turns": 0,
        "embeddings": f"installed; model {vectors.status()}" if embeddings_present() else
        "not installed (pip install 'memoryport[embeddings]'; recall works without it)",
    }
    config = load_config(home)
    if embeddings_present() and vectors.status() == "ready":
        choice = config.provider_section("holographic").get("query_vectors")
        details["query_vectors"] = query_encoder.describe(
            vectors.default_model_dir(),
            choice if choice in query_encoder.CHOICES else QUERY_VECTORS_DEFAULT)
    if config.storage.backend == "sqlite" and not path.is_file():
        return details
    if config.storage.backend != "sqlite":
        details["database"] = f"PostgreSQL schema {schema_for(profile_name(home))}"
    with _open_stores(home, user_id) as (store, turns):
        details["facts"] = store.count()
        details["retired_facts"] = store.count(include_retired=True) - details["facts"]
        details["turns"] = turns.count(user_id)
    return details
