"""The holographic recall's cost warm and after idle time, step by step.

``bench_turn.py --user-ms 50`` waits between turns as an agent does while its user reads
and types. On this 2-core VM the recall then costs about twice its back-to-back CPU:
whatever it reads is out of the caches again. This script shows that, and which steps
grow. It builds the same state as ``bench_turn.py``: curated entries, ``--preload``
session messages, ``--turns`` turns through ``begin_turn`` / ``end_turn``, then every
vector written. It then calls the provider's ``prefetch`` on new questions in
alternating blocks, with no wait and with ``--idle-ms`` of sleep before each call. Each
block gives the medians of the calls' CPU (thread time) and wall time, and the median
CPU of the main steps: their methods are wrapped, and each step's time includes what it
calls.

Run: .venv/bin/python benchmarks/bench_recall_idle.py [--turns N] [--preload N]
     [--queries N] [--idle-ms N] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import print_table, write_json
from bench_turn import preload, seed_curated

from memoryport.api import open_memory
from memoryport.config import Config, MemorySettings
from memoryport.providers.holographic import HolographicProvider
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import expand, query_encoder, vectors
from memoryport.storage.turns.index import TurnIndex

STEPS: list[tuple[str, Any, str]] = [
    ("bm25_top", TurnIndex, "_main_scores"),
    ("blocks", TurnIndex, "_block_scores"),
    ("candidate_rows", TurnIndex, "_candidate_rows"),
    ("query_vector", query_encoder.QueryEncoder, "vector"),
    ("expansion_terms", vectors.DenseIndex, "expansion"),
    ("expansion_scores", expand, "scores"),
    ("cosines", TurnIndex, "_dense"),
    ("turn_search", TurnIndex, "search"),
    ("fact_search", FactStore, "search"),
]
"""(column, owner, attribute) of each step timed."""


def _wrap(owner: Any, name: str, spent: list[float]) -> Callable[[], None]:
    """Record the thread time of each call of ``owner.name`` into ``spent``; returns the
    function that puts the original back."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.thread_time() - started)

    setattr(owner, name, timed)
    return lambda: setattr(owner, name, original)


def run(turns: int, messages: int, queries: int, idle_ms: float, rounds: int
        ) -> list[dict[str, Any]]:
    """Build the state, then measure ``rounds`` pairs of blocks (no wait, ``idle_ms``)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as home:
        provider = HolographicProvider()
        memory = open_memory(home, "default", config=Config(memory=MemorySettings(
            nudge_interval=0)), providers=[provider], load_provider=False, platform="cli")
        memory.start_session(source="cli")
        seed_curated(memory)
        preload(memory, messages)
        for index in range(turns):
            turn = memory.begin_turn(f"What did we decide about the sqlite schema ({index})?")
            memory.end_turn(turn, f"We decided to keep FTS5 triggers ({index}).")
            time.sleep(0.01)
        memory.flush(60)
        if provider.turns is not None:
            provider.turns.flush_vectors(120)
        asked = turns
        for warm in range(20):
            provider.prefetch(f"What did we decide about the sqlite schema ({asked + warm})?")
        asked += 20
        for _ in range(rounds):
            for wait in (0.0, idle_ms):
                spent: dict[str, list[float]] = {column: [] for column, _, _ in STEPS}
                undo = [_wrap(owner, name, spent[column]) for column, owner, name in STEPS]
                cpu, wall = [], []
                try:
                    for _ in range(queries):
                        time.sleep(wait / 1000)
                        question = f"What did we decide about the sqlite schema ({asked})?"
                        asked += 1
                        started_cpu, started = time.thread_time(), time.perf_counter()
                        provider.prefetch(question)
                        cpu.append(time.thread_time() - started_cpu)
                        wall.append(time.perf_counter() - started)
                finally:
                    for put_back in undo:
                        put_back()
                row: dict[str, Any] = {
                    "idle_ms": wait, "queries": queries,
                    "recall_cpu_ms": round(statistics.median(cpu) * 1000, 3),
                    "recall_wall_ms": round(statistics.median(wall) * 1000, 3)}
                for column, values in spent.items():
                    row[f"{column}_us"] = round(statistics.median(values) * 1e6) if values else ""
                rows.append(row)
        memory.close()
    return rows


def main() -> None:
    """Parse arguments, run, print the table and write ``results/bench_recall_idle.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--preload", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200, help="recalls per block")
    parser.add_argument("--idle-ms", type=float, default=50.0,
                        help="sleep before each recall of the idle blocks")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of blocks")
    args = parser.parse_args()
    rows = run(args.turns, args.preload, args.queries, args.idle_ms, args.rounds)
    print_table("holographic recall (prefetch) warm and after idle time; medians, steps' CPU "
                "in microseconds", rows)
    path = write_json("bench_recall_idle", {
        "turns": args.turns, "preloaded_messages": args.preload,
        "dense": vectors.status(), "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
