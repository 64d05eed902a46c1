"""stdio for the MCP server on the event loop itself, with no thread hop per message.

The SDK's ``stdio_server`` reads each line and writes each answer through
``anyio.wrap_file``: three worker-thread round trips per request (readline, write, flush),
which on a busy machine cost more than the rest of a small tool call. Here the wire is read
and written straight from the event loop: ``anyio.wait_readable``/``wait_writable`` on the
descriptors, then one ``os.read``/``os.write`` that cannot block (a read of what is there;
a write of at most ``PIPE_BUF`` bytes into a pipe the kernel reports writable).

Like the SDK, while serving, fd 0 points at the null device and fd 1 at stderr, so stray
output from a handler or a child process never corrupts the JSON-RPC stream; both are
restored on exit. Framing is the SDK's: one JSON-RPC message per line, UTF-8.

The SDK's session loop reads and writes the wire itself, with no task in between: each
read parses the next line (:class:`WireReader`) and each answer is written by the task that
sends it (:class:`WireWriter`, one answer at a time). The SDK's ``stdio_server`` runs a
reader task and a writer task joined to the session by two memory streams: two more task
switches per request.

On a 2026-07-28 connection a plain ``tools/call`` is answered beside the session by
:class:`DirectLines` (the same bytes, without the SDK's era relay, dispatcher and
middleware); everything else is the session's.

The SDK's transport is used instead where the loop cannot poll the wire: on Windows, and
when stdin or stdout is a regular file (``memoryport serve < requests.jsonl``).
"""

from __future__ import annotations

import json
import logging
import os
import select
import selectors
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.abc
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    JSONRPCRequest,
    jsonrpc_message_adapter,
)

from memoryport.mcp.server import DirectCall, MemoryServer, memory_server_of, responsive

__all__ = [
    "DirectLines",
    "LoopWire",
    "WireReader",
    "WireWriter",
    "claimed_stdio",
    "pollable",
    "serve_stdio",
    "serve_wire",
]

log = logging.getLogger(__name__)

_CHUNK = getattr(select, "PIPE_BUF", 512)
_READ = 1 << 16


class LoopWire:
    """The two ends of a stdio wire read and written on the event loop.

    Quacks like the two ``anyio.AsyncFile`` objects ``stdio_server`` takes: iterating it
    yields the input's lines (``"\\n"`` kept, invalid UTF-8 replaced), ``write``/``flush``
    send an answer.
    """

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self._poll = select.poll()
        self._poll.register(out_fd, select.POLLOUT)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = bytearray()
        while True:
            await anyio.wait_readable(self.in_fd)
            chunk = os.read(self.in_fd, _READ)
            if not chunk:
                if pending:
                    yield pending.decode("utf-8", errors="replace")
                return
            start = len(pending)
            pending += chunk
            cut = pending.rfind(b"\n", start)
            if cut < 0:
                continue
            complete, pending = bytes(pending[: cut + 1]), pending[cut + 1 :]
            for line in complete.splitlines(keepends=True):
                yield line.decode("utf-8", errors="replace")

    async def write(self, text: str) -> None:
        """Send ``text`` (UTF-8), ``PIPE_BUF`` bytes at a time once the wire can take them.

        The wire is asked first with a poll that does not wait (one system call): a pipe
        with room takes the bytes at once, with no pass of the event loop to watch the
        descriptor; only a full pipe is waited for on the loop."""
        data = memoryview(text.encode("utf-8"))
        while data:
            if not self._writable():
                await anyio.wait_writable(self.out_fd)
            written = os.write(self.out_fd, data[:_CHUNK])
            data = data[written:]

    def _writable(self) -> bool:
        """True when a write of ``PIPE_BUF`` bytes would not block now (polled, no wait)."""
        return bool(self._poll.poll(0))

    async def flush(self) -> None:
        """Nothing is buffered: ``write`` returns once the kernel holds every byte."""


