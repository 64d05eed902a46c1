"""A scripted OpenAI-compatible chat-completions server for tests (stdlib only).

It listens on ``127.0.0.1`` (port 0), answers ``POST /v1/chat/completions`` in JSON or, for
``"stream": true``, as server-sent events (``choices[0].delta`` content and tool-call deltas,
then ``data: [DONE]``), and records every request body so a test can assert exactly what
the model was sent::

    with FakeOpenAI([Reply(content="hi")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.requests[0]["messages"][-1]["role"] == "user"

Replies come from ``rules`` first (``(predicate(body), reply)``, the first match wins; a
rule fires every time it matches), then from the ``script`` in order, then ``default``.
A reply may also be a function of the request body.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAI", "Reply", "ToolCall", "last_role", "mentions"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the fake model makes."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = ""

    def arguments_json(self) -> str:
        """The arguments as the JSON string the API carries."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted model answer.

    ``chunks`` fixes how streamed content is split (default: 7-character pieces), so a
    test can split a ``<memory-context>`` tag across chunk boundaries.
    """

    content: str = ""
    tool_calls: Sequence[ToolCall] = ()
    chunks: Sequence[str] | None = None
    status: int = 200  # not 200: answer this HTTP status with ``content`` as the error
    delay: float = 0.0  # seconds to wait before answering (a client timeout test)

    def pieces(self) -> list[str]:
        """The streamed content pieces (their concatenation is ``content``)."""
        if self.chunks is not None:
            assert "".join(self.chunks) == self.content, "chunks must join to content"
            return list(self.chunks)
        return [self.content[i : i + 7] for i in range(0, len(self.content), 7)]


Responder = Reply | Callable[[dict[str, Any]], Reply]
Predicate = Callable[[dict[str, Any]], bool]


def mentions(text: str) -> Predicate:
    """A rule predicate: some message of the request contains ``text``."""

    def match(body: dict[str, Any]) -> bool:
        return any(text in json.dumps(m.get("content")) for m in body.get("messages", []))

    return match


def last_role(role: str, also: Predicate | None = None) -> Predicate:
    """A rule predicate: the last message has ``role`` (and ``also`` holds, if given)."""

    def match(body: dict[str, Any]) -> bool:
        messages = body.get("messages") or [{}]
        return messages[-1].get("role") == role and (also is None or also(body))

    return match


class FakeOpenAI:
    """The server; use it as a context manager (``start``/``stop`` otherwise)."""

    def __init__(
        self,
        script: Sequence[Responder] = (),
        *,
        rules: Sequence[tuple[Predicate, Responder]] = (),
        default: Responder = Reply(content="OK"),
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.api_keys: list[str] = []
        self.script: list[Responder] = list(script)
        self.rules: list[tuple[Predicate, Responder]] = list(rules)
        self.default = default
        self._lock = threading.Lock()
        self._counter = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: pass it as the client's ``base_url``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAI:
        """Start serving on a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def chat_requests(self, *, containing: str | None = None) -> list[dict[str, Any]]:
        """Recorded request bodies (optionally only those mentioning ``containing``)."""
        with self._lock:
            bodies = list(self.requests)
        if containing is None:
            return bodies
        return [b for b in bodies if mentions(containing)(b)]

    def respond(self, body: dict[str, Any]) -> Reply:
        """Record ``body`` and choose the reply for it."""
        with self._lock:
            self.requests.append(body)
            self._counter += 1
            chosen: Responder | None = None
            for predicate, reply in self.rules:
                if predicate(body):
                    chosen = reply
                    break
            if chosen is None:
                chosen = self.script.pop(0) if self.script else self.default
        return chosen(body) if callable(chosen) else chosen

    def next_id(self) -> int:
        """A fresh number for response and tool-call ids."""
        with self._lock:
            self._counter += 1
            return self._counter


def _tool_calls_json(reply: Reply, server: FakeOpenAI) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or f"call_{server.next_id()}",
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()},
        }
        for call in reply.tool_calls
    ]


def completion_json(reply: Reply, model: str, server: FakeOpenAI) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls_json(reply, server)
    return {
        "id": f"chatcmpl-{server.next_id()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def stream_chunks(reply: Reply, model: str, server: FakeOpenAI) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed reply."""
    base = {"id": f"chatcmpl-{server.next_id()}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in reply.pieces():
        yield chunk({"content": piece})
    for index, call in enumerate(_tool_calls_json(reply, server)):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"],
                                                  "arguments": arguments[:half]}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            auth = self.headers.get("Authorization") or ""
            server.api_keys.append(auth.removeprefix("Bearer "))
            reply = server.respond(body)
            model = str(body.get("model", "fake"))
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status != 200:
                self._send_json(reply.status, {"error": {"message": reply.content}})
            elif body.get("stream"):
                self._send_stream(stream_chunks(reply, model, server))
            else:
                self._send_json(200, completion_json(reply, model, server))

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timed out) first

        def _send_stream(self, chunks: Iterator[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for item in chunks:
                self.wfile.write(f"data: {json.dumps(item)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler
