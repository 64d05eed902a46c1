"""MCP server round trips: `memoryport serve` over stdio and streamable HTTP on loopback.

Measured end to end with the real `mcp` client against a real server subprocess, beside
the same calls made in process (`Memory.call_tool`) and through the server in process
(`Client(server, mode="legacy")`: JSON-RPC over memory streams, no OS transport).
Streamable HTTP is measured three ways, each on one keep-alive connection for its POSTs:
the SDK's client on the SDK's own `httpx2` client (`create_mcp_http_client`), the SDK's
client on memoryport's `mcp_http_client` (`memoryport.mcp.httpclient.LeanTransport`: the
same `Client`, session and streamable-HTTP transport, a lean HTTP/1.1 layer under them),
and no client library at all (JSON-RPC on `http.client`: what the server alone costs).
The issue's goal figure is the SDK client's.

- `memory` add round trip (p50/p95; each add is followed by an untimed remove so the
  curated budget never fills; each measure writes as its own user, because a curated
  write's cost grows with the file's revision history);
- `session_search` discover round trip over a session store of --messages messages
  (built first through the bulk path, `import_jsonl`: one transaction);
- the first call of a new HTTP client (the server opens that client's `Memory`: config,
  plugin discovery, stores, session), p50 over --new-clients connections;
- 16 concurrent HTTP clients (one user each) x 200 mixed calls (remember_turn, memory
  add/remove, USER.md reads, session_search for another client's secret): errors,
  cross-client leaks (any answer holding another client's secret), throughput; run with
  the SDK's client on its `httpx2` client, then on `mcp_http_client`.

Where a `memory` add's time goes (medians, ms), from the server's own timings (each timed
add asks for them with `_meta["memoryport/timing"]`) and, in process, the curated write's
syncs (`os.fsync`/`os.fdatasync` timed while the add runs):

- `fsync`: the curated write's syncs (one: the history line, the write's commit point; the
  first write of a file also syncs its directory);
- `core`: the rest of `Memory.call_tool` (pause check, manager lane, curated write,
  provider mirror, audit row);
- `hop`: the handler's worker-thread hop and result shaping (handler_ms - tool_ms);
- `mcp_server`: this server's checks and result shaping around the handler (server -
  handler; a plain `tools/call` is answered by the server's middleware, not the SDK's
  tool manager, and over HTTP and stdio before the SDK's session machinery: `DirectCalls`,
  `DirectLines`, see docs/mcp.md);
- `client+transport`: the rest of the round trip (round trip - server_ms); in process
  (memory streams) that is the client library and JSON-RPC dispatch alone, so the extra
  over stdio/HTTP is the OS transport.

Goals (issue 14): `memory` add p50 < 5 ms; `session_search` discover at 100k messages
p95 < 40 ms; 0 errors; 0 leaks. Prints a table and writes benchmarks/results/bench_mcp.json.

    python benchmarks/bench_mcp.py                       # 100k messages, 200 rounds
    python benchmarks/bench_mcp.py --messages 20000 --rounds 100 --clients 8 --calls 50
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _report import percentile, print_table, write_json
from bench_sessions import corpus
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import memoryport
from memoryport.mcp import ServeOptions, build_server
from memoryport.mcp.httpclient import mcp_http_client
from memoryport.mcp.server import TIMING_KEY

CLI = [sys.executable, "-c", "from memoryport.cli import main; main()"]
META_USER = "memoryport/user_id"
SEARCH_QUERY = "quetzalcoatl"  # in one message of every 10,000 (bench_sessions.corpus)


def export_lines(messages: int) -> list[str]:
    """``bench_sessions.corpus`` as a session export (the format ``import_jsonl`` reads)."""
    sessions, rows = [], []
    for session, batch in corpus(messages):
        sid = session["session_id"]
        sessions.append({"id": sid, "source": "cli", "started_at": session["started_at"],
                         "last_active_at": batch[-1]["timestamp"],
                         "message_count": len(batch)})
        rows.extend({"session_id": sid, "id": len(rows) + n + 1, **m} for n, m in enumerate(batch))
    header = {"format": "memoryport.sessions", "version": 2, "sessions": len(sessions),
              "messages": len(rows)}
    return [json.dumps(header), *(json.dumps({"session": s}) for s in sessions),
            *(json.dumps({"message": m}) for m in rows)]


def build_store(home: Path, messages: int) -> float:
    """Fill ``home``'s session store through the bulk path (``import_jsonl``: one
    transaction); seconds taken by the import."""
    lines = export_lines(messages)
    with memoryport.open(home, load_provider=False) as memory:
        started = time.perf_counter()
        report = memory.sessions.import_jsonl(lines)
        elapsed = time.perf_counter() - started
    if report.messages_imported != messages:
        raise SystemExit(f"the import stored {report.messages_imported} of {messages} messages")
    return elapsed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_http(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([*CLI, "--home", str(home), "serve", "--http", "--port", str(port),
                             "--max-clients", "256"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the HTTP server did not start")


@asynccontextmanager
async def http_client(url: str, *, lean: bool = False) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP: on the SDK's own ``httpx2`` client, or with
    ``lean`` on memoryport's ``mcp_http_client`` (``LeanTransport``). Either way every POST
    goes over one keep-alive connection (the SDK's GET stream holds a second one)."""
    factory = mcp_http_client if lean else create_mcp_http_client
    async with (
        factory() as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


class RawClient:
    """JSON-RPC over one keep-alive ``http.client`` connection, no MCP client library: what
    the server costs, for comparison with the SDK client's rows."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        self.headers = {"content-type": "application/json",
                        "accept": "application/json, text/event-stream"}
        self.ids = 0
        head, _ = self._post({"method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench-raw", "version": "0"}}})
        self.headers["mcp-session-id"] = head.getheader("mcp-session-id") or ""
        self.headers["mcp-protocol-version"] = "2025-11-25"
        self._post({"method": "notifications/initialized"}, notify=True)

    def _post(self, message: dict[str, Any], notify: bool = False
              ) -> tuple[http.client.HTTPResponse, dict[str, Any]]:
        if not notify:
            self.ids += 1
            message = {**message, "id": self.ids}
        self.conn.request("POST", self.path, json.dumps({"jsonrpc": "2.0", **message}),
                          self.headers)
        response = self.conn.getresponse()
        body = response.read()
        return response, json.loads(body) if body else {}

    def call_tool(self, name: str, arguments: dict[str, Any],
                  meta: dict[str, Any]) -> dict[str, Any]:
        """The ``tools/call`` result (SystemExit on an error)."""
        _, answer = self._post({"method": "tools/call", "params": {
            "name": name, "arguments": arguments, "_meta": meta}})
        result: dict[str, Any] = answer.get("result") or {}
        if "error" in answer or result.get("isError"):
            raise SystemExit(f"a raw {name} call failed: {answer}")
        return result

    def close(self) -> None:
        self.conn.close()


def raw_round_trips(client: RawClient, rounds: int, user: str,
                    splits: list[dict[str, float]], *, warm: bool = True
                    ) -> dict[str, list[float]]:
    """``memory`` add and ``session_search`` samples over :class:`RawClient` (as
    :func:`round_trips`: an untimed remove after each add, ``warm``: five untimed calls
    of each first)."""
    meta = {META_USER: user}
    timed_meta = {**meta, TIMING_KEY: True}
    adds: list[float] = []
    for n in range(-5 if warm else 0, rounds):
        started = time.perf_counter()
        result = client.call_tool("memory", {"action": "add", "target": "user",
                                             "content": f"raw note {n}"}, timed_meta)
        elapsed = time.perf_counter() - started
        if n >= 0:
            adds.append(elapsed)
            splits.append({"round_trip_ms": elapsed * 1e3, **result["_meta"][TIMING_KEY]})
        client.call_tool("memory", {"action": "remove", "target": "user",
                                    "old_text": f"raw note {n}"}, meta)
    searches = []
    for n in range(-5 if warm else 0, rounds):
        started = time.perf_counter()
        client.call_tool("session_search", {"query": SEARCH_QUERY}, meta)
        if n >= 0:
            searches.append(time.perf_counter() - started)
    return {"memory_add": adds, "session_search": searches}


async def http_round_trips(url: str, rounds: int, splits: dict[str, list[dict[str, float]]],
                           block: int = 20) -> dict[str, dict[str, list[float]]]:
    """The three HTTP clients measured in turns of ``block`` rounds each (SDK client on its
    httpx2 client, on ``mcp_http_client``, raw JSON-RPC), so a change in the machine's
    load during the run falls on all three alike; one keep-alive connection each."""
    names = ("http", "http_lean", "http_raw")
    samples: dict[str, dict[str, list[float]]] = {
        n: {"memory_add": [], "session_search": []} for n in names}
    raw = RawClient(url)
    try:
        async with http_client(url) as sdk, http_client(url, lean=True) as lean:
            for start in range(0, rounds, block):
                size = min(block, rounds - start)
                for name in names:
                    user, warm = f"bench-{name.replace('_', '-')}", start == 0
                    if name == "http_raw":
                        got = raw_round_trips(raw, size, user, splits[name], warm=warm)
                    else:
                        got = await round_trips(sdk if name == "http" else lean, size, user,
                                                splits[name], warm=warm)
                    for key, values in got.items():
                        samples[name][key] += values
    finally:
        raw.close()
    return samples


async def timed(call: Callable[[], Awaitable[Any]], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        result = await call()
        samples.append(time.perf_counter() - started)
        if result.is_error:
            raise SystemExit(f"a timed call failed: {result.content[0].text}")
    return samples


async def round_trips(
    client: Client, rounds: int, user: str, split: list[dict[str, float]] | None = None,
    *, warm: bool = True,
) -> dict[str, list[float]]:
    """``memory`` add (to ``user``'s USER.md) and ``session_search`` discover samples;
    each add's round trip and server timings are appended to ``split`` (``warm``: five
    untimed calls of each first).

    Each measure writes as its own user: a curated write's cost grows with the file's
    revision history, so every transport starts from an empty one.
    """
    meta = {META_USER: user}
    timed_meta = {**meta, TIMING_KEY: True}
    splits = split if split is not None else []

    async def add_remove(n: int) -> float:
        started = time.perf_counter()
        result = await client.call_tool(
            "memory", {"action": "add", "target": "user", "content": f"bench note {n}"},
            meta=timed_meta,
        )
        elapsed = time.perf_counter() - started
        if result.is_error:
            raise SystemExit(f"memory add failed: {result.content[0].text}")
        figures = (result.meta or {}).get(TIMING_KEY) or {}
        splits.append({"round_trip_ms": elapsed * 1e3, **figures})
        await client.call_tool("memory", {"action": "remove", "target": "user",
                                          "old_text": f"bench note {n}"}, meta=meta)
        return elapsed  # the add alone (the remove is untimed)

    async def search() -> Any:
        return await client.call_tool("session_search", {"query": SEARCH_QUERY})

    if warm:
        for n in range(5):  # warm caches and the connection
            await add_remove(-n - 1)
        del splits[:]
        await timed(search, 5)
    add_samples = [await add_remove(n) for n in range(rounds)]
    found = json.loads((await search()).content[0].text)
    if not found.get("count"):
        raise SystemExit(f"session_search found nothing for {SEARCH_QUERY!r}: {found}")
    return {"memory_add": add_samples, "session_search": await timed(search, rounds)}


async def one_client(url: str, index: int, calls: int, secrets: list[str],
                     lean: bool = False) -> dict[str, int]:
    """One client's mixed calls; counts errors and answers that hold another's secret."""
    mine = secrets[index]
    others = [s for s in secrets if s != mine]
    meta = {META_USER: f"bench-user{'-lean' if lean else ''}-{index}"}
    errors = leaks = 0
    async with http_client(url, lean=lean) as client:
        for k in range(calls):
            step = k % 5
            try:
                if step == 0:
                    got: Any = await client.call_tool("memory", {
                        "action": "add", "target": "user", "content": f"{mine} fact {k}"},
                        meta=meta)
                elif step == 1:
                    got = await client.read_resource("memory://USER.md", meta=meta)
                elif step == 2:
                    got = await client.call_tool(
                        "session_search", {"query": others[k % len(others)]}, meta=meta)
                elif step == 3:
                    got = await client.call_tool("remember_turn", {
                        "user": f"remember {mine} number {k}", "assistant": "ok"}, meta=meta)
                else:
                    got = await client.call_tool("memory", {
                        "action": "remove", "target": "user", "old_text": f"{mine} fact {k - 4}"},
                        meta=meta)
            except Exception:
                errors += 1
                continue
            errors += bool(getattr(got, "is_error", False))
            leaks += any(secret in _payload(got, step) for secret in others)
    return {"errors": errors, "leaks": leaks}


def _payload(result: Any, step: int) -> str:
    """What an answer reveals: a search's results (its echo of the query is not a leak)."""
    if step == 2:
        return json.dumps(json.loads(result.content[0].text).get("results", []))
    text: str = result.model_dump_json()
    return text


async def concurrent(url: str, clients: int, calls: int, lean: bool = False) -> dict[str, Any]:
    secrets = [f"secret{i:02d}{'lean' if lean else ''}zq" for i in range(clients)]
    started = time.perf_counter()
    results = await asyncio.gather(*(one_client(url, i, calls, secrets, lean)
                                     for i in range(clients)))
    elapsed = time.perf_counter() - started
    total = clients * calls
    return {
        "clients": clients, "calls_per_client": calls, "calls": total,
        "errors": sum(r["errors"] for r in results), "leaks": sum(r["leaks"] for r in results),
        "seconds": round(elapsed, 2), "calls_per_s": round(total / elapsed, 1),
    }


class SyncClock:
    """Times ``os.fsync``/``os.fdatasync`` while installed (the curated write's syncs)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0
        self._saved: dict[str, Callable[[int], None]] = {}

    def _wrap(self, real: Callable[[int], None]) -> Callable[[int], None]:
        def timed_sync(fd: int) -> None:
            started = time.perf_counter()
            try:
                real(fd)
            finally:
                self.seconds += time.perf_counter() - started
                self.count += 1
        return timed_sync

    def __enter__(self) -> SyncClock:
        for name in ("fsync", "fdatasync"):
            if hasattr(os, name):
                self._saved[name] = getattr(os, name)
                setattr(os, name, self._wrap(self._saved[name]))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, real in self._saved.items():
            setattr(os, name, real)


def direct_round_trips(
    home: Path, rounds: int, syncs: list[tuple[float, int]] | None = None
) -> dict[str, list[float]]:
    """The same calls in process (``Memory.call_tool``): the core's share of a round trip;
    each add's sync seconds and sync count are appended to ``syncs``."""
    samples: dict[str, list[float]] = {"memory_add": [], "session_search": []}
    sync_samples = syncs if syncs is not None else []
    with memoryport.open(home, user_id="bench-direct") as writer, memoryport.open(home) as reader:
        writer.start_session(source="bench")
        reader.start_session(source="bench")
        for n in range(rounds + 5):
            with SyncClock() as clock:
                started = time.perf_counter()
                writer.call_tool("memory", {"action": "add", "target": "user",
                                            "content": f"direct note {n}"})
                samples["memory_add"].append(time.perf_counter() - started)
            sync_samples.append((clock.seconds, clock.count))
            writer.call_tool("memory", {"action": "remove", "target": "user",
                                        "old_text": f"direct note {n}"})
            started = time.perf_counter()
            reader.call_tool("session_search", {"query": SEARCH_QUERY})
            samples["session_search"].append(time.perf_counter() - started)
    del sync_samples[:5]
    return {k: v[5:] for k, v in samples.items()}


def ms(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(samples, 0.5) * 1e3, 2),
            "p95_ms": round(percentile(samples, 0.95) * 1e3, 2)}


