"""What the dense path (the MiniLM model) adds to a turn: the query embedding before and
after it moved beside the lexical part, alternated in one process.

Each round runs ``bench_turn.run`` (the same setup and measured turn as
``benchmarks/bench_turn.py``) for the trivial provider, then the holographic one twice
with the model on: ``inline`` (the query embedded on the search's thread when the dense
signal needs it, and the background writer not waiting for it: the behaviour before) and
``ahead`` (the query embedded on the index's query thread while the search does its
lexical part, the writer waiting for it; ``storage/turns/query_vectors.py``).
The variants are alternated, so a busy shared machine weighs on both alike.

Also prints one query's embedding alone (CPU and wall p50 of 200, after a sleep of
``--user-ms`` between them: weights and cores cold as at an agent's pace).

Needs the model (``make embeddings`` or ``MEMORYPORT_EMBEDDINGS_MODEL=<dir>``).
Run: .venv/bin/python benchmarks/bench_dense_turn.py [--turns N] [--rounds N]
     [--model-ms N] [--user-ms N]
Writes ``results/bench_dense_turn.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_turn
from _report import percentile, print_table, write_json

from memoryport.storage.turns import query_vectors, vectors

VARIANTS = {"inline": (False, 0.0), "ahead": (True, vectors.WRITER_WAIT)}
"""Variant -> (``query_vectors.AHEAD``, ``vectors.WRITER_WAIT``)."""


def query_alone(user_ms: float, count: int = 200) -> dict[str, float]:
    """One question's embedding on its own: CPU and wall p50 in ms."""
    embedder = vectors.load_default()
    if embedder is None:
        raise SystemExit(f"dense vectors are {vectors.status()}")
    walls, cpus = [], []
    for n in range(count + 10):
        time.sleep(user_ms / 1000)
        wall, cpu = time.perf_counter(), time.thread_time()
        embedder.embed([f"What did we decide about the sqlite schema ({n})?"])
        if n >= 10:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.thread_time() - cpu)
    return {"wall_p50_ms": round(percentile(walls, 0.5) * 1000, 3),
            "cpu_p50_ms": round(percentile(cpus, 0.5) * 1000, 3)}


def main() -> None:
    """Parse arguments, run the rounds, print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model-ms", type=float, default=0.0)
    parser.add_argument("--user-ms", type=float, default=0.0)
    args = parser.parse_args()
    if vectors.load_default() is None:
        raise SystemExit(f"dense vectors are {vectors.status()}")
    rows: list[dict[str, Any]] = []
    for round_no in range(args.rounds):
        base = bench_turn.run(args.turns, 10_000, False, args.model_ms, user_ms=args.user_ms)
        for name, (ahead, wait) in VARIANTS.items():
            query_vectors.AHEAD, vectors.WRITER_WAIT = ahead, wait
            holo = bench_turn.run(args.turns, 10_000, True, args.model_ms, 0, args.user_ms)
            rows.append({"round": round_no, "variant": name, "model_ms": args.model_ms,
                         "user_ms": args.user_ms, "p50_ms": holo["p50_ms"],
                         "p95_ms": holo["p95_ms"], "base_p50_ms": base["p50_ms"],
                         "adds_p50_ms": round(holo["p50_ms"] - base["p50_ms"], 3),
                         "recall_cpu_ms": holo["recall_cpu_ms"],
                         "cpu_per_turn_ms": holo["cpu_per_turn_ms"],
                         "load": round(os.getloadavg()[0], 2)})
            print_table("", rows[-1:])
    query_vectors.AHEAD, vectors.WRITER_WAIT = VARIANTS["ahead"]
    alone = query_alone(args.user_ms)
    print_table("What the dense path adds to a turn (holographic p50 - trivial p50)", rows)
    print(f"\none query embedded alone (sleep {args.user_ms} ms between): {alone}")
    path = write_json("bench_dense_turn", {"rows": rows, "query_alone": alone})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
