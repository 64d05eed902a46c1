"""Which backend holds a home's curated memory and audit log: the one place that reads
``storage:`` for them.

``storage.backend: sqlite`` (the default) keeps ``MEMORY.md``/``USER.md`` as files under
the home and the audit log in ``<home>/audit.db``; ``storage.backend: postgres`` keeps
them as rows in the ``storage.dsn`` database (the session store's schema), keyed by the
home's profile name, so every host using that database shares one curated memory.
The ``storage:`` block is read once per change of ``config.yaml`` (its mtime and size).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from memoryport.config import StorageSettings, config_path, load_config, profile_name
from memoryport.errors import ConfigError, MemoryportError
from memoryport.storage.audit import DB_NAME, AuditLog
from memoryport.storage.curated_targets import CuratedBackend, FileBackend

__all__ = [
    "audit_log_for",
    "backend_for",
    "default_backend",
    "location",
    "storage_of",
    "uses_postgres",
]

log = logging.getLogger(__name__)

_SEEN: dict[Path, tuple[tuple[int, int], StorageSettings | None]] = {}
_SEEN_LOCK = threading.Lock()


def storage_of(home: Path) -> StorageSettings | None:
    """The ``storage:`` block of ``<home>/config.yaml`` (defaults without the file), or
    None when the file cannot be read or is invalid (whoever loads it for real says why)."""
    path = config_path(Path(home))
    try:
        info = path.stat()
        stamp = (info.st_mtime_ns, info.st_size)
    except FileNotFoundError:
        return StorageSettings()
    except OSError:
        return None
    with _SEEN_LOCK:
        seen = _SEEN.get(path)
    if seen is not None and seen[0] == stamp:
        return seen[1]
    try:
        storage: StorageSettings | None = load_config(Path(home)).storage
    except MemoryportError as exc:
        log.warning("curated memory: %s; using the files under %s", exc, home)
        storage = None
    with _SEEN_LOCK:
        _SEEN[path] = (stamp, storage)
    return storage


def uses_postgres(home: Path) -> bool:
    """True when ``<home>/config.yaml`` says ``storage.backend: postgres``."""
    storage = storage_of(home)
    return storage is not None and storage.backend == "postgres"


def backend_for(storage: StorageSettings, home: Path) -> CuratedBackend:
    """The curated backend ``storage`` names for ``home``.

    ``ConfigError`` when ``postgres`` is chosen without a DSN, or its driver is missing.
    """
    if storage.backend != "postgres":
        return FileBackend()
    if not storage.dsn:
        raise ConfigError(
            "storage.backend is postgres but storage.dsn is empty: set it with "
            "`memoryport config set storage.dsn postgresql://USER@HOST/DB`"
        )
    from memoryport.storage.postgres_curated import PostgresCuratedBackend

    return PostgresCuratedBackend(storage.dsn, profile=profile_name(home))


def default_backend(home: Path) -> CuratedBackend:
    """The backend ``<home>/config.yaml`` names (the files when it cannot be read: a
    broken config is reported by whatever loads it for real; reading it here must not
    fail)."""
    storage = storage_of(home)
    return FileBackend() if storage is None else backend_for(storage, home)


def audit_log_for(home: Path) -> AuditLog:
    """The audit log of ``home``: ``<home>/audit.db``, or the ``audit_*`` tables of the
    ``storage.dsn`` database with ``storage.backend: postgres`` (a broken config: the file).
    """
    path = Path(home) / DB_NAME
    storage = storage_of(home)
    if storage is None or storage.backend != "postgres" or not storage.dsn:
        return AuditLog(path)
    from memoryport.storage.postgres_audit import PostgresAuditLog

    return PostgresAuditLog(storage.dsn, profile=profile_name(home), path=path)


def location(store: Any, target: str) -> str:
    """Where ``target`` of the ``CuratedMemory`` ``store`` really lives, for people: its
    file, or on PostgreSQL the server, database, table, profile and owner (``memory
    list``; ``store.path(target)`` stays the file ``memoryport export`` writes)."""
    path = Path(store.path(target))
    backend = store.backend
    describe = getattr(backend, "location", None)
    if not callable(describe):
        return str(path)
    owner = store.user_id if path.parent != Path(store.home) / "memories" else ""
    return str(describe(owner or "", target))
