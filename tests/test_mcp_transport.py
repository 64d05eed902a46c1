"""``memoryport serve`` as a real subprocess: stdio and streamable HTTP on 127.0.0.1, with
the real ``mcp`` client; bearer tokens, user scoping, per-client sessions, malformed
JSON-RPC and a client that disconnects mid-request (nothing written, still serving)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

import memoryport
from memoryport.admin.curated import open_curated
from memoryport.cli import main
from memoryport.mcp.clients import META_USER_KEY

CLI = [sys.executable, "-c", "from memoryport.cli import main; main()"]
TOKENS = {"tok-alice-0123456789": "alice", "tok-bob-0123456789": "bob"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not start")


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    home = tmp_path_factory.mktemp("mcp-http-home")
    tokens = home / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "--home", str(home), "serve", "--http", "--port", str(port),
         "--tokens-file", str(tokens), "--max-argument-bytes", "2048"],
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", home
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0  # a clean stop (SIGTERM): every client's session was closed
    with memoryport.open(home, user_id="alice") as memory:
        ended = [row.session.end_reason for row in memory.sessions.list_sessions()]
    assert ended and set(ended) == {"close"}


@asynccontextmanager
async def http_client(url: str, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def data(result: Any) -> dict[str, Any]:
    assert result.content, result
    out: dict[str, Any] = json.loads(result.content[0].text)
    return out


ALICE, BOB = list(TOKENS)


def test_stdio_subprocess_serves_tools_and_resources(tmp_path: Path) -> None:
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "--home", str(tmp_path),
                                                         "serve"])

    async def body() -> tuple[Any, Any]:
        async with Client(params) as client:
            added = await client.call_tool(
                "memory", {"action": "add", "target": "memory", "content": "stdio note"}
            )
            return added, await client.read_resource("memory://MEMORY.md")

    added, memory_md = anyio.run(body)
    assert data(added)["success"] is True
    assert "stdio note" in memory_md.contents[0].text
    assert open_curated(tmp_path).entries("memory") == ["stdio note"]


def test_stdio_large_answers_and_utf8_cross_the_wire_whole(tmp_path: Path) -> None:
    # an answer of ~200 KB (many PIPE_BUF writes) and multi-byte text, both directions
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "--home", str(tmp_path),
                                                         "serve"])
    text = "näive café 😀 " * 12_000

    async def body() -> tuple[Any, Any]:
        async with Client(params) as client:
            turn = data(await client.call_tool("remember_turn", {"user": text, "assistant": "ok"}))
            session = await client.read_resource(f"memory://sessions/{turn['session_id']}")
            return turn, session

    turn, session = anyio.run(body)
    assert turn["success"] is True
    stored = json.loads(session.contents[0].text)
    assert [m["content"] for m in stored["messages"]] == [text, "ok"]


def test_stdio_wire_reassembles_lines_split_anywhere() -> None:
    from memoryport.mcp.stdio import LoopWire

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    payload = "".join(json.dumps({"n": n, "text": "é😀" * n}) + "\n" for n in range(50)).encode()
    answer = "x" * 300_000 + "\n"

    def feed() -> None:  # the client side: odd-sized pieces, cutting characters in two
        for start in range(0, len(payload), 7):
            os.write(in_w, payload[start:start + 7])
        os.close(in_w)

    received = bytearray()

    def drain() -> None:
        while chunk := os.read(out_r, 1 << 16):
            received.extend(chunk)

    async def body() -> list[str]:
        wire = LoopWire(in_r, out_w)
        lines = [line async for line in wire]
        await wire.write(answer)
        await wire.flush()
        os.close(out_w)
        return lines

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for thread in threads:
        thread.start()
    try:
        lines = anyio.run(body)
    finally:
        for thread in threads:
            thread.join(timeout=30)
        os.close(in_r)
        os.close(out_r)
    assert [json.loads(line)["n"] for line in lines] == list(range(50))
    assert all(line.endswith("\n") for line in lines)
    assert json.loads(lines[7])["text"] == "é😀" * 7
    assert received.decode() == answer


def test_stdio_session_streams_parse_lines_and_never_interleave_answers() -> None:
    """The session reads the wire itself (a junk line becomes the parse error it answers)
    and answers sent at once, each many PIPE_BUF writes long, arrive whole, one per line."""
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCResponse

    from memoryport.mcp.stdio import LoopWire, WireReader, WireWriter

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    os.write(in_w, (json.dumps(request) + "\nnot json\n").encode())
    os.close(in_w)
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(out_r, 1 << 16):
            received.extend(chunk)

    async def body() -> list[Any]:
        wire = LoopWire(in_r, out_w)
        items = [item async for item in WireReader(wire)]
        writer = WireWriter(wire)
        async with anyio.create_task_group() as tg:
            for n in range(4):
                answer = JSONRPCResponse(jsonrpc="2.0", id=n, result={"text": str(n) * 50_000})
                tg.start_soon(writer.send, SessionMessage(answer))
        os.close(out_w)
        return items

    thread = threading.Thread(target=drain)
    thread.start()
    try:
        items = anyio.run(body)
    finally:
        thread.join(timeout=30)
        os.close(in_r)
        os.close(out_r)
    assert items[0].message.method == "ping" and isinstance(items[1], Exception)
    answers = [json.loads(line) for line in received.decode().splitlines()]
    assert sorted(a["id"] for a in answers) == [0, 1, 2, 3]
    assert all(a["result"]["text"] == str(a["id"]) * 50_000 for a in answers)


def test_stdio_stray_output_goes_to_stderr_not_the_wire() -> None:
    script = (
        "import os, sys, anyio\n"
        "from memoryport.mcp.stdio import claimed_stdio\n"
        "async def main():\n"
        "    with claimed_stdio() as wire:\n"
        "        print('stray print'); sys.stdout.flush(); os.write(1, b'stray write\\n')\n"
        "        line = [x async for x in wire][0]\n"
        "        await wire.write('echo ' + line)\n"
        "    print('after serving')\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input="hello\n", text=True,
                          capture_output=True, timeout=60, check=True)
    assert done.stdout == "echo hello\nafter serving\n"  # fd 1 is back after serving
    assert "stray print" in done.stderr and "stray write" in done.stderr


def test_stdio_malformed_json_rpc_gets_errors_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    lines = [
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {
            "name": "memory", "arguments": {"action": "add", "target": "memory",
                                            "content": "before initialize"}}}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 7}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "memory", "arguments": {"action": "add", "target": "memory",
                                            "content": "after the junk"}}}),
    ]
    proc = subprocess.Popen([*CLI, "--home", str(tmp_path), "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    replies: dict[Any, dict[str, Any]] = {}
    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        while 4 not in replies:
            line = proc.stdout.readline()
            assert line, "the server stopped"
            reply = json.loads(line)
            replies[reply.get("id")] = reply
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert replies[0]["error"]["code"] == -32602  # a call before initialize is refused
    assert replies[2]["error"]["code"] == -32602
    assert replies[3]["error"]["code"] == -32601
    assert json.loads(replies[4]["result"]["content"][0]["text"])["success"] is True
    assert open_curated(tmp_path).entries("memory") == ["after the junk"]
    assert proc.returncode == 0


def test_http_tokens_scope_users_and_clients_get_their_own_sessions(
    http_server: tuple[str, Path],
) -> None:
    url, home = http_server

    async def body() -> tuple[Any, ...]:
        async with http_client(url, ALICE) as a1, http_client(url, ALICE) as a2:
            t1 = data(await a1.call_tool("remember_turn", {"user": "alice plans Lisbon",
                                                           "assistant": "ok"}))
            t2 = data(await a2.call_tool("remember_turn", {"user": "alice second client",
                                                           "assistant": "ok"}))
            await a1.call_tool("memory", {"action": "add", "target": "user",
                                          "content": "Alice drinks tea"})
        async with http_client(url, BOB, mode="auto") as bob:
            search = data(await bob.call_tool("session_search", {"query": "Lisbon"}))
            profile = await bob.read_resource("memory://USER.md")
            with pytest.raises(MCPError) as hidden:
                await bob.read_resource(f"memory://sessions/{t1['session_id']}")
            with pytest.raises(MCPError) as claimed:
                await bob.call_tool("session_search", {"query": "x"},
                                    meta={META_USER_KEY: "alice"})
        return t1, t2, search, profile, hidden.value, claimed.value

    t1, t2, search, profile, hidden, claimed = anyio.run(body)
    assert t1["session_id"] != t2["session_id"]  # one session per connected client
    assert search["count"] == 0 and profile.contents[0].text == ""
    assert "no session" in hidden.message
    assert "bound to another user" in claimed.message
    assert open_curated(home, "alice").entries("user") == ["Alice drinks tea"]
    assert open_curated(home, "bob").entries("user") == []


def test_http_missing_or_wrong_bearer_is_refused_and_writes_nothing(
    http_server: tuple[str, Path],
) -> None:
    url, home = http_server
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "memory", "arguments": {"action": "add", "target": "memory",
                                        "content": "intruder"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}):
        reply = httpx.post(url, json=call, headers={**accept, **headers}, timeout=30)
        assert reply.status_code == 401
        assert reply.json()["error"]["message"]
        assert reply.headers["www-authenticate"].startswith("Bearer")
    assert "intruder" not in "".join(open_curated(home).entries("memory"))

    async def body() -> Any:
        async with http_client(url, BOB) as client:
            return await client.call_tool("session_search", {"query": "x"})

    assert not anyio.run(body).is_error  # still serving


def test_http_malformed_oversized_and_cut_requests_change_nothing(
    http_server: tuple[str, Path],
) -> None:
    url, home = http_server
    auth = {"Authorization": f"Bearer {BOB}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}
    junk = httpx.post(url, content=b"{not json", headers=auth, timeout=30)
    assert junk.status_code == 400 and junk.json()["error"]["code"] == -32700
    port = int(url.split(":")[2].split("/")[0])
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "memory", "arguments": {"action": "add", "target": "user", "content": "cut"}}})
    with socket.create_connection(("127.0.0.1", port), 5) as sock:  # disconnects mid-request
        sock.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {BOB}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body) + 500}\r\n\r\n"
            f"{body}".encode()
        )

    async def calls() -> tuple[MCPError, Any]:
        async with http_client(url, BOB) as client:
            with pytest.raises(MCPError) as big:
                await client.call_tool("memory", {"action": "add", "target": "user",
                                                  "content": "z" * 4000})
            return big.value, await client.call_tool("session_search", {"query": "x"})

    big, after = anyio.run(calls)
    assert big.code == -32602 and "2048" in big.message
    assert not after.is_error
    assert open_curated(home, "bob").entries("user") == []


def test_http_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--home", str(tmp_path), "serve", "--http", "--host", "0.0.0.0"],
        env={"MEMORYPORT_MCP_TOKEN": None},
    )
    assert result.exit_code == 2
    assert "without a bearer token" in result.output and "--token" in result.output
    assert not (tmp_path / "state.db").exists()  # refused before opening anything


def test_tokens_file_must_be_a_mapping(tmp_path: Path) -> None:
    bad = tmp_path / "tokens.json"
    bad.write_text('["just-a-token"]')
    result = CliRunner().invoke(
        main, ["--home", str(tmp_path), "serve", "--http", "--tokens-file", str(bad)]
    )
    assert result.exit_code == 2 and "JSON object" in result.output


def test_http_client_gone_while_its_call_runs_leaves_a_whole_turn_or_none(
    http_server: tuple[str, Path],
) -> None:
    url, home = http_server
    port = int(url.split(":")[2].split("/")[0])
    base = {"Authorization": f"Bearer {BOB}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}
    init = httpx.post(url, headers=base, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
    session = init.headers["mcp-session-id"]
    headers = {**base, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    httpx.post(url, headers=headers, timeout=30,
               json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "remember_turn", "arguments": {"user": "gone mid-call", "assistant": "a"},
        "_meta": {"memoryport/session_id": "cut-session"}}})
    lines = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(call)}",
             *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n" + call).encode())
    # the client is gone; the server keeps serving and stored the whole turn or none of it

    async def body() -> Any:
        async with http_client(url, BOB) as client:
            return await client.call_tool("session_search", {"query": "x"})

    assert not anyio.run(body).is_error
    with memoryport.open(home, user_id="bob") as memory:
        try:
            stored = memory.session_messages("cut-session")
        except memoryport.MemoryportError:
            stored = []
    assert len(stored) in (0, 2)


def test_http_runs_on_the_c_parser_the_mcp_extra_installs(tmp_path: Path) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from memoryport.mcp import ServeOptions, build_server
    from memoryport.mcp.http import KEEP_ALIVE_S, LoopbackError, http_config

    server = build_server(tmp_path, ServeOptions())
    try:
        config = http_config(server, host="127.0.0.1", port=free_port())
        config.load()
        assert issubclass(config.http_protocol_class, HttpToolsProtocol)
        # idle keep-alive connections outlive the gap between two model turns
        assert config.timeout_keep_alive == KEEP_ALIVE_S > 5 and config.access_log is False
        with pytest.raises(LoopbackError):
            http_config(server, host="0.0.0.0", port=free_port())
    finally:
        server.close()


def test_an_answers_headers_and_body_leave_in_one_send() -> None:
    # uvicorn writes the status line and headers, then the body: held to the end of the
    # event loop's pass, they reach the client together (one wake-up, one parse)
    from memoryport.mcp.http import CoalescingTransport

    async def body() -> tuple[bytes, bytes, bytes, bool]:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        wire = CoalescingTransport(transport, loop)  # type: ignore[arg-type]
        wire.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        wire.write(b"{}")
        try:
            held = theirs.recv(1024)  # nothing has left yet: both writes are held
        except BlockingIOError:
            held = b""
        await asyncio.sleep(0)  # the pass ends: one send of both
        await asyncio.sleep(0.05)
        sent = theirs.recv(1024)
        wire.write(b"last words")
        wire.close()  # what is held leaves before the close
        await asyncio.sleep(0.05)
        closing = theirs.recv(1024)
        theirs.close()
        return held, sent, closing, wire.is_closing()

    held, sent, closing, is_closing = asyncio.run(body())
    assert held == b""
    assert sent == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    assert closing == b"last words" and is_closing


def test_stdio_answers_into_a_pipe_with_room_without_a_pass_of_the_loop() -> None:
    from memoryport.mcp.stdio import LoopWire

    read_end, write_end = os.pipe()
    try:
        wire = LoopWire(read_end, write_end)
        step = wire.write('{"jsonrpc": "2.0", "id": 1, "result": {}}\n')
        with pytest.raises(StopIteration):  # done at once: no suspension to watch the pipe
            step.send(None)
        assert os.read(read_end, 1024) == b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n'
    finally:
        os.close(read_end)
        os.close(write_end)


def test_stdio_answer_into_a_full_pipe_waits_for_room_and_arrives_whole() -> None:
    import fcntl

    from memoryport.mcp.stdio import LoopWire

    read_end, write_end = os.pipe()
    flags = fcntl.fcntl(write_end, fcntl.F_GETFL)
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    filled = 0
    with contextlib.suppress(BlockingIOError):
        while True:  # fill the pipe: a write would block now
            filled += os.write(write_end, b"x" * 4096)
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags)
    answer = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"text": "y" * 20_000}}) + "\n"

    async def body() -> bytes:
        wire = LoopWire(read_end, write_end)
        received = bytearray()

        async def drain() -> None:
            while len(received) < filled + len(answer):
                await anyio.wait_readable(read_end)
                received.extend(os.read(read_end, 65536))

        async with anyio.create_task_group() as group:
            group.start_soon(wire.write, answer)
            group.start_soon(drain)
        return bytes(received)

    try:
        received = anyio.run(body)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert received == b"x" * filled + answer.encode()


def test_stdio_from_a_regular_file_is_served_too(tmp_path: Path) -> None:
    # a regular file cannot be polled by the event loop: the SDK's threaded wire takes over
    from memoryport.mcp.stdio import pollable

    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                    "params": {"protocolVersion": "2025-11-25",
                                               "capabilities": {},
                                               "clientInfo": {"name": "file", "version": "0"}}})
                        + "\n")
    with requests.open("rb") as stdin:
        assert not pollable(stdin.fileno(), 1)
        done = subprocess.run([*CLI, "--home", str(tmp_path / "home"), "serve"], stdin=stdin,
                              capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout.decode().splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "memoryport"
    read_end, write_end = os.pipe()
    try:
        assert pollable(read_end, 1) and pollable(write_end, 2)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_stdio_sigterm_stops_cleanly_and_ends_the_session(tmp_path: Path) -> None:
    import signal

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "remember_turn", "arguments": {"user": "hi there", "assistant": "hello"}}},
    ]
    proc = subprocess.Popen([*CLI, "--home", str(tmp_path), "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("\n".join(json.dumps(line) for line in lines) + "\n")
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()
    assert json.loads(replies[1]["result"]["content"][0]["text"])["success"] is True
    with memoryport.open(tmp_path) as memory:
        rows = memory.sessions.list_sessions()
        assert [row.session.end_reason for row in rows] == ["close"]
        assert [m["content"] for m in memory.session_messages(rows[0].session.id)] == [
            "hi there", "hello"]
