"""A lean HTTP/1.1 transport for the MCP SDK's streamable-HTTP client.

The SDK's client (``mcp.client.streamable_http.streamable_http_client``) sends every
message through an ``httpx2.AsyncClient`` it is given. Its default transport (``httpcore2``
with the pure-Python ``h11`` parser on anyio streams) spends more CPU per request than
the MCP server answering it: on a 2-core machine about 0.3-0.5 ms of the SDK client's
1.5-2 ms per call, in about 1,450 of its 3,700 Python function calls per call, with the
request's headers and body written in two sends (two wake-ups of the server).

:class:`LeanTransport` is that transport's job done directly on the asyncio event loop:
one ``asyncio.Protocol`` per connection, responses parsed by ``httptools`` (the C parser
the ``mcp`` extra installs for uvicorn), the request written in one send, keep-alive
connections reused. Everything above it is unchanged: the SDK's ``Client``, session,
streamable-HTTP transport and ``httpx2.AsyncClient`` (headers, auth, timeouts, cookies).

    async with mcp_http_client(headers={"Authorization": "Bearer ..."}) as http, Client(
        streamable_http_client(url, http_client=http)
    ) as client:
        ...

Scope: plain ``http://`` on asyncio (uvloop included) — what a local MCP server on
loopback is. ``https://`` URLs go through httpx2's default transport. Responses stream
(the SDK's SSE ``GET`` stream works); a connection the server closed while idle is
replaced, and a request sent on one that the server closed before any response byte is
sent again once on a new connection (the server never read it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httptools
import httpx2

__all__ = ["LeanTransport", "mcp_http_client"]

_DEFAULT_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's create_mcp_http_client
_HOP_HEADERS = frozenset({b"transfer-encoding", b"content-length"})


class _Connection(asyncio.Protocol):
    """One keep-alive connection: bytes in, parsed by httptools, one response at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.busy = False  # a request is using it (bytes on an idle connection close it)
        self.error: BaseException | None = None
        self.reset()

    def reset(self) -> None:
        """Ready for the next response on this connection."""
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.received = False
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.until_close = False  # a body that ends when the server closes the connection
        self.informational = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self.busy:  # nothing was asked: a confused server, never a next answer
            self.close()
            return
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = exc
            self.close()
        self._wake()

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.until_close and exc is None:
            self.complete = True
        elif exc is not None and self.error is None:
            self.error = exc
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # informational (103 Early Hints...): the answer follows
            self.headers = []
            self.informational = True
            return
        self.status = status
        self.headers_done = True
        framed = any(name.lower() in _HOP_HEADERS for name, _ in self.headers)
        self.until_close = not framed and self.status >= 200 and self.status not in (204, 304)

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        if self.informational:
            self.informational = False
            return
        self.keep_alive = self.parser.should_keep_alive()  # reset once the call returns
        self.complete = True

    # used by the transport
    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, timeout: float | None) -> None:
        """Until more bytes, the end of the connection or ``timeout`` seconds."""
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self.waiter
        finally:
            self.waiter = None

    def failure(self, request: httpx2.Request) -> httpx2.TransportError:
        """The httpx2 error for a connection that ended or sent bad bytes."""
        if isinstance(self.error, httptools.HttpParserError):
            return httpx2.RemoteProtocolError(f"malformed HTTP response: {self.error}",
                                              request=request)
        detail = f": {self.error}" if self.error else ""
        return httpx2.ReadError(f"the server closed the connection{detail}", request=request)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True


