"""The turn index's search in a one-user store as it grows: the in-process BM25 top computed
with numpy against the plain-Python loop.

A personal agent's ``holographic.db`` holds one user's turns, so its searches rank with the
in-process BM25 (:mod:`memoryport.storage.turns.bm25`), whose cost grows with the number of
stored turns holding the query's words. For each ``--turns`` size this script builds one
store (the LoCoMo dev turns repeated under new session ids, one user, added in batches),
then, in alternating blocks, searches it with the dev questions with the top computed by
numpy (:mod:`memoryport.storage.turns.bm25_arrays`; the default when numpy is installed)
and by the Python loop (``bm25.ARRAYS`` off), each block in a fresh index over a copy of
the same file. It prints the CPU (thread time) of the whole search and of the top alone,
p50 / p95 over ``--queries`` questions after ``--warm`` unmeasured ones. Dense vectors
are off (lexical search only), so the model's background writer does not run.

Run: .venv/bin/python benchmarks/bench_turn_search_scale.py [--turns 2000 20000]
     [--queries N] [--warm N] [--rounds N] [--data PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import percentile, print_table, write_json
from locomo_retrieval import DEFAULT_DATA, sessions_of

from memoryport.storage.turns import TurnIndex, TurnInput, bm25

BATCH = 500
"""Turns per ``add_turns`` while building a store."""


def build(path: Path, data: list[dict[str, Any]], total: int) -> int:
    """Store ``total`` turns at ``path``: the dev sessions repeated under new session ids
    (``c0``, ``c1``, ...), one user; returns how many were stored."""
    sessions = [s for conv in data for s in sessions_of(conv)]
    stored, copy, batch = 0, 0, []
    with TurnIndex(path, dense=False) as index:
        while stored < total:
            for started, turns in sessions:
                for turn in turns[: total - stored]:
                    batch.append(TurnInput(f"c{copy}", str(turn["speaker"]), str(turn["text"]),
                                           started, str(turn["dia_id"]), None))
                    stored += 1
                copy += 1
                if len(batch) >= BATCH or stored >= total:
                    index.add_turns(batch)
                    batch = []
                if stored >= total:
                    break
    return stored


def _timed(spent: list[float]) -> Callable[[], None]:
    """Record the thread time of each ``Postings.top`` call into ``spent``; returns the
    function that puts the original back."""
    original = bm25.Postings.top

    def top(self: bm25.Postings, *args: Any) -> Any:
        started = time.thread_time()
        try:
            return original(self, *args)
        finally:
            spent.append(time.thread_time() - started)

    bm25.Postings.top = top  # type: ignore[method-assign]
    return lambda: setattr(bm25.Postings, "top", original)


def block(path: Path, questions: list[str], warm: int, arrays: bool) -> dict[str, Any]:
    """Search a fresh index over ``path`` with ``questions``; the CPU of the searches and
    of their top after the first ``warm`` questions, in milliseconds."""
    saved = bm25.ARRAYS
    bm25.ARRAYS = arrays  # read when the index's caches are created
    spent: list[float] = []
    searches: list[float] = []
    try:
        with TurnIndex(path, dense=False) as index:
            for question in questions[:warm]:
                index.search(question)
            put_back = _timed(spent)
            try:
                for question in questions[warm:]:
                    started = time.thread_time()
                    index.search(question)
                    searches.append(time.thread_time() - started)
            finally:
                put_back()
    finally:
        bm25.ARRAYS = saved
    return {"top": "numpy" if arrays else "python",
            "search_p50_ms": round(percentile(searches, 0.5) * 1000, 3),
            "search_p95_ms": round(percentile(searches, 0.95) * 1000, 3),
            "top_p50_ms": round(percentile(spent, 0.5) * 1000, 3),
            "top_p95_ms": round(percentile(spent, 0.95) * 1000, 3)}


def main() -> None:
    """Parse arguments, run, print the table and write ``results/bench_turn_search_scale.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[2_000, 20_000])
    parser.add_argument("--queries", type=int, default=500, help="measured searches per block")
    parser.add_argument("--warm", type=int, default=100, help="unmeasured searches first")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of blocks per size")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if not bm25.ARRAYS:
        parser.error("numpy is not installed: pip install 'memoryport[embeddings]'")
    data = json.loads(args.data.read_text())
    questions = [str(qa["question"]) for conv in data for qa in conv["qa"]]
    questions = questions[: args.warm + args.queries]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for total in args.turns:
            built = Path(tmp) / f"turns{total}.db"
            stored = build(built, data, total)
            for _ in range(args.rounds):
                for arrays in (True, False):
                    copy = Path(tmp) / "search.db"
                    shutil.copyfile(built, copy)
                    rows.append({"turns": stored, **block(copy, questions, args.warm, arrays)})
                    for leftover in Path(tmp).glob("search.db*"):
                        leftover.unlink()
    print_table("turn search in a one-user store: CPU per search and per BM25 top "
                "(numpy and the Python loop alternated)", rows)
    path = write_json("bench_turn_search_scale", {
        "queries": args.queries, "warm": args.warm, "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
