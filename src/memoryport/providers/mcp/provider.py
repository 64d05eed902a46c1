"""``McpProvider``: any MCP server (stdio command or streamable-HTTP URL) as a memory backend.

The server's tools are offered through the manager (filtered by ``tools``, renamed with
``tool_prefix``); ``prefetch`` calls ``prefetch_tool`` with each user message and
``sync_turn`` calls ``sync_tool`` with each completed turn, their arguments built from
``prefetch_args``/``sync_args`` templates (``{query}``, ``{user}``, ``{assistant}``,
``{session_id}``, ``{user_id}``, ``{turn_id}``).

Every hook is ``async def``: the manager runs them on its event loop, where one task holds
the MCP session open (:mod:`.connection`). A connection that died (the server exited, the
URL stopped answering) is reopened on the next hook; until then ``prefetch``/``sync_turn``
raise ``ProviderError`` (counted in ``health()``, shown by ``memoryport status``) and tool
calls answer with the one tool-error shape.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from mcp_types import CallToolResult, TextContent

from memoryport.config.schema import ConfigField
from memoryport.errors import ProviderError, tool_error_json
from memoryport.fence import CLOSE_TAG, OPEN_TAG, sanitize_context
from memoryport.provider import MemoryProvider
from memoryport.providers.mcp.connection import Connection
from memoryport.providers.mcp.settings import CONFIG_SCHEMA, Settings, fill
from memoryport.types import SessionContext, ToolSchema

__all__ = ["McpProvider"]

log = logging.getLogger("memoryport.providers.mcp")


def _text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _empty(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return value in (None, "", [], {})


class McpProvider(MemoryProvider):
    """A memory provider backed by an MCP server (see the module docstring)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._conn: Connection | None = None
        self._initialized = False
        self._closed = False
        self._context = SessionContext()

    @property
    def name(self) -> str:
        """Always ``"mcp"``."""
        return "mcp"

    def is_available(self) -> bool:
        """True when a command or URL is configured (nothing is started or contacted)."""
        return self.settings.configured

    def get_config_schema(self) -> list[ConfigField]:
        """The scalar settings (see ``providers/mcp/README.md`` for the structured ones)."""
        return [dict(f) for f in CONFIG_SCHEMA]  # type: ignore[misc]

    @property
    def connected(self) -> bool:
        """True while the MCP session is open on the running loop."""
        return self._conn is not None and self._conn.alive

    @property
    def last_error(self) -> str:
        """Why the connection failed or closed ("" while it is fine)."""
        conn = self._conn
        return "" if conn is None or conn.alive else conn.error

    # ------------------------------------------------------------------ connection
    async def _connection(self, wait: float | None = None) -> Connection:
        """The open connection on this loop, (re)connecting when needed; waits at most
        ``wait`` seconds (default: the smaller of the call and connect timeouts)."""
        s = self.settings
        bound = min(s.call_timeout_s, s.connect_timeout_s) if wait is None else wait
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        if conn is None or not conn.connecting:
            if conn is not None:
                await conn.close()
            conn = Connection(s)
            self._conn = conn
        await conn.start(bound)
        log.info("mcp: connected to %s (%d tools)", conn.describe(), len(conn.tools))
        return conn

    async def initialize(self, session_id: str, **kwargs: Any) -> None:  # type: ignore[override]
        """Connect and list the server's tools. A server that cannot be reached is logged
        (not raised), so the provider stays registered and shows its error in health."""
        self._closed = False
        self._initialized = True
        context = kwargs.get("context")
        if isinstance(context, SessionContext):
            self._context = context
        if not self.settings.configured:
            return
        try:
            await self._connection(self.settings.connect_timeout_s)
        except ProviderError as exc:
            log.warning("%s", exc)

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The server's tools (as listed at connect), filtered and prefixed."""
        conn = self._conn
        if conn is None or self._closed:
            return []
        allowed = set(self.settings.tools)
        return [
            {
                "name": self.settings.tool_prefix + tool.name,
                "description": tool.description or tool.name,
                "parameters": {k: v for k, v in tool.input_schema.items() if k != "$schema"},
            }
            for tool in conn.tools
            if not allowed or tool.name in allowed
        ]

    def _remote_name(self, tool_name: str) -> str | None:
        prefix = self.settings.tool_prefix
        if not tool_name.startswith(prefix):
            return None
        names = {s["name"] for s in self.get_tool_schemas()}
        return tool_name[len(prefix):] if tool_name in names else None

    def _meta(self, context: SessionContext | None) -> dict[str, Any] | None:
        if not self.settings.send_identity:
            return None
        ctx = context or self._context
        meta = {"memoryport/session_id": ctx.session_id} if ctx.session_id else {}
        if ctx.user_id:
            meta["memoryport/user_id"] = ctx.user_id
        return meta or None

    # ------------------------------------------------------------------ tools
    async def handle_tool_call(  # type: ignore[override]
        self, tool_name: str, args: dict[str, Any], *, context: SessionContext | None = None,
        **kwargs: Any,
    ) -> str:
        """Forward a tool call to the server; the answer as JSON (errors in the one shape)."""
        if not self._initialized or self._closed:
            return tool_error_json("mcp: the provider is not initialized", "ProviderError")
        remote = self._remote_name(tool_name)
        if remote is None:
            return tool_error_json(f"mcp: no tool {tool_name!r} on the MCP server",
                                   "ToolNotFound")
        if not isinstance(args, dict):
            return tool_error_json("mcp: arguments must be a JSON object", "ToolArgumentError")
        try:
            conn = await self._connection()
            result = await conn.call(remote, args, self._meta(context))
        except ProviderError as exc:
            return tool_error_json(str(exc), "ProviderError")
        return self._answer(remote, result)

    @staticmethod
    def _answer(remote: str, result: CallToolResult) -> str:
        text = _text(result)
        if result.is_error:
            return tool_error_json(f"{remote}: {text or 'the server reported an error'}",
                                   "RemoteToolError")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return text
        if isinstance(result.structured_content, dict):
            return json.dumps(result.structured_content, ensure_ascii=False)
        return json.dumps({"success": True, "content": text}, ensure_ascii=False)

    # ------------------------------------------------------------------ lifecycle
    def _values(self, context: SessionContext | None, **extra: str) -> dict[str, str]:
        ctx = context or self._context
        return {"session_id": ctx.session_id, "user_id": ctx.user_id,
                "turn_id": uuid.uuid4().hex[:12], **extra}

    async def _call_mapped(
        self, tool: str, template: dict[str, Any], values: dict[str, str],
        context: SessionContext | None,
    ) -> CallToolResult:
        conn = await self._connection()
        result = await conn.call(tool, fill(template, values), self._meta(context))
        if result.is_error:
            raise ProviderError(f"mcp: {tool} answered an error: {_text(result)[:300]}")
        return result

    async def prefetch(  # type: ignore[override]
        self, query: str, *, context: SessionContext | None = None, **kwargs: Any
    ) -> str:
        """Call ``prefetch_tool`` with the user's message; its text (or ``prefetch_field``),
        "" when nothing was found. ``ProviderError`` when the server is unreachable."""
        tool = self.settings.prefetch_tool
        if not tool or not self._initialized or self._closed or not query.strip():
            return ""
        values = self._values(context, query=query)
        result = await self._call_mapped(tool, self.settings.prefetch_args, values, context)
        return self._recalled(result)

    def _recalled(self, result: CallToolResult) -> str:
        structured = result.structured_content
        field = self.settings.prefetch_field
        if field:
            data = structured if isinstance(structured, dict) else _json_object(_text(result))
            value = data.get(field, "") if data else ""
            return _unfenced(value if isinstance(value, str) else json.dumps(value))
        if structured is not None and _empty(structured):
            return ""
        return _unfenced(_text(result))

    async def sync_turn(  # type: ignore[override]
        self, user_content: str, assistant_content: str, *,
        context: SessionContext | None = None, **kwargs: Any,
    ) -> None:
        """Call ``sync_tool`` with the completed turn (``ProviderError`` on failure)."""
        tool = self.settings.sync_tool
        if not tool or not self._initialized or self._closed:
            return
        values = self._values(context, user=user_content, assistant=assistant_content)
        await self._call_mapped(tool, self.settings.sync_args, values, context)

    async def shutdown(self) -> None:  # type: ignore[override]
        """Close the session (the server process ends). Idempotent."""
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


def _unfenced(text: str) -> str:
    """A remote fenced block's inside (its note and tags dropped), so the recall is
    fenced once, by this memory; other fence debris is removed."""
    start, end = text.find(OPEN_TAG), text.rfind(CLOSE_TAG)
    if start != -1 and end > start:
        text = text[start + len(OPEN_TAG):end]
    return sanitize_context(text).strip()


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