async def first_calls(url: str, clients: int) -> dict[str, float]:
    """The first ``session_search`` of ``clients`` new connections (one new user each)."""
    samples = []
    for n in range(clients):
        async with http_client(url) as client:
            started = time.perf_counter()
            result = await client.call_tool("session_search", {"query": SEARCH_QUERY},
                                            meta={META_USER: f"bench-new-{n}"})
            samples.append(time.perf_counter() - started)
            if result.is_error:
                raise SystemExit(f"a first call failed: {result.content[0].text}")
    return {"clients": clients, **ms(samples)}


def median(values: list[float]) -> float:
    return percentile(values, 0.5)


def add_split(timings: list[dict[str, float]]) -> dict[str, float]:
    """Medians (ms) of a transport's ``memory`` add: round trip, server, handler, tool, and
    the parts between them."""
    def part(f: Callable[[dict[str, float]], float]) -> float:
        return round(median([f(t) for t in timings]), 2)

    return {
        "round_trip": part(lambda t: t["round_trip_ms"]),
        "client+transport": part(lambda t: t["round_trip_ms"] - t["server_ms"]),
        "mcp_server": part(lambda t: t["server_ms"] - t["handler_ms"]),
        "hop": part(lambda t: t["handler_ms"] - t["tool_ms"]),
        "tool": part(lambda t: t["tool_ms"]),
    }


