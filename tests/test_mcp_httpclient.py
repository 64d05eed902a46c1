"""``memoryport.mcp.httpclient``: the lean HTTP/1.1 transport under the MCP SDK's client.

Against a real ``memoryport serve --http`` subprocess (the SDK's ``Client`` over it:
tools, resources, bearer tokens, per-client sessions) and a small real HTTP server on
127.0.0.1 written here for what the MCP server never does (chunked bodies, a connection
closed under a request, malformed bytes, a slow answer).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memoryport.admin.curated import open_curated
from memoryport.mcp.httpclient import LeanTransport, mcp_http_client

CLI = [sys.executable, "-c", "from memoryport.cli import main; main()"]
TOKENS = {"tok-alice-0123456789": "alice", "tok-bob-0123456789": "bob"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    home = tmp_path_factory.mktemp("mcp-lean-home")
    (home / "tokens.json").write_text(json.dumps(TOKENS))
    port = free_port()
    proc = subprocess.Popen([*CLI, "--home", str(home), "serve", "--http", "--port", str(port),
                             "--tokens-file", str(home / "tokens.json")],
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "the server exited"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", home
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@asynccontextmanager
async def sdk_client(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


def test_the_sdk_client_works_over_the_lean_transport(mcp_url: tuple[str, Path]) -> None:
    url, home = mcp_url
    alice, bob = list(TOKENS)

    async def body() -> tuple[Any, ...]:
        async with sdk_client(url, alice) as first, sdk_client(url, alice) as second:
            for n in range(20):  # many calls on one keep-alive connection
                added = await first.call_tool("memory", {"action": "add", "target": "user",
                                                         "content": f"alice fact {n}"})
                assert not added.is_error, added
            turn = {"user": "alice plans Lisbon", "assistant": "ok"}
            one = json.loads((await first.call_tool("remember_turn", turn)).content[0].text)
            turn = {"user": "alice again", "assistant": "ok"}
            two = json.loads((await second.call_tool("remember_turn", turn)).content[0].text)
            profile = await first.read_resource("memory://USER.md")
        async with sdk_client(url, bob) as other:
            found = json.loads((await other.call_tool(
                "session_search", {"query": "Lisbon"})).content[0].text)
        return one, two, profile, found

    one, two, profile, found = asyncio.run(body())
    assert one["session_id"] != two["session_id"]  # one session per connected client
    assert "alice fact 19" in profile.contents[0].text
    assert found["count"] == 0  # bob never sees alice's sessions
    assert open_curated(home, "alice").entries("user")[-1] == "alice fact 19"


def test_a_wrong_token_is_refused_through_the_lean_transport(mcp_url: tuple[str, Path]) -> None:
    url, home = mcp_url

    async def body() -> list[str]:
        refused: list[str] = []
        try:
            async with sdk_client(url, "not-a-token") as client:
                await client.call_tool("memory", {"action": "add", "target": "user",
                                                  "content": "intruder"})
        except* MCPError as group:  # raised through the SDK's task groups
            refused += [str(exc) for exc in leaves(group)]
        return refused

    assert any("wrong bearer token" in message for message in asyncio.run(body()))
    assert "intruder" not in open_curated(home, "alice").raw("user")


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


# ---------------------------------------------------------------- a small real server
class Server:
    """HTTP/1.1 on 127.0.0.1: each path answers one way; counts connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        await asyncio.sleep(0.05)  # the client's closed connections end their handlers
        self._server.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                path = lines[0].split()[1]
                length = next((int(v) for k, _, v in (h.partition(": ") for h in lines[1:])
                               if k.lower() == "content-length"), 0)
                body = await reader.readexactly(length)
                served += 1
                if not await self._answer(path, body, served, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def _answer(self, path: str, body: bytes, served: int,
                      writer: asyncio.StreamWriter) -> bool:
        if path == "/stale" and served > 1:
            return False  # closed under the request: the server never read it
        if path == "/early-hints":
            writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
            return True
        if path == "/extra":  # an answer, then bytes nobody asked for
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")
            return True
        if path == "/until-close":  # no length, no chunks: the body ends at the close
            writer.write(b"HTTP/1.1 200 OK\r\n\r\nthe whole body")
            return False
        if path == "/garbage":
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            return False
        if path == "/slow":
            await asyncio.sleep(2)
        if path == "/chunked":
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for part in (b"data: one\n\n", b"data: two\n\n"):
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                await writer.drain()
                await asyncio.sleep(0.05)
            writer.write(b"0\r\n\r\n")
            return True
        answer = json.dumps({"path": path, "echo": body.decode(), "n": served}).encode()
        close = path == "/close"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     + (b"Connection: close\r\n" if close else b"")
                     + b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer))
        await writer.drain()
        return not close


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_keep_alive_reuses_one_connection_and_posts_bodies_whole() -> None:
    async def body() -> tuple[list[Any], int]:
        async with Server() as srv, httpx2.AsyncClient(transport=LeanTransport()) as http:
            answers = [(await http.post(srv.url("/json"), json={"n": n, "text": "é" * 100}))
                       .json() for n in range(5)]
            return answers, srv.connections

    answers, connections = run(body())
    assert connections == 1
    assert [a["n"] for a in answers] == [1, 2, 3, 4, 5]  # five requests, one connection
    assert json.loads(answers[0]["echo"]) == {"n": 0, "text": "é" * 100}


