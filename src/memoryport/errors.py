"""The one exception tree of memoryport.

The core raises these typed errors; the edges (tool handlers, the CLI, the MCP
server, adapters) turn them into their own format: a JSON tool result, an exit code with a
message, an MCP error.

Every tool error a model receives has one shape, built by :func:`tool_error`::

    {"success": false, "error": "<what was wrong and what to do>", "error_type": "<name>", ...}

a superset of what Hermes' memory tool answers (``{"success": false, "error": ...}``).
``error_type`` is the class name of the error that caused it (``MemoryStoreError``,
``UnsafeContent``, ``QueryError``, ``ValueError`` ...) or, for failures found at the tool
edge itself, one of ``ToolArgumentError`` (arguments do not fit), ``ToolNotFound`` (no
provider serves the tool), ``ToolUnavailable`` (the tool is switched off), ``TimeoutError``
(the tool missed its deadline) and ``ProviderError`` (the provider returned junk). Extra
keys (``findings``, ``current_entries``, ``usage`` ...) add detail.

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

import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "TOOL_ERROR_TYPES",
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
    "tool_error",
    "tool_error_json",
]

TOOL_ERROR_TYPES = (
    "ToolArgumentError",
    "ToolNotFound",
    "ToolUnavailable",
    "TimeoutError",
    "ProviderError",
)
"""The ``error_type`` values of failures found at the tool edge (not raised errors)."""


def tool_error(message: str, error_type: str, **extra: Any) -> dict[str, Any]:
    """The one tool-error shape: ``{"success": False, "error": message, "error_type": ...}``
    plus ``extra`` keys (which never override those three)."""
    shape: dict[str, Any] = {"success": False, "error": message, "error_type": error_type}
    shape.update((k, v) for k, v in extra.items() if k not in shape)
    return shape


def tool_error_json(message: str, error_type: str, **extra: Any) -> str:
    """:func:`tool_error` as the JSON string a model receives (non-ASCII kept as is)."""
    return json.dumps(tool_error(message, error_type, **extra), ensure_ascii=False, default=str)


class MemoryportError(Exception):
    """Base class of every error memoryport raises on purpose."""

    def to_dict(self) -> dict[str, Any]:
        """The tool-result form (see :func:`tool_error`); ``error_type`` is the class name."""
        return tool_error(str(self), type(self).__name__)


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
        """The tool-result form with the finding ids, so a model sees which category was refused."""
        return tool_error(str(self), type(self).__name__, findings=list(self.findings))


class MemoryStoreError(MemoryportError):
    """The curated memory store refused or failed a mutation; nothing was written."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        """The tool-result form with the details (current entries, usage, backup path ...)."""
        return tool_error(str(self), type(self).__name__, **self.details)


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
