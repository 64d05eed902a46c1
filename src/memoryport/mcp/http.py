"""Streamable HTTP for the MCP server: bearer-token check, loopback rule, uvicorn.

Bound to a loopback address the server may run without a token (only local programs reach
it). Bound to anything else it refuses to start without one: every request must then carry
``Authorization: Bearer <token>``, and a missing or wrong token gets HTTP 401 with a
JSON-RPC error before the request reaches the MCP layer (nothing runs, nothing is written).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib.util
import ipaddress
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp_types import JSONRPCRequest, jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic_core import from_json
from starlette.requests import Request

from memoryport.mcp.clients import SESSION_HEADER
from memoryport.mcp.server import MemoryServer, responsive

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "KEEP_ALIVE_S",
    "BearerAuth",
    "CoalescingTransport",
    "DirectCalls",
    "LoopbackError",
    "http_app",
    "http_config",
    "http_parser",
    "is_loopback",
    "serve_http",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


KEEP_ALIVE_S = 120
"""Seconds an idle client connection stays open (uvicorn's default is 5). An MCP client
calls between model turns, often more than 5 s apart; with the default nearly every such
call would pay for a new TCP connection (and the server for a new protocol instance)."""


class LoopbackError(ValueError):
    """Asked to listen beyond loopback without a bearer token."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <one of tokens>``."""

    def __init__(self, app: ASGIApp, tokens: Mapping[str, str]) -> None:
        self.app = app
        self.tokens = [token.encode() for token in tokens]

    def _allowed(self, scope: Scope) -> str:
        """"" when the request carries a known token, else what is wrong."""
        headers = dict(scope.get("headers") or [])
        value = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = value.partition(" ")
        if not value:
            return "missing bearer token: send 'Authorization: Bearer <token>'"
        if scheme.lower() != "bearer" or not token.strip():
            return "malformed Authorization header: use 'Bearer <token>'"
        given = token.strip().encode("latin-1")
        if any(hmac.compare_digest(given, known) for known in self.tokens):
            return ""
        return "wrong bearer token: use a token the server was started with"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        problem = self._allowed(scope)
        if not problem:
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": problem}}
        ).encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="memoryport"'),
                (b"content-length", str(len(body)).encode()),
            ],
        })
        await send({"type": "http.response.body", "body": body})


def _first_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the first of repeated ones, as
    Starlette's ``Headers.get``)."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


