"""The one exception tree of memoryport.

The core raises these typed errors; the edges (tool handlers, the CLI, the MCP
server, adapters) turn them into their own format: a JSON tool result
(``{"error": "..."}``), an exit code with a message, an MCP error.

::

    MemoryportError
    ├── ConfigError            bad config.yaml / .env / provider config values
    ├── PluginError            a provider plugin could not be found, imported or loaded
    ├── ProviderError          a provider misbehaved (raised, timed out, returned junk)
    ├── UnsafeContent          content failed the safety scan (carries the findings)
    ├── MemoryStoreError       curated memory (MEMORY.md / USER.md) refused or failed a write
    │   └── DriftError         the file on disk was changed by another program; backed up
    ├── StoreError             the session store failed or is unavailable
    │   ├── SessionNotFound    an unknown session id
    │   └── MigrationError     a schema migration failed
    └── ToolArgumentError      a tool was called with arguments that do not fit its schema
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "ConfigError",
    "DriftError",
    "MemoryStoreError",
    "MemoryportError",
    "MigrationError",
    "PluginError",
    "ProviderError",
    "SessionNotFound",
    "StoreError",
    "ToolArgumentError",
    "UnsafeContent",
]


class MemoryportError(Exception):
    """Base class of every error memoryport raises on purpose."""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form used by tool results: ``{"error": message}``."""
        return {"error": str(self)}


class ConfigError(MemoryportError):
    """Configuration is invalid. The message names the key, the value and what was expected."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems)


class PluginError(MemoryportError):
    """A provider plugin could not be discovered, imported or instantiated."""

    def __init__(self, message: str, *, plugin: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin


class ProviderError(MemoryportError):
    """A provider failed in a hook (raised, timed out, or returned something unusable)."""

    def __init__(self, message: str, *, provider: str = "", hook: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.hook = hook


class UnsafeContent(MemoryportError):
    """Content failed the safety scan. ``findings`` holds the stable finding ids."""

    def __init__(self, message: str, findings: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.findings: list[str] = list(findings)

    def to_dict(self) -> dict[str, Any]:
        """JSON form with the finding ids, so a model can see which category was refused."""
        return {"error": str(self), "findings": list(self.findings)}


class MemoryStoreError(MemoryportError):
    """The curated memory store refused or failed a mutation; nothing was written."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        """JSON form with the extra details (current entries, usage, backup path ...)."""
        return {"success": False, "error": str(self), **self.details}


class DriftError(MemoryStoreError):
    """A memory file was edited outside memoryport; it was backed up and the write refused."""


class StoreError(MemoryportError):
    """The session store failed or is unavailable."""


class SessionNotFound(StoreError):
    """No session with the given id exists (for the current user)."""


class MigrationError(StoreError):
    """A schema migration failed; the database was left at the last good version."""


class ToolArgumentError(MemoryportError):
    """A tool was called with arguments that do not match its schema."""
