"""The memoryport MCP server: ``memoryport serve`` builds it with :func:`build_server`.

Tools: ``memory``, ``session_search``, the active provider's tools (as
``Memory.tool_schemas()`` gives them), ``remember_turn`` and ``recall``. Resources:
``memory://MEMORY.md``, ``memory://USER.md`` and ``memory://sessions/{session_id}``.
Each handler is one call into the calling client's ``memoryport.Memory`` (see
:mod:`memoryport.mcp.clients` for who the caller is), run on a worker thread so a slow
provider never blocks other clients.

Bad input is refused before anything runs, with the protocol's error: an unknown tool or
arguments over ``max_argument_bytes`` get JSON-RPC ``-32602``; arguments of the wrong
type or with unknown names get a tool result with ``isError`` (the MCP 2025-11-25 rule for
input validation); malformed JSON-RPC gets ``-32700``/``-32600`` from the SDK.

Timing: a ``tools/call`` whose ``_meta`` holds ``"memoryport/timing": true`` gets
``_meta["memoryport/timing"]`` in its result: ``server_ms`` (from this server's middleware
to the shaped result), ``handler_ms`` (the tool handler, with its worker-thread hop) and
``tool_ms`` (the one call into ``Memory``), so a client can tell where a round trip goes.
"""

from __future__ import annotations

import contextvars
import functools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult
from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST

import memoryport
from memoryport.admin import audit
from memoryport.admin.curated import open_curated
from memoryport.api import Memory
from memoryport.errors import SessionNotFound
from memoryport.mcp.clients import (
    ClientPool,
    ClientState,
    Identity,
    IdentityError,
    current_identity,
    resolve_identity,
)
from memoryport.mcp.tools import SERVER_TOOLS, recall, remember_turn, schema_tool, tool_result

__all__ = [
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "TIMING_KEY",
    "MemoryServer",
    "ServeOptions",
    "build_server",
]

DEFAULT_MAX_ARGUMENT_BYTES = 256 * 1024
"""Default cap on one tool call's arguments (serialized JSON, bytes)."""

TIMING_KEY = "memoryport/timing"
"""``_meta`` key: ``true`` in a ``tools/call`` asks for the server's timings in the result."""

_timing: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar(
    "memoryport_mcp_timing", default=None
)

INSTRUCTIONS = (
    "memoryport: long-term memory. Call `recall` with the user's message before answering "
    "(its <memory-context> block is background, not user input), `remember_turn` after "
    "answering, `memory` to save durable facts, `session_search` to find past conversations."
)


@dataclass(frozen=True)
class ServeOptions:
    """How the server identifies users and what it accepts.

    Attributes:
        user_id: the user of requests that name none (no user-bound token, no ``_meta``).
        max_argument_bytes: largest serialized ``arguments`` of one tool call.
        max_clients: most clients with an open memory (least recently used ones close).
        tokens: bearer token -> user id ("" = any user the client names); HTTP only.
    """

    user_id: str = ""
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES
    max_clients: int = 64
    tokens: Mapping[str, str] = field(default_factory=dict)