class DirectCalls:
    """ASGI middleware: a plain ``tools/call`` on an initialized session is answered here,
    without the SDK's session machinery; every other request goes to the SDK's app.

    The SDK passes each POST through its session manager, transport, memory streams,
    the session's message router and dispatcher before this server's middleware answers
    it (about 0.7-0.9 ms of server CPU per call, measured). Taken here only when the SDK
    would accept the request as it is and answer it through the middleware's direct path
    (see :mod:`memoryport.mcp.server`): a POST to the MCP path with a JSON body within the
    size limit, that passes the SDK's DNS-rebinding and ``Accept`` checks, names a live
    session this server has already served (the SDK's session table is consulted; the
    session's idle countdown is held while the call runs, as the SDK does) with that
    session's 2025-era protocol version, and holds one JSON-RPC request for a tool whose
    arguments the middleware would take. Anything else, and any error, is left to the SDK
    (the body is handed on unread), so errors keep the SDK's shape. Where the SDK's
    internals differ from what this expects, every request takes the SDK's path.
    """

    def __init__(self, app: ASGIApp, server: MemoryServer, manager: Any, *, path: str,
                 max_body: int) -> None:
        self.app = app
        self.server = server
        self.manager = manager  # the SDK's session manager behind ``app``
        self.path = path
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = self._candidate(scope)
        if headers is None:
            await self.app(scope, receive, send)
            return
        body, trailer = await _read_body(receive)
        answer = None if trailer is not None else await self._answer(scope, headers, body)
        if answer is None:
            await self.app(scope, _replay(body, trailer, receive), send)
            return
        data = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"),
            (SESSION_HEADER.encode(), headers[SESSION_HEADER].encode("latin-1")),
            (b"content-length", str(len(data)).encode()),
        ]})
        await send({"type": "http.response.body", "body": data})

    def _candidate(self, scope: Scope) -> dict[str, str] | None:
        """The headers of a request this middleware may answer, else None (no body read)."""
        if scope.get("type") != "http" or scope.get("method") != "POST":
            return None
        if scope.get("path") != self.path:
            return None
        headers = _first_headers(scope)
        length = headers.get("content-length", "")
        if not length.isdigit() or int(length) > self.max_body:
            return None  # chunked or over the limit: the SDK's checks answer it
        if not headers.get(SESSION_HEADER) or self.server.session_version(
            headers[SESSION_HEADER]
        ) is None:
            return None
        return headers

    async def _answer(
        self, scope: Scope, headers: dict[str, str], body: bytes
    ) -> dict[str, Any] | None:
        """The JSON-RPC response when this middleware answers, else None."""
        session_id = headers[SESSION_HEADER]
        version = self.server.session_version(session_id)
        given = headers.get("mcp-protocol-version")
        if version is None or version not in HANDSHAKE_PROTOCOL_VERSIONS or (
            given is not None and given not in HANDSHAKE_PROTOCOL_VERSIONS
        ):
            return None
        manager = self.manager
        transport = _live_transport(manager, session_id)
        if transport is None:
            self.server.forget_session(session_id)
            return None
        request = Request(scope)
        security = TransportSecurityMiddleware(getattr(manager, "security_settings", None))
        if await security.validate_request(request, is_post=True) is not None:
            return None
        if not check_accept_headers(request)[0]:
            return None
        try:
            raw = from_json(body)
            message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except ValueError:
            return None
        if not isinstance(message, JSONRPCRequest) or message.method != "tools/call":
            return None
        params = raw.get("params") if isinstance(raw, dict) else None
        if not isinstance(params, dict):
            return None
        call = self.server.prepare_direct(version, headers, params)
        if call is None:
            return None
        with _held(transport) as held:
            if not held:
                return None
            result = await self.server.answer_direct(call)
        return {"jsonrpc": "2.0", "id": raw["id"], "result": result}


def _live_transport(manager: Any, session_id: str) -> Any:
    """The SDK's transport of a live session without a bound owner (memoryport's own
    bearer check runs before the SDK: the SDK binds none), else None."""
    instances = getattr(manager, "_server_instances", None)
    owners = getattr(manager, "_session_owners", None)
    if not isinstance(instances, dict) or not isinstance(owners, dict):
        return None
    transport = instances.get(session_id)
    if transport is None or owners.get(session_id) is not None:
        return None
    if getattr(transport, "is_terminated", True) or getattr(transport, "mcp_session_id",
                                                            None) != session_id:
        return None
    return transport


@contextlib.contextmanager
def _held(transport: Any) -> Iterator[bool]:
    """While a call runs: the session's idle countdown held, as the SDK's transport holds
    it for each request it serves (False, nothing changed, when the session is expiring
    or the transport is not as expected)."""
    scope = getattr(transport, "idle_scope", None)
    timeout = getattr(transport, "_idle_timeout", None)
    if scope is None or timeout is None:
        yield True
        return
    if scope.cancel_called or not isinstance(getattr(transport, "_requests_in_flight", None),
                                             int):
        yield False
        return
    transport._requests_in_flight += 1
    scope.deadline = math.inf
    try:
        yield True
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            scope.deadline = anyio.current_time() + timeout


