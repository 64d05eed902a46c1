"""memoryport: the portable long-term memory layer for LLM agents.

The public surface is small; everything else lives in modules that own one thing each::

    import memoryport
    memory = memoryport.open()          # ~/.memoryport, or MEMORYPORT_HOME

Names are imported lazily on first use, so ``import memoryport`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, str]] = {
    "AsyncMemory": ("memoryport.aio", "AsyncMemory"),
    "open_async": ("memoryport.aio", "open_async"),
    "CompressionResult": ("memoryport.api", "CompressionResult"),
    "Memory": ("memoryport.api", "Memory"),
    "open": ("memoryport.api", "open_memory"),
    "MemoryportError": ("memoryport.errors", "MemoryportError"),
    "ManagerSettings": ("memoryport.manager", "ManagerSettings"),
    "MemoryManager": ("memoryport.manager", "MemoryManager"),
    "MemoryProvider": ("memoryport.provider", "MemoryProvider"),
    "validate_config": ("memoryport.config.schema", "validate_config"),
    "Turn": ("memoryport.turn", "Turn"),
    "InitContext": ("memoryport.types", "InitContext"),
}

__all__ = [
    "AsyncMemory",
    "CompressionResult",
    "InitContext",
    "ManagerSettings",
    "Memory",
    "MemoryManager",
    "MemoryProvider",
    "MemoryportError",
    "Turn",
    "__version__",
    "open",
    "open_async",
    "validate_config",
]

if TYPE_CHECKING:
    from memoryport.aio import AsyncMemory, open_async
    from memoryport.api import CompressionResult, Memory
    from memoryport.api import open_memory as open
    from memoryport.config.schema import validate_config
    from memoryport.errors import MemoryportError
    from memoryport.manager import ManagerSettings, MemoryManager
    from memoryport.provider import MemoryProvider
    from memoryport.turn import Turn
    from memoryport.types import InitContext


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'memoryport' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