async def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    syncs: list[tuple[float, int]] = []
    direct = direct_round_trips(home, args.rounds, syncs)
    rows: dict[str, Any] = {"in_process": {k: ms(v) for k, v in direct.items()}}
    rows["in_process_syncs"] = {
        "per_add": round(median([float(c) for _, c in syncs]), 1),
        "sync_ms_p50": round(median([s for s, _ in syncs]) * 1e3, 2),
        "rest_ms_p50": round(median([d - s for d, (s, _) in
                                     zip(direct["memory_add"], syncs, strict=True)]) * 1e3, 2),
    }
    splits: dict[str, list[dict[str, float]]] = {t: [] for t in TRANSPORTS}
    server = build_server(home, ServeOptions())
    try:
        async with Client(server.mcp, mode="legacy") as client:  # JSON-RPC over memory streams
            samples = await round_trips(client, args.rounds, "bench-jsonrpc",
                                        splits["jsonrpc_in_process"])
            rows["jsonrpc_in_process"] = {k: ms(v) for k, v in samples.items()}
    finally:
        server.close()
    stdio = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "--home", str(home), "serve"])
    async with Client(stdio) as client:
        samples = await round_trips(client, args.rounds, "bench-stdio", splits["stdio"])
        rows["stdio"] = {k: ms(v) for k, v in samples.items()}
    proc, url = start_http(home)
    try:
        for name, got in (await http_round_trips(url, args.rounds, splits)).items():
            rows[name] = {k: ms(v) for k, v in got.items()}
        rows["first_call_new_http_client"] = await first_calls(url, args.new_clients)
        rows["concurrent_http"] = await concurrent(url, args.clients, args.calls)
        rows["concurrent_http_lean"] = await concurrent(url, args.clients, args.calls, lean=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    rows["memory_add_split_ms"] = {t: add_split(v) for t, v in splits.items()}
    return rows


TRANSPORTS = ("jsonrpc_in_process", "stdio", "http", "http_lean", "http_raw")
LABELS = {
    "in_process": "in process (Memory.call_tool)",
    "jsonrpc_in_process": "SDK client, server in process (JSON-RPC)",
    "stdio": "SDK client, stdio subprocess",
    "http": "SDK client, streamable HTTP (SDK's httpx2 client)",
    "http_lean": "SDK client, streamable HTTP (memoryport mcp_http_client)",
    "http_raw": "no client library: JSON-RPC on http.client (server cost)",
}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 1 when a goal on errors or leaks is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="session store size")
    parser.add_argument("--rounds", type=int, default=200, help="timed calls per measure")
    parser.add_argument("--new-clients", type=int, default=5,
                        help="new HTTP clients whose first call is timed")
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--calls", type=int, default=200, help="mixed calls per client")
    parser.add_argument("--json", default="bench_mcp", help="results/<name>.json")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        home = Path(tmp)
        build_s = build_store(home, args.messages)
        rows = asyncio.run(run(args, home))
    table = [
        {"transport": t, "client": LABELS[t], "call": call, **figures}
        for t in ("in_process", *TRANSPORTS)
        for call, figures in rows[t].items()
    ]
    print_table(f"MCP round trips ({args.messages:,} messages, {args.rounds} rounds)", table)
    print_table("memory add: where the time goes (medians, ms)",
                [{"transport": t, **f} for t, f in rows["memory_add_split_ms"].items()])
    print_table("memory add in process: the curated write's syncs", [rows["in_process_syncs"]])
    print_table("First call of a new HTTP client (opens its memory)",
                [rows["first_call_new_http_client"]])
    print_table("Concurrent HTTP clients (SDK client; on its httpx2 client, then on "
                "mcp_http_client)", [rows["concurrent_http"], rows["concurrent_http_lean"]])
    load = os.getloadavg()
    print(f"\nload average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the "
          f"end, {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f} at the start")
    path = write_json(args.json, {"messages": args.messages, "build_store_s": round(build_s, 2),
                                  "rounds": args.rounds,
                                  "load_average": [round(x, 2) for x in load],
                                  "load_average_start": [round(x, 2) for x in load_start],
                                  **rows})
    print(f"\nwrote {path}")
    bad = any(rows[k]["errors"] or rows[k]["leaks"]
              for k in ("concurrent_http", "concurrent_http_lean"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
