"""Direct HTTP answers (``memoryport.mcp.http.DirectCalls``): a plain ``tools/call`` on an
initialized streamable-HTTP session is answered without the SDK's session machinery, byte
for byte as the SDK's path answers it; everything else (and every error) still takes the
SDK's path. A real uvicorn server on 127.0.0.1 in this process (so the test can count the
direct answers), the real SDK client and a raw ``http.client`` one."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memoryport.mcp import MemoryServer, ServeOptions, build_server
from memoryport.mcp.http import http_config

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryServer, int]]:
    server = build_server(tmp_path_factory.mktemp("mcp-direct"), ServeOptions())
    port = free_port()
    web = uvicorn.Server(http_config(server, host="127.0.0.1", port=port))
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not web.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield server, port
    finally:
        web.should_exit = True
        thread.join(30)
        server.close()


class Raw:
    """JSON-RPC over one keep-alive ``http.client`` connection (initialized session)."""

    def __init__(self, port: int, **extra: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port)
        self.headers = {**HEADERS, **extra}
        _, head, _ = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        self.headers.update({"mcp-session-id": head["mcp-session-id"],
                             "mcp-protocol-version": "2025-11-25"})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any], *, chunked: bool = False,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        body = json.dumps(message).encode()
        sent = {**self.headers, **(headers or {})}
        if chunked:  # no content-length: this always takes the SDK's path
            self.conn.request("POST", "/mcp", iter([body]), sent, encode_chunked=True)
        else:
            self.conn.request("POST", "/mcp", body, sent)
        response = self.conn.getresponse()
        head = {k.lower(): v for k, v in response.getheaders() if k.lower() != "date"}
        return response.status, head, response.read()

    def call(self, name: str, arguments: dict[str, Any], **kwargs: Any
             ) -> tuple[int, dict[str, str], bytes]:
        return self.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}}, **kwargs)


def test_a_plain_call_is_answered_directly_as_the_sdk_answers_it(
    served: tuple[MemoryServer, int],
) -> None:
    server, port = served
    raw = Raw(port)
    calls: list[tuple[str, dict[str, Any], int]] = [  # tool, arguments, answered directly
        ("session_search", {"query": "nothing stored"}, 1),
        ("memory", {"action": "frobnicate"}, 0),  # fails the argument check: the SDK's error
        ("memory", {"action": "add", "target": "user", "content": "likes ✓ tea"}, 1),
        ("memory", {"action": "remove", "target": "user", "old_text": "gone"}, 1),  # refused
    ]
    for name, arguments, directly in calls:
        before = server.direct_answers
        via_sdk = raw.call(name, arguments, chunked=True)
        assert server.direct_answers == before
        direct = raw.call(name, arguments)
        assert server.direct_answers == before + directly
        if name == "memory" and arguments.get("action") == "add":  # the second add is a dup
            assert b"already" in direct[2] and via_sdk[0] == direct[0] == 200
            assert via_sdk[1] == direct[1] | {"content-length": via_sdk[1]["content-length"]}
            continue
        assert direct == via_sdk  # status, headers, body: the same bytes


def test_errors_and_anything_unusual_keep_the_sdks_path(served: tuple[MemoryServer, int]) -> None:
    server, port = served
    raw = Raw(port)
    before = server.direct_answers
    status, _, body = raw.call("no_such_tool", {})  # unknown tool: the SDK's JSON-RPC error
    assert status == 200 and json.loads(body)["error"]["code"] == -32602
    status, _, body = raw.call("memory", {"action": 3})  # wrong type: the SDK's tool error
    assert json.loads(body)["result"]["isError"] is True
    status, _, _ = raw.call("session_search", {"query": "x"}, headers={"host": "evil.example"})
    assert status == 421  # DNS rebinding protection (the SDK's check)
    status, _, _ = raw.call("session_search", {"query": "x"}, headers={"accept": "text/plain"})
    assert status == 406
    status, _, body = raw.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    assert status == 200 and json.loads(body)["result"]["tools"]
    assert server.direct_answers == before
    # a session the client ended is gone for the direct path too
    raw.conn.request("DELETE", "/mcp", headers=raw.headers)
    raw.conn.getresponse().read()
    status, _, _ = raw.call("session_search", {"query": "x"})
    assert status == 404 and server.direct_answers == before


def test_the_sdk_client_and_user_scoping_over_direct_answers(
    served: tuple[MemoryServer, int],
) -> None:
    server, port = served
    url = f"http://127.0.0.1:{port}/mcp"

    async def body() -> tuple[str, str]:
        async with (
            create_mcp_http_client() as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            for user in ("ann", "ben"):
                meta = {"memoryport/user_id": user}
                added = await client.call_tool("memory", {
                    "action": "add", "target": "user", "content": f"{user} keeps bees"}, meta=meta)
                assert not added.is_error
            ann = await client.read_resource("memory://USER.md", meta={"memoryport/user_id": "ann"})
            ben = await client.read_resource("memory://USER.md", meta={"memoryport/user_id": "ben"})
            return str(ann.contents[0]), str(ben.contents[0])

    before = server.direct_answers
    ann, ben = anyio.run(body)
    assert server.direct_answers >= before + 1
    assert "ann keeps bees" in ann and "ben" not in ann
    assert "ben keeps bees" in ben and "ann" not in ben
