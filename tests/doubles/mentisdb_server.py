"""A loopback test double of the MentisDB daemon (``/health``, ``/v1/search``,
``/v1/thoughts``), plus the fault-injecting HTTP server base the Honcho double shares.

MentisDB is a Rust daemon (``cargo install mentisdb``) that cannot be installed here, so the
provider is tested against this double: it stores thoughts per chain key, ranks a search by
shared words, records every request it served, and can be told to answer slowly, with a
5xx, with malformed JSON, or to drop the connection. ``restart()`` rebinds the same port
and keeps what was stored, like a daemon coming back with its data.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FAULTS", "FaultyServer", "MentisDBDouble", "Request"]

FAULTS = ("", "slow", "5xx", "malformed", "drop")
"""Fault modes: none, answer (normally) after ``slow_s``, HTTP 503, 200 with a broken body,
hang up."""


@dataclass
class Request:
    """One request the double served (faulted requests are listed in ``faulted``)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FaultyServer:
    """A threaded HTTP server on 127.0.0.1 that routes JSON requests to ``handle``."""

    def __init__(self) -> None:
        self.fault = ""
        self.slow_s = 2.0
        self.requests: list[Request] = []
        self.faulted: list[Request] = []
        self.lock = threading.Lock()
        self.port = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def handle(self, method: str, path: str, query: str, body: Any) -> tuple[int, Any]:
        """Answer one request: ``(status, JSON-ready body)``. Subclasses implement it."""
        return 404, {"detail": f"no route {method} {path}"}

    def start(self) -> FaultyServer:
        """Bind (the same port again after a restart) and serve on a thread."""
        handler = _handler_for(self)
        server = _Server(("127.0.0.1", self.port), handler)
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (stored data is kept)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            server.hang_up_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def restart(self) -> None:
        """Stop, then serve again on the same port."""
        self.stop()
        self.start()

    def served(self, method: str, path_prefix: str) -> list[Request]:
        """Requests served (not faulted) with this method and path prefix."""
        with self.lock:
            return [r for r in self.requests
                    if r.method == method and r.path.startswith(path_prefix)]


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def hang_up_all(self) -> None:
        """Close every kept-alive connection, as a daemon that exits does."""
        with self.connections_lock:
            connections = list(self.open_connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up mid-request (the faults do that on purpose) is not news."""


def _handler_for(double: FaultyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms stalls

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _dispatch(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            path, _, query = self.path.partition("?")
            record = Request(method, path, body, {k.lower(): v for k, v in self.headers.items()})
            fault = double.fault
            if fault == "slow":
                time.sleep(double.slow_s)  # then answer normally
            elif fault:
                with double.lock:
                    double.faulted.append(record)
                self._fault(fault)
                return
            status, payload = double.handle(method, path, query, body)
            with double.lock:
                double.requests.append(record)
            self._send(status, json.dumps(payload).encode())

        def _fault(self, fault: str) -> None:
            if fault == "5xx":
                self._send(503, b'{"detail": "unavailable"}')
            elif fault == "malformed":
                self._send(200, b'{"thoughts": [')
            else:  # drop
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def _send(self, status: int, data: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_PUT(self) -> None:
            self._dispatch("PUT")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

    return Handler


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


class MentisDBDouble(FaultyServer):
    """MentisDB's HTTP surface: ``GET /health``, ``POST /v1/search``, ``POST /v1/thoughts``."""

    def __init__(self) -> None:
        super().__init__()
        self.thoughts: list[dict[str, Any]] = []

    def handle(self, method: str, path: str, query: str, body: Any) -> tuple[int, Any]:
        """Store thoughts; search them by shared words within the chain."""
        if method == "GET" and path == "/health":
            return 200, {"status": "ok", "thoughts": len(self.thoughts)}
        if not isinstance(body, dict):
            return 422, {"detail": "a JSON object is required"}
        if method == "POST" and path == "/v1/thoughts":
            if not isinstance(body.get("content"), str) or not body.get("chain_key"):
                return 422, {"detail": "content and chain_key are required"}
            with self.lock:
                thought = {**body, "index": len(self.thoughts)}
                self.thoughts.append(thought)
            return 200, {"index": thought["index"], "hash": f"h{thought['index']}"}
        if method == "POST" and path == "/v1/search":
            wanted = _words(str(body.get("query", "")))
            with self.lock:
                chain = [t for t in self.thoughts if t["chain_key"] == body.get("chain_key")]
            scored = [(len(wanted & _words(t["content"])), t) for t in chain]
            hits = [t for score, t in sorted(scored, key=lambda p: -p[0]) if score]
            return 200, {"thoughts": hits[: int(body.get("limit") or 8)]}
        return 404, {"detail": f"no route {method} {path}"}