async def _read_body(receive: Receive) -> tuple[bytes, MutableMapping[str, Any] | None]:
    """The request's body, and the message that ended it when that was not the body's
    last part (a disconnect): the SDK's app then gets it as it came."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replay(body: bytes, trailer: MutableMapping[str, Any] | None, receive: Receive) -> Receive:
    """``receive`` for the SDK's app: the body already read, then the connection's own."""
    pending: list[MutableMapping[str, Any]] = [
        {"type": "http.request", "body": body, "more_body": trailer is not None}]
    if trailer is not None:
        pending.append(trailer)

    async def replay() -> MutableMapping[str, Any]:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def http_app(server: MemoryServer, *, host: str, path: str = "/mcp") -> ASGIApp:
    """The streamable-HTTP ASGI app, behind :class:`BearerAuth` when tokens are set.

    ``LoopbackError`` for a non-loopback ``host`` without tokens.
    """
    tokens = server.options.tokens
    if not tokens and not is_loopback(host):
        raise LoopbackError(
            f"refusing to listen on {host} without a bearer token: anyone who can reach it "
            "could read and write this memory. Pass --token (or MEMORYPORT_MCP_TOKEN, or "
            "--tokens-file), or bind 127.0.0.1."
        )
    limit = max(server.options.max_argument_bytes * 2, 1 << 20)
    # Plain JSON answers to POSTs (no per-request SSE stream): the server sends no progress
    # or log notifications during a call, and a JSON body is cheaper for every client.
    app: ASGIApp = server.mcp.streamable_http_app(
        streamable_http_path=path, host=host, max_request_body_size=limit, json_response=True
    )
    manager = getattr(server.mcp._lowlevel_server, "_session_manager", None)  # this app's
    app = DirectCalls(app, server, manager, path=path, max_body=limit)
    return BearerAuth(app, tokens) if tokens else app


class CoalescingTransport:
    """A socket transport whose writes made during one pass of the event loop leave in
    one ``send`` at the end of that pass.

    uvicorn writes an answer's status line and headers, then its body, as two writes:
    two ``send`` calls, and the client is woken for the headers and again for the body (an
    MCP client library parses and waits twice). Held to the end of the pass, a JSON
    answer leaves in one segment. A streamed body (server-sent events) still leaves as it
    is written: each pass's writes go out when the pass ends. ``close``/``write_eof``
    send what is held first; everything else is the wrapped transport's.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold ``data`` until the end of this pass of the event loop."""
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, lines: Iterable[bytes | bytearray | memoryview]) -> None:
        """``write`` each of ``lines``."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Send what is held now, in one write."""
        if not self._held:
            return
        data = b"".join(self._held)
        self._held.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        """Send what is held, then close."""
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        """Send what is held, then end the stream."""
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        """Drop what is held and close at once."""
        self._held.clear()
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _coalescing(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """``base`` (a uvicorn HTTP/1.1 protocol) writing through :class:`CoalescingTransport`."""

    class Coalescing(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            wrapped = CoalescingTransport(cast(asyncio.Transport, transport),
                                          asyncio.get_running_loop())
            super().connection_made(wrapped)

    Coalescing.__name__ = Coalescing.__qualname__ = f"Coalescing{base.__name__}"
    return Coalescing


def http_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol class (:func:`http_parser`'s) on a
    :class:`CoalescingTransport`: an answer's headers and body in one ``send``."""
    if http_parser() == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return _coalescing(HttpToolsProtocol)
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return _coalescing(H11Protocol)


def http_parser() -> str:
    """uvicorn's HTTP/1.1 implementation: ``"httptools"`` (the C parser the ``mcp`` extra
    installs: about 0.6 ms less server CPU per request than pure-Python ``h11``) when it
    is importable, else ``"h11"``."""
    return "httptools" if importlib.util.find_spec("httptools") else "h11"


def http_config(
    server: MemoryServer, *, host: str, port: int, path: str = "/mcp"
) -> uvicorn.Config:
    """The ``uvicorn.Config`` :func:`serve_http` runs (``LoopbackError`` as for
    :func:`http_app`): the C parser when installed, idle connections kept
    :data:`KEEP_ALIVE_S`, no access log line built per request."""
    import uvicorn

    return uvicorn.Config(http_app(server, host=host, path=path), host=host, port=port,
                          log_level="warning", lifespan="on", http=http_protocol(),
                          access_log=False, timeout_keep_alive=KEEP_ALIVE_S)


async def serve_http(server: MemoryServer, *, host: str, port: int, path: str = "/mcp") -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop uvicorn gracefully), with the
    interpreter made :func:`~memoryport.mcp.server.responsive`."""
    import uvicorn

    with responsive():
        await uvicorn.Server(http_config(server, host=host, port=port, path=path)).serve()
