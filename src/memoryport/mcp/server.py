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

Direct path: a well-formed ``tools/call`` of one of these tools on an initialized
connection is answered by this server's middleware itself (the SDK's request check, the
tool's argument model, one call into ``Memory``, the SDK's result sieve for the protocol
version) instead of through the SDK's tool manager, which builds and validates the same
result through several pydantic models. Anything else (arguments the SDK may pre-parse or
refuses, extra request fields such as ``task``, a connection not yet initialized) takes the
SDK's own path, so errors keep the SDK's shape. Over streamable HTTP and stdio such a call
is taken even before the SDK's session machinery (:meth:`MemoryServer.prepare_direct`,
:meth:`MemoryServer.answer_direct`; ``http.DirectCalls``, ``stdio.DirectLines``).

Timing: a ``tools/call`` whose ``_meta`` holds ``"memoryport/timing": true`` gets
``_meta["memoryport/timing"]`` in its result: ``server_ms`` (from this server's middleware
to the shaped result), ``handler_ms`` (the tool handler, with its worker-thread hop) and
``tool_ms`` (the one call into ``Memory``), so a client can tell where a round trip goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError
from mcp_types import SERVER_INFO_META_KEY, CallToolResult
from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST
from mcp_types.methods import serialize_server_result, validate_client_request
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

import memoryport
from memoryport.admin import audit
from memoryport.admin.curated import open_curated
from memoryport.api import Memory
from memoryport.errors import SessionNotFound
from memoryport.mcp.clients import (
    SESSION_HEADER,
    ClientPool,
    ClientState,
    Identity,
    IdentityError,
    current_identity,
    resolve_identity,
)
from memoryport.mcp.tools import (
    SERVER_TOOLS,
    DirectArguments,
    direct_arguments,
    recall,
    remember_turn,
    schema_tool,
    tool_result,
    tool_result_wire,
)

__all__ = [
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "SWITCH_INTERVAL_S",
    "TIMING_KEY",
    "TOOL_THREADS",
    "DirectCall",
    "MemoryServer",
    "ServeOptions",
    "build_server",
    "memory_server_of",
    "responsive",
]

DEFAULT_MAX_ARGUMENT_BYTES = 256 * 1024
"""Default cap on one tool call's arguments (serialized JSON, bytes)."""

SWITCH_INTERVAL_S = 0.0005
"""The interpreter's thread switch interval while serving (Python's default is 5 ms).

Providers work on background threads of the server process (a curated write is mirrored
into the holographic fact store after the answer is sent, syncs run after a turn). Such a
thread keeps the GIL until the switch interval ends, so with the default the event loop
and the next call's worker wait up to 5 ms for it; at 0.5 ms they wait at most that (on a
loaded 2-core machine the `memory` add round trip measured 13-14 ms with 5 ms, 7 ms with
0.5 ms, 8.5-10 ms with 0.1 ms: see benchmarks/bench_mcp.py)."""

TOOL_THREADS = 40
"""Worker threads for tool calls and resource reads (anyio's default thread limit)."""

TIMING_KEY = "memoryport/timing"
"""``_meta`` key: ``true`` in a ``tools/call`` asks for the server's timings in the result."""

log = logging.getLogger(__name__)

_CALL_FIELDS = frozenset({"name", "arguments", "_meta"})
_SESSIONS_KEPT = 4096

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


@dataclass(frozen=True)
class DirectCall:
    """A ``tools/call`` :meth:`MemoryServer.prepare_direct` accepted: the protocol version
    to shape for, the caller, the tool and its checked arguments, timings asked or not."""

    version: str
    identity: Identity
    name: str
    arguments: dict[str, Any]
    timed: bool


_SERVERS: weakref.WeakKeyDictionary[MCPServer[Any], MemoryServer] = weakref.WeakKeyDictionary()


def memory_server_of(mcp: MCPServer[Any]) -> MemoryServer | None:
    """The :class:`MemoryServer` an ``MCPServer`` (``MemoryServer.mcp``) belongs to."""
    return _SERVERS.get(mcp)