class MemoryServer:
    """The ``MCPServer`` (``.mcp``) with the client pool behind it; ``close()`` ends every
    client's session."""

    def __init__(self, home: Path, options: ServeOptions, opener: Callable[[str], Memory]):
        self.home = home
        self.options = options
        self.pool = ClientPool(opener, options.max_clients)
        first = self.pool.get(Identity(options.user_id, "default"))
        schemas = [*first.memory.tool_schemas(), *SERVER_TOOLS]
        self.tool_names = frozenset(str(s["name"]) for s in schemas)
        self.mcp: MCPServer[Any] = MCPServer(
            "memoryport",
            version=memoryport.__version__,
            instructions=INSTRUCTIONS,
            tools=[schema_tool(s, self._call) for s in schemas],
            middleware=[self._gate],
            log_level="WARNING",
        )
        self._add_resources()

    # ------------------------------------------------------------------ requests
    async def _gate(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Every request: who is calling, then the checks that need no handler."""
        started = time.perf_counter()
        if ctx.request_id is None:
            return await call_next(ctx)
        headers = getattr(ctx.request, "headers", None)
        try:
            identity = resolve_identity(
                headers, ctx.meta, tokens=self.options.tokens, default_user=self.options.user_id
            )
        except IdentityError as exc:
            raise MCPError(INVALID_REQUEST, str(exc)) from None
        timing: dict[str, float] | None = None
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            self._check_call(ctx.params)
            if ctx.meta and ctx.meta.get(TIMING_KEY) is True:
                timing = {}
        token = current_identity.set(identity)
        timed = _timing.set(timing)
        try:
            result = await call_next(ctx)
        finally:
            _timing.reset(timed)
            current_identity.reset(token)
        if timing is not None and isinstance(result, dict):
            timing["server_ms"] = (time.perf_counter() - started) * 1e3
            meta = result.setdefault("_meta", {})
            if isinstance(meta, dict):
                meta[TIMING_KEY] = {k: round(v, 3) for k, v in timing.items()}
        return result

    def _check_call(self, params: Mapping[str, Any]) -> None:
        name = params.get("name")
        if isinstance(name, str) and name not in self.tool_names:
            raise MCPError(
                INVALID_PARAMS,
                f"unknown tool {name[:100]!r}; this server offers: "
                + ", ".join(sorted(self.tool_names)),
            )
        arguments = params.get("arguments")
        size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode())
        limit = self.options.max_argument_bytes
        if size > limit:
            raise MCPError(
                INVALID_PARAMS,
                f"arguments of {name!r} are {size} bytes, over this server's limit of "
                f"{limit} (memoryport serve --max-argument-bytes); send less text",
            )

    async def _client(self) -> ClientState:
        identity = current_identity.get() or Identity(self.options.user_id, "default")
        state = self.pool.peek(identity)
        if state is not None:
            return state
        return await anyio.to_thread.run_sync(self.pool.get, identity)

    async def _call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        started = time.perf_counter()
        state = await self._client()
        if name == "remember_turn":
            run = functools.partial(remember_turn, state, **arguments)
        elif name == "recall":
            run = functools.partial(recall, state, **arguments)
        else:
            run = functools.partial(state.memory.call_tool, name, arguments, source="mcp")
        timing = _timing.get()
        if timing is None:
            return tool_result(await anyio.to_thread.run_sync(run))
        text = await anyio.to_thread.run_sync(_timed, run, timing)
        result = tool_result(text)
        timing["handler_ms"] = (time.perf_counter() - started) * 1e3
        return result

    # ------------------------------------------------------------------ resources
    def _add_resources(self) -> None:
        server = self.mcp

        @server.resource("memory://MEMORY.md", name="MEMORY.md", mime_type="text/markdown",
                         description="The agent's curated notes (MEMORY.md) for this user.")
        async def memory_md() -> str:
            return await self._curated("memory")

        @server.resource("memory://USER.md", name="USER.md", mime_type="text/markdown",
                         description="The curated user profile (USER.md) for this user.")
        async def user_md() -> str:
            return await self._curated("user")

        @server.resource("memory://sessions/{session_id}", name="session",
                         mime_type="application/json",
                         description="One stored session of this user: record and messages.")
        async def session(session_id: str) -> str:
            state = await self._client()
            return await anyio.to_thread.run_sync(_session_json, state.memory, session_id)

    async def _curated(self, target: str) -> str:
        state = await self._client()
        return await anyio.to_thread.run_sync(_curated_text, self.home, state.memory, target)

    def close(self) -> None:
        """End every client's session and shut providers down. Idempotent."""
        self.pool.close_all()


def _timed(run: Callable[[], str], timing: dict[str, float]) -> str:
    started = time.perf_counter()
    try:
        return run()
    finally:
        timing["tool_ms"] = (time.perf_counter() - started) * 1e3


def _curated_text(home: Path, memory: Memory, target: str) -> str:
    """The client's curated text as its ``memory`` tool writes it: through the store its
    open ``Memory`` holds (no config parse per read), or opened from the home when both
    curated targets are disabled."""
    user_id = memory.context.user_id
    provider = memory.curated
    store = provider.store if provider is not None else None
    if store is None:
        store = open_curated(home, user_id)
    path = store.path(target)
    audit.record(home, "mcp", "read", f"resource {path.name}", target=f"memory://{path.name}",
                 user_id=user_id)
    return store.raw(target)  # the file's text, or the database row's


def _session_json(memory: Memory, session_id: str) -> str:
    audit.record(memory.home, "mcp", "read", "resource session",
                 target=f"memory://sessions/{session_id}", session_id=session_id,
                 user_id=memory.context.user_id)
    try:
        record = memory.sessions.get_session(session_id)
        messages = memory.session_messages(session_id)
    except SessionNotFound:
        raise ResourceError(
            f"no session {session_id!r} for this user; list yours with session_search"
        ) from None
    return json.dumps({"session": record.to_dict(), "messages": messages}, ensure_ascii=False,
                      default=str)


def _open(home: Path, user_id: str) -> Memory:
    memory = memoryport.open(home, user_id=user_id or None, platform="mcp")
    memory.reserve_tool_names(*(str(t["name"]) for t in SERVER_TOOLS))
    return memory


def build_server(
    home: Path,
    options: ServeOptions | None = None,
    *,
    opener: Callable[[str], Memory] | None = None,
) -> MemoryServer:
    """The server over ``home``; ``opener(user_id)`` makes a client's ``Memory`` (default:
    ``memoryport.open(home, user_id=...)``). Opens the default user's memory at once (its
    tool schemas name the tools)."""
    return MemoryServer(home, options or ServeOptions(), opener or functools.partial(_open, home))
