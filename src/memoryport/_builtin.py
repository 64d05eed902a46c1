"""Identity of the library's own built-in providers.

The manager recognises built-in providers by the object, never by its ``name``: the
library's factories call ``mark_builtin`` on what they create, and ``is_builtin`` checks
membership. A third-party provider that merely calls itself ``builtin`` is not built-in.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["is_builtin", "mark_builtin"]

_BUILTIN_OBJECTS: weakref.WeakSet[Any] = weakref.WeakSet()


def mark_builtin(provider: Any) -> Any:
    """Record ``provider`` as created by memoryport itself; returns it for chaining."""
    _BUILTIN_OBJECTS.add(provider)
    return provider


def is_builtin(provider: Any) -> bool:
    """True when ``provider`` is an object memoryport's own factories created."""
    try:
        return provider in _BUILTIN_OBJECTS
    except TypeError:
        return False
