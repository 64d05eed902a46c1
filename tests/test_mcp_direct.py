"""Direct HTTP answers (``memoryport.mcp.http.DirectCalls``): a plain ``tools/call`` on an
initialized streamable-HTTP session is answered without the SDK's session machinery, byte
for byte as the SDK's path answers it; everything else (and every error) still takes the
SDK's path. A real uvicorn server on 127.0.0.1 in this process (so the test can count the
direct answers), the real SDK client and a raw ``http.client`` one."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import memoryport
from memoryport.mcp import MemoryServer, ServeOptions, build_server
from memoryport.mcp.clients import Identity
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


def test_a_client_gone_mid_call_still_leaves_a_whole_turn(
    served: tuple[MemoryServer, int],
) -> None:
    server, port = served
    raw = Raw(port)
    raw.call("session_search", {"query": "x"})  # the session is known from here on
    before = server.direct_answers
    call = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "remember_turn", "arguments": {"user": "cut off", "assistant": "still whole"},
        "_meta": {"memoryport/session_id": "gone-client", "memoryport/user_id": "cy"}}})
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(call)}",
            *(f"{k}: {v}" for k, v in raw.headers.items())]
    with socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n" + call).encode())
    deadline = time.monotonic() + 30  # gone before the answer: the call still runs to its end
    while server.direct_answers == before:
        assert time.monotonic() < deadline, "the direct call never finished"
        time.sleep(0.02)
    status, _, body = raw.call("session_search", {"query": "cut off"})  # still serving
    assert status == 200 and "error" not in json.loads(body)
    state = server.pool.peek(Identity("cy", "session:gone-client"))
    assert state is not None
    assert [m["content"] for m in state.memory.session_messages("gone-client")] == [
        "cut off", "still whole"]


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


ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}


def _wire_session(home: Path, lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``lines`` sent one at a time over a pipe pair to ``serve_wire`` (each answered
    before the next is sent); the answers, and how many were answered directly."""
    from memoryport.mcp.stdio import LoopWire, serve_wire

    server = build_server(home, ServeOptions())
    to_server, from_test = os.pipe()
    to_test, from_server = os.pipe()
    answers: list[dict[str, Any]] = []

    async def body() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(serve_wire, server.mcp, LoopWire(to_server, from_server))
            pending = b""
            for line in lines:
                os.write(from_test, json.dumps(line).encode() + b"\n")
                if "id" not in line:
                    continue
                while b"\n" not in pending:
                    await anyio.wait_readable(to_test)
                    pending += os.read(to_test, 65536)
                answer, pending = pending.split(b"\n", 1)
                answers.append(json.loads(answer))
            os.close(from_test)  # end of input: the server returns

    try:
        anyio.run(body)
    finally:
        for fd in (to_server, to_test, from_server):
            os.close(fd)
        server.close()
    return answers, server.direct_answers


def _call(n: int, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta}}


def test_stdio_plain_calls_of_a_modern_connection_are_answered_directly(tmp_path: Path) -> None:
    search = ("session_search", {"query": "nothing stored"})
    calls = [_call(1, *search, ENVELOPE), _call(2, *search, ENVELOPE),  # 1: opens (SDK)
             _call(3, "memory", {"action": 3}, ENVELOPE),  # wrong type: the SDK's error result
             _call(4, "no_such_tool", {}, ENVELOPE),  # the SDK's JSON-RPC error
             _call(5, "memory", {"action": "add", "target": "user", "content": "owns a ✓ kite"},
                   {**ENVELOPE, "memoryport/user_id": "kim"}),
             _call(6, *search, {"io.modelcontextprotocol/protocolVersion": "1999-01-01",
                                "io.modelcontextprotocol/clientCapabilities": {}})]
    answers, direct = _wire_session(tmp_path, calls)
    assert direct == 2  # calls 2 and 5
    assert answers[0]["id"] == 1 and answers[1] == {**answers[0], "id": 2}  # same answer
    assert answers[2]["result"]["isError"] is True
    assert answers[3]["error"]["code"] == -32602
    assert answers[4]["result"]["structuredContent"]["success"] is True
    assert "error" in answers[5]  # an unsupported version: the SDK's rejection
    again = {"action": "add", "target": "user", "content": "owns a ✓ kite"}
    with memoryport.open(tmp_path, user_id="kim") as memory:  # written, as kim's
        assert "already exists" in memory.call_tool("memory", again)
    with memoryport.open(tmp_path) as memory:  # and nobody else's
        assert "Entry added" in memory.call_tool("memory", again)


def test_stdio_a_handshake_connection_is_left_to_the_sdk(tmp_path: Path) -> None:
    opening = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}
    answers, direct = _wire_session(tmp_path, [
        opening, {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _call(1, "session_search", {"query": "x"}, {}),
        _call(2, "session_search", {"query": "x"}, ENVELOPE),  # enveloped on a legacy one
    ])
    assert direct == 0
    assert answers[1]["result"]["structuredContent"]["success"] is True
    assert "error" in answers[2]