def test_a_streamed_chunked_body_arrives_piece_by_piece() -> None:
    async def body() -> list[bytes]:
        async with (
            Server() as srv,
            httpx2.AsyncClient(transport=LeanTransport()) as http,
            http.stream("GET", srv.url("/chunked")) as response,
        ):
            return [part async for part in response.aiter_raw()]

    assert b"".join(parts := run(body())) == b"data: one\n\ndata: two\n\n"
    assert len(parts) >= 2  # streamed as it came, not buffered to the end


def test_connection_close_and_a_connection_closed_under_a_request_are_survived() -> None:
    async def body() -> tuple[list[int], int, bytes]:
        async with Server() as srv, httpx2.AsyncClient(transport=LeanTransport()) as http:
            closed = [(await http.get(srv.url("/close"))).json()["n"] for _ in range(2)]
            stale = [(await http.get(srv.url("/stale"))).json()["n"] for _ in range(2)]
            until_close = (await http.get(srv.url("/until-close"))).content
            hints = await http.get(srv.url("/early-hints"))
            assert (hints.status_code, hints.content) == (200, b"final")
            extra = (await http.get(srv.url("/extra"))).content
            await asyncio.sleep(0.1)  # the unasked-for bytes arrive on the idle connection
            after = (await http.get(srv.url("/json"))).json()["path"]
            return closed + stale, srv.connections, [until_close, extra, after]

    served, connections, bodies = run(body())
    assert served == [1, 1, 1, 1]  # every request answered as the first of a new connection
    # two closed by the server; the 4th request sent again on a new one; the one that
    # got bytes nobody asked for while idle replaced by a new one
    assert connections == 6
    # a body that ran to the server's close; the unasked-for answer never taken as the next
    assert bodies == [b"the whole body", b"ok", "/json"]


def test_bad_answers_and_no_server_raise_httpx_errors() -> None:
    async def body() -> list[type[Exception]]:
        raised: list[type[Exception]] = []
        timeout = httpx2.Timeout(5.0, read=0.2)
        async with Server() as srv, httpx2.AsyncClient(transport=LeanTransport(),
                                                       timeout=timeout) as http:
            for path in ("/garbage", "/slow"):
                try:
                    await http.get(srv.url(path))
                except httpx2.HTTPError as exc:
                    raised.append(type(exc))
            try:
                await http.get(f"http://127.0.0.1:{free_port()}/")
            except httpx2.HTTPError as exc:
                raised.append(type(exc))
            ok = await http.get(srv.url("/json"))  # still serving after all that
            assert ok.status_code == 200
        return raised

    assert run(body()) == [httpx2.RemoteProtocolError, httpx2.ReadTimeout, httpx2.ConnectError]
