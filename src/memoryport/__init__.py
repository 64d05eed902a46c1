"""memoryport: the portable long-term memory layer for LLM agents.

The public surface is small; everything else lives in modules that own one thing each.
"""

from memoryport.errors import MemoryportError
from memoryport.provider import MemoryProvider, validate_config
from memoryport.types import InitContext

__version__ = "0.1.0"

__all__ = [
    "InitContext",
    "MemoryProvider",
    "MemoryportError",
    "__version__",
    "validate_config",
]
