"""Streamable HTTP for the MCP server: bearer-token check, loopback rule, uvicorn.

Bound to a loopback address the server may run without a token (only local programs reach
it). Bound to anything else it refuses to start without one: every request must then carry
``Authorization: Bearer <token>``, and a missing or wrong token gets HTTP 401 with a
JSON-RPC error before the request reaches the MCP layer (nothing runs, nothing is written).
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.util
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, cast

from memoryport.mcp.server import MemoryServer, responsive

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "KEEP_ALIVE_S",
    "BearerAuth",
    "CoalescingTransport",
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