class _ResponseStream(httpx2.AsyncByteStream):
    """A response body as it arrives; the connection goes back to the pool when the
    body was read to its end, and is closed otherwise."""

    def __init__(self, owner: LeanTransport, key: tuple[str, int], conn: _Connection,
                 request: httpx2.Request, timeout: float | None, reusable: bool) -> None:
        self._owner, self._key, self._conn = owner, key, conn
        self._request, self._timeout, self._reusable = request, timeout, reusable

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while True:
            if conn.chunks:
                data = b"".join(conn.chunks)
                conn.chunks.clear()
                yield data
            elif conn.complete:
                return
            elif conn.closed or conn.error is not None:
                raise conn.failure(self._request)
            else:
                try:
                    await conn.wait(self._timeout)
                except TimeoutError:
                    conn.close()
                    raise httpx2.ReadTimeout("timed out reading the response",
                                             request=self._request) from None

    async def aclose(self) -> None:
        conn = self._conn
        if self._reusable and conn.complete and conn.keep_alive and not conn.closed:
            conn.reset()
            self._owner._release(self._key, conn)
        else:
            conn.close()


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 keep-alive connections on the asyncio loop, parsed by ``httptools``
    (see the module docstring); ``https://`` goes to httpx2's default transport.

    Args:
        max_idle: idle connections kept per host and port.
    """

    def __init__(self, *, max_idle: int = 8) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._max_idle = max_idle
        self._tls: httpx2.AsyncHTTPTransport | None = None
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` on an idle or new connection; the response streams."""
        url = request.url
        if url.scheme != "http":
            if self._tls is None:
                self._tls = httpx2.AsyncHTTPTransport()
            return await self._tls.handle_async_request(request)
        if self._closed:
            raise httpx2.ConnectError("the transport is closed", request=request)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        key = (url.host, url.port or 80)
        wire = _encode(request, await request.aread())
        conn = await self._send(key, wire, request, timeouts)
        head = request.method == "HEAD"  # no body follows, whatever the headers say
        if head:
            conn.complete = True
        stream = _ResponseStream(self, key, conn, request, timeouts.get("read"),
                                 reusable=not head)
        return httpx2.Response(conn.status, headers=conn.headers, stream=stream,
                               extensions={"http_version": b"HTTP/1.1"})

    async def _send(self, key: tuple[str, int], wire: bytes, request: httpx2.Request,
                    timeouts: dict[str, float | None]) -> _Connection:
        """The connection whose response head arrived for ``wire``."""
        while True:
            conn, reused = self._idle_connection(key), True
            if conn is None:
                conn, reused = await self._connect(key, request, timeouts.get("connect")), False
            conn.busy = True
            try:
                if await self._exchange(conn, wire, request, timeouts.get("read"), reused):
                    return conn
            except BaseException:
                conn.close()  # cancelled or failed mid-exchange: never reuse it
                raise

    async def _exchange(self, conn: _Connection, wire: bytes, request: httpx2.Request,
                        timeout: float | None, reused: bool) -> bool:
        """Write the request and wait for the response head; False when a reused
        connection turned out closed before any response byte (send it again)."""
        assert conn.transport is not None
        conn.transport.write(wire)
        while not conn.headers_done:
            if conn.closed or conn.error is not None:
                if reused and not conn.received:
                    return False
                raise conn.failure(request)
            try:
                await conn.wait(timeout)
            except TimeoutError:
                raise httpx2.ReadTimeout("timed out waiting for the response",
                                         request=request) from None
        return True

    def _idle_connection(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return None

    async def _connect(self, key: tuple[str, int], request: httpx2.Request,
                       timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(_Connection, key[0], key[1])
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"timed out connecting to {key[0]}:{key[1]}",
                                        request=request) from None
        except OSError as exc:
            raise httpx2.ConnectError(f"cannot connect to {key[0]}:{key[1]}: {exc}",
                                      request=request) from None
        return conn

    def _release(self, key: tuple[str, int], conn: _Connection) -> None:
        conn.busy = False
        idle = self._idle.setdefault(key, [])
        if self._closed or len(idle) >= self._max_idle:
            conn.close()
        else:
            idle.append(conn)

    async def aclose(self) -> None:
        """Close every idle connection (and the https transport, if one was made)."""
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        if self._tls is not None:
            await self._tls.aclose()


def _encode(request: httpx2.Request, body: bytes) -> bytes:
    """The request line, headers and body as one buffer (one send)."""
    parts = [request.method.encode(), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        if name.lower() not in _HOP_HEADERS:
            parts += [name, b": ", value, b"\r\n"]
    if body or request.method in ("POST", "PUT", "PATCH"):
        parts += [b"Content-Length: ", str(len(body)).encode(), b"\r\n"]
    parts += [b"\r\n", body]
    return b"".join(parts)


def mcp_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` on :class:`LeanTransport`, with the SDK's defaults
    (30 s timeouts, 300 s read, no redirect following): the signature of the SDK's
    ``create_mcp_http_client``, so it fits wherever the SDK takes an
    ``httpx_client_factory``."""
    kwargs: dict[str, Any] = {"timeout": timeout or _DEFAULT_TIMEOUT,
                              "transport": LeanTransport()}
    if headers is not None:
        kwargs["headers"] = headers
    if auth is not None:
        kwargs["auth"] = auth
    return httpx2.AsyncClient(**kwargs)
