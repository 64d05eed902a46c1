"""The MCP server shell: ``memoryport serve`` (stdio or streamable HTTP).

:func:`build_server` makes the server over a memoryport home; see ``docs/mcp.md``.
"""

from __future__ import annotations

from memoryport.mcp.server import MemoryServer, ServeOptions, build_server

__all__ = ["MemoryServer", "ServeOptions", "build_server"]
