"""The provider manager: registration, hook dispatch and the threading contract.

Public names: :class:`MemoryManager` and :class:`ManagerSettings`. Every other module in
this package (``_hooks``, ``_tools``, ``_health``, ``_slot``, ``_workers``) is the
manager's own machinery and may change without notice.
"""

from memoryport.manager._manager import MemoryManager
from memoryport.manager._settings import ManagerSettings

__all__ = ["ManagerSettings", "MemoryManager"]
