"""``memoryport ui`` benchmark: server time per page and search-as-you-type on a big home.

    python benchmarks/bench_ui.py [--messages 1000000] [--facts 10000] [--rounds 30]
        [--workdir DIR]

Builds (or, with ``--workdir``, reuses) a home with ``--messages`` session messages (the
LoCoMo-based corpus of ``bench_sessions.py``: sessions of 20-200 messages, varied sources
and users), ``--facts`` facts in the holographic store (with superseded values), curated
entries with history and an audit log, then times every page through the app in process
(Starlette's TestClient: the request's server time, no network; and its CPU time, which
a loaded machine does not inflate). For each page: the first load (cold caches: the
first request of a fresh app) and the steady state (p50/p95 over ``--rounds``). Search
as you type replays a query typed one character at a time against ``/sessions/results``
(what the page fetches, from the third character on). Prints a table and writes
benchmarks/results/bench_ui.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import percentile, print_table
from bench_sessions import corpus

import memoryport
from memoryport.cli import main as cli
from memoryport.providers.holographic import DB_NAME
from memoryport.storage.facts.records import FactInput
from memoryport.storage.facts.store import FactStore
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.ui import create_app

RESULTS = Path(__file__).parent / "results" / "bench_ui.json"
TYPED = "caroline support group"
MIN_CHARS = 3
"""The page's script starts searching at 3 typed characters (static/app.js)."""
CITIES = ["Lisbon", "Porto", "Berlin", "Oslo", "Kyoto", "Lima", "Quito", "Accra"]


def _sessions(home: Path, n: int) -> int:
    store = SQLiteSessionStore(home / "state.db")
    count = 0
    for session, messages in corpus(n):
        sid = store.create_session(session["session_id"], source=session["source"],
                                   user_id=session["user_id"],
                                   started_at=session["started_at"]).id
        store.append_messages(sid, messages)
        count += len(messages)
    store.close()
    return count


def _facts(home: Path, n: int) -> None:
    rng = random.Random(3)
    store = FactStore(home / DB_NAME)
    batch: list[FactInput] = []
    for i in range(n):
        if i % 5 == 0:  # a value that changes: later ones retire earlier ones
            text = f"Project p{i % 400:03d} is hosted in {rng.choice(CITIES)}"
        else:
            text = f"The user's tool t{i:05d} works with library l{rng.randrange(9999):04d}"
        batch.append(FactInput(content=text))
        if len(batch) == 500:
            store.add_many(batch)
            batch = []
    if batch:
        store.add_many(batch)
    store.close()


def build(home: Path, messages: int, facts: int) -> dict[str, Any]:
    """Create the big home (skipped when ``home`` already holds one)."""
    if (home / "state.db").exists():
        return {"built": False}
    start = time.perf_counter()
    runner = CliRunner()
    runner.invoke(cli, ["--home", str(home), "config", "set", "memory.provider", "holographic"])
    stored = _sessions(home, messages)
    _facts(home, facts)
    with memoryport.open(home, platform="cli") as memory:
        memory.start_session(source="cli", title="bench")
        for i in range(12):
            memory.call_tool("memory", {"action": "add", "target": "memory",
                                        "content": f"Benchmark note {i}: prefers option {i}"})
    return {"built": True, "messages": stored, "build_s": round(time.perf_counter() - start, 1)}


def _pages(client: TestClient) -> dict[str, str]:
    listing = client.get("/sessions").text
    start = listing.index('href="/sessions/') + len('href="/sessions/')
    session = listing[start:listing.index('"', start)]
    return {
        "memory": "/memory",
        "memory history": "/memory/history?target=memory",
        "revision diff": "/memory/revision?id=memory:6",
        "sessions list": "/sessions",
        "sessions list, filtered": "/sessions?source=telegram&tools=0",
        "search (common word)": "/sessions?q=really",
        "search (phrase)": '/sessions?q="support group"',
        "search (rare word)": "/sessions?q=quetzalcoatl",
        "session view": f"/sessions/{session}",
        "facts list": "/facts",
        "facts search": "/facts?q=Lisbon",
        "fact view": "/facts/5",
        "providers (cached status)": "/providers",
        "providers (fresh status)": "/providers?fresh=1",
        "pause": "/pause",
        "audit": "/audit",
    }


CPU: list[float] = []
"""CPU milliseconds of each timed request (the process's, so the app's threads count)."""


def _time(client: TestClient, url: str) -> float:
    cpu, start = time.process_time(), time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - start) * 1000
    CPU.append((time.process_time() - cpu) * 1000)
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
    return elapsed


def _row(name: str, first: float | str, wall: list[float], cpu: list[float]) -> dict[str, Any]:
    return {"page": name, "first_ms": round(first, 1) if isinstance(first, float) else first,
            "p50_ms": round(percentile(wall, 0.5), 1), "p95_ms": round(percentile(wall, 0.95), 1),
            "cpu_p50_ms": round(percentile(cpu, 0.5), 1),
            "cpu_p95_ms": round(percentile(cpu, 0.95), 1)}


def measure(home: Path, rounds: int) -> dict[str, Any]:
    """First load and steady-state p50/p95 (ms) per page; search-as-you-type p50/p95."""
    client = TestClient(create_app(home), base_url="http://127.0.0.1:8766")
    pages = _pages(client)
    rows = []
    for name, url in pages.items():
        first = _time(client, url)
        CPU.clear()
        steady = [_time(client, url) for _ in range(rounds)]
        rows.append(_row(name, first, steady, list(CPU)))
    typed: list[float] = []
    CPU.clear()
    for _ in range(max(1, rounds // 10)):
        for end in range(MIN_CHARS, len(TYPED) + 1):
            if TYPED[end - 1] != " ":
                typed.append(_time(client, f"/sessions/results?q={TYPED[:end]}"))
    rows.append(_row("search as you type (/sessions/results)", "", typed, list(CPU)))
    return {"pages": rows, "typed_requests": len(typed), "load_average": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    """Build or reuse the home, measure, print and write the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="Keep (and reuse) the home here; default: a temporary one.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        home = (args.workdir or Path(tmp)) / f"home-{args.messages}-{args.facts}"
        built = build(home, args.messages, args.facts)
        result = measure(home, args.rounds)
    report = {"messages": args.messages, "facts": args.facts, "rounds": args.rounds,
              **built, **result}
    print_table(f"memoryport ui, {args.messages:,} messages, {args.facts:,} facts "
                f"(server time, ms)", result["pages"])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
