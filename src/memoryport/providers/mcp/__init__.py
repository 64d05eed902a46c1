"""The bundled ``mcp`` provider: any MCP server as a memory backend (``memory.provider: mcp``).

It connects to a server started from a command (stdio) or running at a URL (streamable
HTTP), offers the server's tools through the manager and maps ``prefetch``/``sync_turn``
onto configured tools. See ``providers/mcp/README.md`` and ``docs/mcp.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.providers.mcp.provider import McpProvider
from memoryport.providers.mcp.settings import CONFIG_SCHEMA, Settings

__all__ = ["CONFIG_SCHEMA", "McpProvider", "Settings", "create_mcp_provider", "register"]


def create_mcp_provider(home: Path | None = None) -> McpProvider:
    """A new, un-initialized provider with the ``mcp:`` settings of ``<home>/config.yaml``
    (unconfigured without a home); ``ConfigError`` names every invalid setting."""
    if home is None:
        return McpProvider()
    return McpProvider(Settings.from_section(load_config(home).provider_section("mcp")))


def register(ctx: Any) -> None:
    """Plugin entry: register the provider, configured from ``ctx.home``'s config.yaml."""
    ctx.register_memory_provider(create_mcp_provider(Path(ctx.home)))
