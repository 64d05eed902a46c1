"""Where the holographic provider's stores live: the one place that chooses the backend.

``open_stores`` returns the fact store and the turn index for a home: the SQLite file
``<home>/holographic.db`` by default, or, with ``storage.backend: postgres``, the
``storage.dsn`` database (PostgreSQL classes imported only then, so the core install
needs no driver). On PostgreSQL each profile has its own schema (:func:`schema_for`) and
each user its rows, enforced by row-level security.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from memoryport.errors import ConfigError
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex

__all__ = ["BACKENDS", "open_stores", "schema_for"]

BACKENDS = ("sqlite", "postgres")
"""The ``storage.backend`` values the holographic stores understand."""


def schema_for(profile: str) -> str:
    """The PostgreSQL schema of a profile's facts and turns: ``memoryport`` for the
    ``default`` profile (beside the session store's tables), ``memoryport_<profile>``
    for the others (a hash keeps long names apart within PostgreSQL's 63 bytes)."""
    if profile in ("", "default"):
        return "memoryport"
    name = f"memoryport_{profile}"
    if len(name.encode()) > 48:
        digest = hashlib.sha256(profile.encode()).hexdigest()[:10]
        name = f"{name.encode()[:36].decode(errors='ignore')}_{digest}"
    return name


def open_stores(
    path: Path,
    *,
    backend: str = "sqlite",
    dsn: str = "",
    profile: str = "default",
    user_id: str | None = None,
    default_trust: float = 0.5,
    min_trust: float = 0.3,
    query_vectors: str = "table",
) -> tuple[FactStore, TurnIndex]:
    """The fact store (scoped to ``user_id``) and the turn index of one home.

    ``path`` is the SQLite file (used when ``backend`` is ``sqlite``); ``ConfigError``
    names what to fix for an unknown backend or ``postgres`` without a DSN.
    ``query_vectors`` is the turn index's (:class:`~memoryport.storage.turns.TurnIndex`).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"storage.backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "sqlite":
        store = FactStore(path, user_id=user_id, default_trust=default_trust,
                          min_trust=min_trust)
        try:
            return store, TurnIndex(path, query_vectors=query_vectors)
        except BaseException:
            store.close()
            raise
    if not dsn:
        raise ConfigError(
            "storage.backend is postgres but storage.dsn is empty: set it with "
            "`memoryport config set storage.dsn postgresql://USER@HOST/DB`"
        )
    try:
        from memoryport.storage.facts.postgres import PostgresFactStore
        from memoryport.storage.turns.postgres import PostgresTurnIndex
    except ImportError as exc:
        raise ConfigError(
            f"storage.backend is postgres but its driver is missing ({exc}): "
            "install memoryport[postgres]"
        ) from exc
    schema = schema_for(profile)
    pg_store = PostgresFactStore(dsn, user_id=user_id, schema=schema,
                                 default_trust=default_trust, min_trust=min_trust)
    try:
        return pg_store, PostgresTurnIndex(dsn, schema=schema, query_vectors=query_vectors)
    except BaseException:
        pg_store.close()
        raise
