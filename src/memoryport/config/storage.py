"""The ``storage:`` block and the deprecated ``sessions.backend``/``sessions.dsn`` keys.

``storage.backend`` (``sqlite`` or ``postgres``) and ``storage.dsn`` say where memory
lives: with ``postgres``, the session history, curated memory with its history and the
audit log are all in the ``storage.dsn`` database (see docs/postgres.md).
The old spellings under ``sessions:`` are still read with a ``ConfigWarning``:
a ``storage:`` key wins, an old key fills in when its ``storage:`` key is absent, and
after loading both blocks hold the same values (older code reading
``config.sessions.backend`` keeps working). ``config set`` on an old key stores the new
one and removes the old spelling from the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DEPRECATED_KEYS", "StorageSettings", "drop_keys", "resolve_storage", "storage_key"]

Warn = Callable[[str], None]


@dataclass(frozen=True)
class StorageSettings:
    """The ``storage:`` block: where memory lives (``sqlite`` files or one ``postgres`` DSN)."""

    backend: str = "sqlite"
    dsn: str = ""


DEPRECATED_KEYS = {"sessions.backend": "storage.backend", "sessions.dsn": "storage.dsn"}
"""Old keys still read, and the keys that replace them."""


def _given(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    raw = data.get(name)
    return raw if isinstance(raw, Mapping) else {}


def resolve_storage(
    data: Mapping[str, Any], blocks: Mapping[str, Any], source: str, warn: Warn
) -> tuple[StorageSettings, Any]:
    """The ``storage`` and ``sessions`` blocks of a parsed file, reconciled (see module)."""
    storage, sessions = blocks["storage"], blocks["sessions"]
    old_block, new_block = _given(data, "sessions"), _given(data, "storage")
    values: dict[str, Any] = {}
    for old, new in DEPRECATED_KEYS.items():
        key = new.partition(".")[2]
        if key not in old_block:
            continue
        if key in new_block:
            warn(f"{source}: {old!r} is deprecated and ignored ({new!r} is set); remove it")
            continue
        values[key] = getattr(sessions, key)
        warn(
            f"{source}: {old!r} is deprecated; it is read as {new!r} "
            f"(move it: memoryport config set {new} ...)"
        )
    storage = dataclasses.replace(storage, **values)
    sessions = dataclasses.replace(sessions, backend=storage.backend, dsn=storage.dsn)
    return storage, sessions


def storage_key(dotted: str, warn: Warn) -> tuple[str, tuple[str, ...]]:
    """The key ``config set`` writes for ``dotted`` and the old keys it removes."""
    if dotted in DEPRECATED_KEYS:
        warn(f"{dotted!r} is deprecated; stored as {DEPRECATED_KEYS[dotted]!r}")
        dotted = DEPRECATED_KEYS[dotted]
    drop = tuple(old for old, new in DEPRECATED_KEYS.items() if new == dotted)
    return dotted, drop


def drop_keys(data: dict[str, Any], dotted_keys: Sequence[str]) -> dict[str, Any]:
    """``data`` (a parsed file, changed in place) without the ``SECTION.KEY`` entries given."""
    for dotted in dotted_keys:
        section, _, key = dotted.partition(".")
        if isinstance(data.get(section), dict):
            data[section].pop(key, None)
    return data
