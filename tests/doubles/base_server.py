"""A loopback HTTP test double: routes, a record of every request, and injected faults.

Provider doubles (RetainDB, Supermemory, Hindsight, OpenViking) subclass
:class:`DoubleServer`, register routes with :meth:`DoubleServer.route` and keep their
state in plain Python structures. Every request is recorded (method, path, query, headers,
JSON body) before it is answered, so a test can assert exactly what reached the backend.

Faults, for the resilience tests (``server.fault = Fault(...)``, or ``server.faulty(...)``
as a context manager): ``slow`` (sleep ``delay`` seconds, then answer normally),
``status`` (answer ``code`` with a JSON error body), ``malformed`` (200 with a body that
is not JSON), ``drop`` (close the connection without answering). ``times`` limits how
many requests the fault hits (``None``: until cleared). Faulted requests are recorded
with ``faulted=True`` and never change the double's state.

The server binds ``127.0.0.1``; :meth:`stop` frees the port and :meth:`start` binds the
same port again, which is how a test restarts "the backend" under a running client.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["DoubleServer", "Fault", "Request", "Response"]


@dataclass
class Request:
    """One recorded request."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    raw: bytes
    faulted: bool = False
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class Response:
    """What a route answers: a status, a JSON-ready body (or raw bytes) and headers."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    content_type: str = "application/json"


@dataclass
class Fault:
    """An injected failure (see the module docstring)."""

    kind: str  # slow | status | malformed | drop
    code: int = 503
    delay: float = 0.0
    times: int | None = None


Handler = Callable[[Request], Response | Any]


class DoubleServer:
    """A threaded HTTP server on 127.0.0.1 with routes, a request log and faults."""

    name = "double"

    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.requests: list[Request] = []
        self.fault: Fault | None = None
        self.port = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # ------------------------------------------------------------------ routes
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Answer ``method`` requests whose path matches ``pattern`` (``{name}`` segments
        become ``request.params``)."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self.routes.append((method.upper(), re.compile(f"^{regex}$"), handler))

    def received(self, method: str | None = None, path: str | None = None) -> list[Request]:
        """Recorded requests that were answered normally (not faulted), optionally filtered
        by method and exact path or ``re`` pattern."""
        with self._lock:
            items = [r for r in self.requests if not r.faulted]
        if method:
            items = [r for r in items if r.method == method.upper()]
        if path:
            items = [r for r in items if r.path == path or re.fullmatch(path, r.path)]
        return items

    @contextmanager
    def faulty(self, kind: str, **kwargs: Any) -> Iterator[Fault]:
        """Inject a fault for the duration of a ``with`` block."""
        self.fault = Fault(kind, **kwargs)
        try:
            yield self.fault
        finally:
            self.fault = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DoubleServer:
        """Bind (the previous port after a :meth:`stop`) and serve on a daemon thread."""
        server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler_class())
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=f"{self.name}-double",
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (the state is kept, like a restarted backend's
        database)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            connections, self._connections = set(self._connections), set()
        for conn in connections:  # kept-alive client connections die with the backend
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> DoubleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ dispatch
    def _take_fault(self) -> Fault | None:
        with self._lock:
            fault = self.fault
            if fault is None:
                return None
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self.fault = None
            return fault

    def dispatch(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[
            Response | None, Request]:
        """Record the request and compute its answer (``None``: drop the connection)."""
        parts = urlsplit(target)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Request(method, parts.path, parse_qs(parts.query), headers, body, raw)
        fault = self._take_fault()
        request.faulted = fault is not None and fault.kind != "slow"
        with self._lock:
            self.requests.append(request)
        if fault is not None:
            if fault.kind == "slow":
                time.sleep(fault.delay)
            elif fault.kind == "drop":
                return None, request
            elif fault.kind == "malformed":
                return Response(200, raw=b'{"results": [unterminated'), request
            else:
                return Response(fault.code, {"error": f"injected {fault.code}"}), request
        return self._answer(request), request

    def _answer(self, request: Request) -> Response:
        for method, regex, handler in self.routes:
            match = regex.match(request.path)
            if method == request.method and match:
                request.params = match.groupdict()
                try:
                    result = handler(request)
                except KeyError as exc:
                    return Response(404, {"error": f"not found: {exc}"})
                except (TypeError, ValueError) as exc:
                    return Response(422, {"error": f"invalid request: {exc}"})
                return result if isinstance(result, Response) else Response(200, result)
        return Response(404, {"error": f"no route for {request.method} {request.path}"})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with double._lock:
                    double._connections.add(self.connection)

            def finish(self) -> None:
                with double._lock:
                    double._connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def handle(self) -> None:
                try:
                    super().handle()
                except OSError:
                    pass  # the client gave up (timeout) or the double dropped it

            def _serve(self) -> None:
                if double._server is None:  # stopped: a kept-alive connection gets nothing
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                response, _ = double.dispatch(self.command, self.path, headers, raw)
                if response is None:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                data = response.raw if response.raw is not None else json.dumps(
                    response.body).encode()
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        return _Handler


def write_home(home: Any, provider: str, section: dict[str, Any],
               env: dict[str, str] | None = None, **memory: Any) -> Any:
    """Create ``home`` with a config.yaml selecting ``provider`` (its ``section``, and
    ``memory`` settings such as ``prefetch_deadline_s``) and a private ``.env``."""
    import os

    import yaml

    home.mkdir(parents=True, exist_ok=True)
    data = {"memory": {"provider": provider, "nudge_interval": 0, **memory}, provider: section}
    (home / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    if env:
        path = home / ".env"
        path.write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
        os.chmod(path, 0o600)
    return home
