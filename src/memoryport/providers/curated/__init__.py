"""Built-in curated memory: ``MEMORY.md`` (agent notes) and ``USER.md`` (user profile).

- :class:`CuratedMemory`: the plain-Python store API (used by the CLI and the provider).
- :class:`BuiltinMemoryProvider` / :func:`create_builtin_provider`: the provider the manager
  registers, with the ``memory`` tool and the frozen system-prompt snapshot.
"""

from memoryport.providers.curated.prompt import Usage
from memoryport.providers.curated.provider import BuiltinMemoryProvider, create_builtin_provider
from memoryport.providers.curated.store import (
    Change,
    CuratedMemory,
    CuratedOptions,
    Snapshot,
    WriteResult,
    curated_options,
    safe_user_id,
)
from memoryport.providers.curated.tool import MEMORY_TOOL_SCHEMA, run_memory_tool

__all__ = [
    "MEMORY_TOOL_SCHEMA",
    "BuiltinMemoryProvider",
    "Change",
    "CuratedMemory",
    "CuratedOptions",
    "Snapshot",
    "Usage",
    "WriteResult",
    "create_builtin_provider",
    "curated_options",
    "run_memory_tool",
    "safe_user_id",
]
