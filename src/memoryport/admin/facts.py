"""The fact store for shells (``memoryport facts ...``): open it for a home and a user,
list, search, show (with entities and history) and forget facts. Reads and forget work
on the file directly, without starting any provider."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memoryport.errors import StoreError
from memoryport.providers.holographic import DB_NAME
from memoryport.storage.facts.records import Fact
from memoryport.storage.facts.store import FactStore

__all__ = ["Fact", "FactStore", "database_path", "forget_fact", "list_facts", "open_facts",
           "search_facts", "show_fact"]


def database_path(home: Path) -> Path:
    """Where the ``holographic`` provider keeps its facts under ``home``."""
    return home / DB_NAME


@contextmanager
def open_facts(home: Path, user_id: str | None = None) -> Iterator[FactStore]:
    """The fact store of ``home`` scoped to ``user_id``; ``StoreError`` when there is none
    yet (nothing is created by reading)."""
    path = database_path(home)
    if not path.is_file():
        raise StoreError(
            f"no fact store at {path}; enable it with: memoryport config set memory.provider"
            " holographic"
        )
    store = FactStore(path, user_id=user_id)
    try:
        yield store
    finally:
        store.close()


def list_facts(store: FactStore, *, limit: int, include_retired: bool = False) -> list[Fact]:
    """Facts newest first (also those under the trust floor)."""
    return store.list_facts(limit=limit, include_retired=include_retired)


def search_facts(store: FactStore, query: str, *, limit: int) -> list[Fact]:
    """Ranked live facts for ``query`` (above the trust floor, as recall sees them)."""
    return store.search(query, limit=limit)


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
