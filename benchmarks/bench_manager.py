"""MemoryManager overhead: prefetch_all latency, sync_all caller cost, scrubber speed.

Run: .venv/bin/python benchmarks/bench_manager.py [--turns N]
Goals: prefetch_all p50 < 0.3 ms with 1 provider and < 1 ms with 16; sync_all p50 < 50 us
on the caller's side; scrubber < 3 us per 4-16 char chunk without '<'.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import print_table, summary_us, write_json

from memoryport.manager import ManagerSettings, MemoryManager
from memoryport.provider import MemoryProvider


class Trivial(MemoryProvider):
    """Returns a constant recall and accepts syncs instantly."""

    def __init__(self, index: int) -> None:
        self._name = f"trivial{index}"

    @property
    def name(self) -> str:
        return self._name

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        return None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return "User prefers tea."

    def sync_turn(self, user_content: str, assistant_content: str, **kwargs: Any) -> None:
        return None


def bench_prefetch(n_providers: int, turns: int) -> dict[str, Any]:
    manager = MemoryManager(ManagerSettings(max_external_providers=n_providers))
    for index in range(n_providers):
        manager.add_provider(Trivial(index))
    manager.initialize_all("bench")
    for _ in range(50):
        manager.prefetch_all("warm up")
    samples = []
    for turn in range(turns):
        started = time.perf_counter()
        manager.prefetch_all(f"what did we decide in turn {turn}?")
        samples.append(time.perf_counter() - started)
    manager.shutdown_all()
    stats = summary_us(samples)
    return {"bench": f"prefetch_all, {n_providers} provider(s)", **stats}


def bench_sync(turns: int) -> dict[str, Any]:
    manager = MemoryManager()
    manager.add_provider(Trivial(0))
    manager.initialize_all("bench")
    samples = []
    for turn in range(turns):
        started = time.perf_counter()
        manager.sync_all(f"user {turn}", f"assistant {turn}")
        samples.append(time.perf_counter() - started)
    manager.shutdown_all()
    return {"bench": "sync_all caller cost, 1 provider", **summary_us(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    args = parser.parse_args()
    rows = [bench_prefetch(n, args.turns) for n in (1, 4, 16)]
    rows.append(bench_sync(args.turns * 5))
    print_table("MemoryManager overhead (microseconds)", rows)
    payload: dict[str, Any] = {"manager": rows}
    try:
        import bench_scrubber

        scrub_rows = bench_scrubber.run()
        print_table("Streaming scrubber and safety scan", scrub_rows)
        payload["scrubber"] = scrub_rows
    except ImportError as exc:
        print(f"(scrubber benchmark unavailable: {exc})")
    path = write_json("bench_manager", payload)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