class MemoryServer:
    """The ``MCPServer`` (``.mcp``) with the client pool behind it; ``close()`` ends every
    client's session."""

    def __init__(self, home: Path, options: ServeOptions, opener: Callable[[str], Memory]):
        self.home = home
        self.options = options
        self.pool = ClientPool(opener, options.max_clients)
        self._threads = ThreadPoolExecutor(TOOL_THREADS, thread_name_prefix="memoryport-mcp")
        self._sessions: dict[str, str] = {}
        self.direct_answers = 0
        """``tools/call`` requests answered by :meth:`answer_direct` (over HTTP or stdio,
        beside the SDK's session machinery)."""
        first = self.pool.get(Identity(options.user_id, "default"))
        schemas = [*first.memory.tool_schemas(), *SERVER_TOOLS]
        self.tool_names = frozenset(str(s["name"]) for s in schemas)
        self._direct = {str(s["name"]): direct_arguments(s) for s in schemas}
        self.mcp: MCPServer[Any] = MCPServer(
            "memoryport",
            version=memoryport.__version__,
            instructions=INSTRUCTIONS,
            tools=[schema_tool(s, self._call) for s in schemas],
            middleware=[self._gate],
            log_level="WARNING",
        )
        self._add_resources()
        _SERVERS[self.mcp] = self

    # ------------------------------------------------------------------ requests
    async def _gate(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Every request: who is calling, then the checks that need no handler; a plain
        ``tools/call`` is answered here (the direct path, see the module docstring)."""
        started = time.perf_counter()
        if ctx.request_id is None:
            return await call_next(ctx)
        headers = getattr(ctx.request, "headers", None)
        self._note_session(ctx, headers)
        try:
            identity = resolve_identity(
                headers, ctx.meta, tokens=self.options.tokens, default_user=self.options.user_id
            )
        except IdentityError as exc:
            raise MCPError(INVALID_REQUEST, str(exc)) from None
        timing: dict[str, float] | None = None
        direct: tuple[str, dict[str, Any]] | None = None
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            self._check_call(ctx.params)
            direct = self._direct_call(ctx)
            if ctx.meta and ctx.meta.get(TIMING_KEY) is True:
                timing = {}
        token = current_identity.set(identity)
        timed = _timing.set(timing)
        try:
            if direct is not None:
                result: HandlerResult = await self._answer(ctx, *direct)
            else:
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

    def _direct_call(
        self, ctx: ServerRequestContext[Any, Any]
    ) -> tuple[str, dict[str, Any]] | None:
        """``(tool, arguments)`` when this server can answer the call itself exactly as
        the SDK would; None leaves it to the SDK."""
        params = ctx.params
        if params is None or not _CALL_FIELDS.issuperset(params):
            return None
        name, arguments = params.get("name"), params.get("arguments")
        check: DirectArguments | None = self._direct.get(name) if isinstance(name, str) else None
        if check is None or not isinstance(arguments, dict | None):
            return None
        if getattr(ctx.session, "client_params", None) is None:  # the SDK gates it
            return None
        try:
            validate_client_request(ctx.method, ctx.protocol_version, params)
        except (ValidationError, KeyError, ValueError):
            return None
        parsed = check.parse(arguments or {})
        return None if parsed is None else (str(name), parsed)

    async def _answer(
        self, ctx: ServerRequestContext[Any, Any], name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """The wire result of a direct ``tools/call`` (a tool that raises gets the SDK's
        ``isError`` result with no detail, and the error is logged, as the SDK does)."""
        return await self._shaped(ctx.protocol_version, name, arguments)

    async def _shaped(self, version: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            wire = tool_result_wire(await self._run(name, arguments))
        except MCPError:
            raise
        except Exception:
            log.exception("Tool %r raised an unexpected exception", name)
            wire = tool_result_wire(f"Error executing tool {name}", error=True)
        shaped = serialize_server_result("tools/call", version, wire)
        if version in MODERN_PROTOCOL_VERSIONS and shaped.get("_meta") is None:
            shaped["_meta"] = {SERVER_INFO_META_KEY: self.mcp._lowlevel_server.server_info_stamp}
        return shaped

    # ------------------------------------------------------------------ direct answers
    def _note_session(self, ctx: ServerRequestContext[Any, Any], headers: Any) -> None:
        """Remember an initialized streamable-HTTP session's protocol version (what
        :meth:`answer_direct` shapes results for)."""
        if headers is None or ctx.method == "initialize" or getattr(
            ctx.session, "client_params", None
        ) is None:
            return  # the version is known once the handshake has been answered
        session_id = headers.get(SESSION_HEADER)
        if not session_id or self._sessions.get(session_id) == ctx.protocol_version:
            return
        if len(self._sessions) >= _SESSIONS_KEPT:
            self._sessions.pop(next(iter(self._sessions)))
        self._sessions[session_id] = ctx.protocol_version

    def session_version(self, session_id: str) -> str | None:
        """The protocol version of an initialized streamable-HTTP session this server has
        answered a request of, else None."""
        return self._sessions.get(session_id)

    def forget_session(self, session_id: str) -> None:
        """Drop what :meth:`session_version` knows of a session (ended or expired)."""
        self._sessions.pop(session_id, None)

    def prepare_direct(
        self, version: str, headers: Mapping[str, str], params: Mapping[str, Any]
    ) -> DirectCall | None:
        """A ``tools/call`` with ``params`` (on an initialized session of protocol
        ``version``) checked as the middleware's direct path checks it, ready for
        :meth:`answer_direct`; None when the SDK must take the call (any error, an argument
        the SDK may pre-parse, extra request fields). Never blocks."""
        name, arguments = params.get("name"), params.get("arguments")
        check = self._direct.get(name) if isinstance(name, str) else None
        if check is None or not _CALL_FIELDS.issuperset(params) or not isinstance(
            arguments, dict | None
        ):
            return None
        meta = params.get("_meta")
        try:
            identity = resolve_identity(headers, meta if isinstance(meta, Mapping) else None,
                                        tokens=self.options.tokens,
                                        default_user=self.options.user_id)
            self._check_call(params)
            validate_client_request("tools/call", version, dict(params))
        except (IdentityError, MCPError, ValidationError, KeyError, ValueError):
            return None
        parsed = check.parse(arguments or {})
        if parsed is None:
            return None
        timed = isinstance(meta, Mapping) and meta.get(TIMING_KEY) is True
        return DirectCall(version, identity, str(name), parsed, timed)

    async def answer_direct(self, call: DirectCall) -> dict[str, Any]:
        """The result of a call :meth:`prepare_direct` accepted, shaped for its protocol
        version as the middleware's direct path shapes it (timings when asked)."""
        started = time.perf_counter()
        timing: dict[str, float] | None = {} if call.timed else None
        token, timed = current_identity.set(call.identity), _timing.set(timing)
        try:
            shaped = await self._shaped(call.version, call.name, call.arguments)
        finally:
            _timing.reset(timed)
            current_identity.reset(token)
        if timing is not None:
            timing["server_ms"] = (time.perf_counter() - started) * 1e3
            shaped.setdefault("_meta", {})[TIMING_KEY] = {k: round(v, 3)
                                                          for k, v in timing.items()}
        self.direct_answers += 1
        return shaped

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
        """The SDK's path: the tool's answer as a ``CallToolResult``."""
        return tool_result(await self._run(name, arguments))

    async def _run(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool for the calling client on a worker thread; its JSON answer."""
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
            return await self._in_thread(run)
        text = await self._in_thread(functools.partial(_timed, run, timing))
        timing["handler_ms"] = (time.perf_counter() - started) * 1e3
        return text

    async def _in_thread(self, run: Callable[[], str]) -> str:
        """``run()`` on a worker thread, awaited to its end even when the request is
        cancelled (a client gone mid-call leaves a whole write or none, and its memory is
        never closed under a running call). ``loop.run_in_executor`` rather than
        ``anyio.to_thread``: no capacity-limiter checkpoints, two event-loop passes fewer
        per call (about 0.05-0.1 ms less hop, measured A/B)."""
        context = contextvars.copy_context()
        future = asyncio.get_running_loop().run_in_executor(self._threads, context.run, run)
        with anyio.CancelScope(shield=True):
            text = await future
        return text

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
            return await self._in_thread(functools.partial(_session_json, state.memory,
                                                           session_id))

    async def _curated(self, target: str) -> str:
        state = await self._client()
        return await self._in_thread(functools.partial(_curated_text, self.home, state.memory,
                                                       target))

    def close(self) -> None:
        """End every client's session and shut providers down (after the calls still
        running on worker threads). Idempotent."""
        self._threads.shutdown(wait=True)
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


@contextlib.contextmanager
def responsive(interval: float = SWITCH_INTERVAL_S) -> Iterator[None]:
    """While serving: the thread switch interval at most ``interval`` seconds (see
    :data:`SWITCH_INTERVAL_S`); the previous one is restored afterwards."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


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