class WireReader:
    """The session's read side: each :meth:`receive` parses the wire's next line (a line
    that is not a JSON-RPC message is handed on as its exception, as the SDK's reader does,
    and the session answers it with a protocol error). With ``direct``, the plain
    ``tools/call`` requests it takes are answered there and never reach the session."""

    def __init__(self, wire: LoopWire, direct: DirectLines | None = None) -> None:
        self._lines = wire.__aiter__()
        self._direct = direct

    async def receive(self) -> SessionMessage | Exception:
        """The next message for the session; ``anyio.EndOfStream`` at the end of the
        input."""
        while True:
            try:
                line = await anext(self._lines)
            except StopAsyncIteration:
                raise anyio.EndOfStream from None
            try:
                message = SessionMessage(
                    jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:  # what the SDK's reader passes on: any parse failure
                return exc
            if self._direct is None or not self._direct.take(message.message):
                return message

    def __aiter__(self) -> WireReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Nothing to release: the wire belongs to :func:`claimed_stdio`."""

    async def __aenter__(self) -> WireReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class DirectLines:
    """Plain ``tools/call`` requests of a 2026-07-28 (per-request envelope) connection
    answered beside the SDK's session, as :class:`memoryport.mcp.http.DirectCalls` does
    over HTTP: the SDK runs each request through its era relay, dispatcher, connection
    and middleware before this server's middleware answers it (about 0.4-0.5 ms of
    server CPU per call, measured).

    The connection's era is decided as the SDK decides it, by the client's first request
    (which always goes to the SDK): modern when it is not ``initialize`` and carries the
    envelope. Later ``tools/call`` requests whose envelope passes the SDK's own
    validation ladder and which :meth:`MemoryServer.prepare_direct` accepts are answered
    on a task of ``tasks`` (reading goes on meanwhile); anything else, every error and
    every request of a 2025-era (``initialize``) connection goes to the SDK's session.
    """

    def __init__(self, server: MemoryServer, writer: WireWriter,
                 tasks: anyio.abc.TaskGroup) -> None:
        self._server = server
        self._writer = writer
        self._tasks = tasks
        self._modern: bool | None = None  # the era: None until the first request

    def take(self, message: Any) -> bool:
        """True when this request is answered here (it must not reach the session)."""
        if not isinstance(message, JSONRPCRequest):
            return False
        params = message.params
        if self._modern is None:
            self._modern = message.method != "initialize" and _enveloped(params)
            return False
        if not self._modern or message.method != "tools/call" or not _enveloped(params):
            return False
        route = classify_inbound_request({"method": message.method, "params": params})
        if isinstance(route, InboundLadderRejection) or params is None:
            return False
        call = self._server.prepare_direct(route.protocol_version, {}, params)
        if call is None:
            return False
        self._tasks.start_soon(self._answer, message.id, call)
        return True

    async def _answer(self, request_id: Any, call: DirectCall) -> None:
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            answer["result"] = await self._server.answer_direct(call)
        except MCPError as exc:
            answer["error"] = exc.error.model_dump(by_alias=True, exclude_none=True)
        except Exception:  # never seen: tool errors are results; this keeps serving
            log.exception("direct answer to request %r failed", request_id)
            answer["error"] = {"code": INTERNAL_ERROR, "message": "Internal error"}
        line = json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            await self._writer.send_line(line)
        except OSError as exc:  # the client is gone: the write itself was whole
            log.debug("could not send the answer to request %r: %s", request_id, exc)


def _enveloped(params: Any) -> bool:
    """Whether ``params._meta`` carries the 2026-07-28 envelope's protocol-version key
    (the SDK's test for a modern request)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


class WireWriter:
    """The session's write side: ``send`` writes one message as a line, one message at a
    time (concurrent answers never interleave)."""

    def __init__(self, wire: LoopWire) -> None:
        self._wire = wire
        self._lock = anyio.Lock()

    async def send(self, message: SessionMessage, /) -> None:
        """Write ``message`` (the SDK's framing: its JSON, then a newline)."""
        await self.send_line(message.message.model_dump_json(by_alias=True,
                                                             exclude_unset=True) + "\n")

    async def send_line(self, text: str) -> None:
        """Write one JSON-RPC message already framed as a line."""
        async with self._lock:
            await self._wire.write(text)

    async def aclose(self) -> None:
        """Nothing to release: the wire belongs to :func:`claimed_stdio`."""

    async def __aenter__(self) -> WireWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def _private(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextmanager
def claimed_stdio() -> Iterator[LoopWire]:
    """Move the wire to private descriptors and point fd 0 at the null device and fd 1 at
    stderr while serving; put both back afterwards."""
    sys.stdout.flush()
    in_fd, out_fd = _private(0), _private(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield LoopWire(in_fd, out_fd)
    finally:
        sys.stdout.flush()
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        os.close(in_fd)
        os.close(out_fd)


def pollable(fd: int, events: int) -> bool:
    """True when the event loop's selector can watch ``fd`` (a pipe, socket or terminal;
    not a regular file, nor a closed descriptor)."""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, events)
    except (OSError, ValueError):
        return False
    return True


async def serve_stdio(mcp: Any) -> None:
    """Serve ``mcp`` (an ``MCPServer``) over this process's stdin/stdout until EOF, with
    the interpreter made :func:`~memoryport.mcp.server.responsive`."""
    if sys.platform == "win32" or not (  # the asyncio loop cannot poll these: the SDK's way
        pollable(0, selectors.EVENT_READ) and pollable(1, selectors.EVENT_WRITE)
    ):
        with responsive():
            await mcp.run_stdio_async()
        return
    with claimed_stdio() as wire, responsive():
        await serve_wire(mcp, wire)


async def serve_wire(mcp: Any, wire: LoopWire) -> None:
    """Serve ``mcp`` over ``wire`` until its input ends; plain ``tools/call`` requests of
    a :class:`~memoryport.mcp.server.MemoryServer`'s 2026-07-28 connection are answered
    by :class:`DirectLines`, which finish before this returns."""
    lowlevel = mcp._lowlevel_server
    server = memory_server_of(mcp)
    writer = WireWriter(wire)
    async with anyio.create_task_group() as tasks:
        direct = DirectLines(server, writer, tasks) if server is not None else None
        await lowlevel.run(WireReader(wire, direct), writer,
                           lowlevel.create_initialization_options())
