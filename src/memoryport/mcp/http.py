"""Streamable HTTP for the MCP server: bearer-token check, loopback rule, uvicorn.

Bound to a loopback address the server may run without a token (only local programs reach
it). Bound to anything else it refuses to start without one: every request must then carry
``Authorization: Bearer <token>``, and a missing or wrong token gets HTTP 401 with a
JSON-RPC error before the request reaches the MCP layer (nothing runs, nothing is written).
"""

from __future__ import annotations

import hmac
import importlib.util
import ipaddress
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from memoryport.mcp.server import MemoryServer, responsive

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "KEEP_ALIVE_S",
    "BearerAuth",
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
                          log_level="warning", lifespan="on", http=http_parser(),
                          access_log=False, timeout_keep_alive=KEEP_ALIVE_S)


async def serve_http(server: MemoryServer, *, host: str, port: int, path: str = "/mcp") -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop uvicorn gracefully), with the
    interpreter made :func:`~memoryport.mcp.server.responsive`."""
    import uvicorn

    with responsive():
        await uvicorn.Server(http_config(server, host=host, port=port, path=path)).serve()
