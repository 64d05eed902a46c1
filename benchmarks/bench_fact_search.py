"""Fact search as the holographic provider's recall runs it, PostgreSQL beside SQLite.

For each chosen LoCoMo conversation, every turn goes in through the provider's
``sync_turn`` (SQLite home, and a PostgreSQL home as an ordinary role, so row-level
security applies; ``_locomo_holo.HolographicIndex``); then every question is asked:
``store.search(question, limit=recall_facts)`` (what ``recall_items`` calls) timed on
both, and on PostgreSQL also the uncached search (``postgres_sql.search``, the path
before the per-generation cache), alternated question by question (and which goes
first) so load hits both alike. The results must be the same facts in the same order
(contents and scores) on the three paths. Then the provider's whole recall
(``recall_items``: turns and facts) is timed once per question on each backend. The
table shows p50/p95 milliseconds; the figures go to ``--json``.

    .venv/bin/python benchmarks/bench_fact_search.py --conversations 0 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _locomo_holo  # beside this file
import _locomo_pg
from locomo_retrieval import default_data, sessions_of

from memoryport.storage.facts import postgres_sql
from memoryport.storage.facts.records import Fact


def _key(facts: list[Fact]) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(f.content, round(f.score, 9), f.entities) for f in facts]


def _ingest(conv: dict[str, Any]) -> _locomo_holo.HolographicIndex:
    index = _locomo_holo.HolographicIndex()
    for started_at, turns in sessions_of(conv):
        index.add_session(started_at, turns)
    return index


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - start) * 1000


def _uncached(store: Any, question: str, limit: int) -> list[Fact]:
    """The PostgreSQL search before the per-generation cache, on the store's connection."""
    return store._read(lambda _: postgres_sql.search(  # type: ignore[no-any-return]
        store._shared, question, limit=limit, min_trust=store.min_trust))


def measure(conv: dict[str, Any], dsn: str, rounds: int) -> dict[str, Any]:
    """Times and parity of the three paths over one conversation's questions."""
    lite = _ingest(conv)
    _locomo_holo.STORAGE_DSN = dsn
    try:
        pg = _ingest(conv)
    finally:
        _locomo_holo.STORAGE_DSN = ""
    lite_store, pg_store = lite.provider.store, pg.provider.store
    assert lite_store is not None and pg_store is not None
    limit = lite.provider.settings.recall_facts
    times: dict[str, list[float]] = {"sqlite": [], "postgres": [], "postgres_uncached": []}
    same = differ = 0
    questions = [str(q["question"]) for q in conv["qa"]]
    for _ in range(rounds):
        for n, question in enumerate(questions):
            a, ta = _timed(lite_store.search, question, limit=limit)
            if n % 2:  # alternate which PostgreSQL path goes first (a woken backend)
                c, tc = _timed(_uncached, pg_store, question, limit)
                b, tb = _timed(pg_store.search, question, limit=limit)
            else:
                b, tb = _timed(pg_store.search, question, limit=limit)
                c, tc = _timed(_uncached, pg_store, question, limit)
            times["sqlite"].append(ta)
            times["postgres"].append(tb)
            times["postgres_uncached"].append(tc)
            if _key(a) == _key(b) == _key(c):
                same += 1
            else:
                differ += 1
    recall: dict[str, list[float]] = {"recall_sqlite": [], "recall_postgres": []}
    for n, question in enumerate(questions):  # the provider's whole recall (turns too)
        order = [("recall_sqlite", lite), ("recall_postgres", pg)][:: -1 if n % 2 else 1]
        for name, index in order:
            recall[name].append(_timed(index.provider.recall_items, question)[1])
    times.update(recall)
    facts = lite_store.count()
    lite.close()
    pg.close()
    return {"facts": facts, "questions": len(questions), "rounds": rounds,
            "same_results": same, "different_results": differ,
            **{k: _locomo_holo.percentiles(v) for k, v in times.items()}}


def main(argv: list[str] | None = None) -> int:
    """Run, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    parser.add_argument("--dsn", default="", help="this server (default: start one)")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    data = json.loads((args.data or default_data()).read_text())
    report: dict[str, Any] = {"load": os.getloadavg(), "conversations": {}}
    with _locomo_pg.postgres_dsn(args.dsn) as dsn:
        for number in args.conversations:
            report["conversations"][str(number)] = row = measure(data[number], dsn,
                                                                 args.rounds)
            print(f"conv {number}: {row['facts']} facts, {row['questions']} questions x"
                  f" {row['rounds']}, same results {row['same_results']}"
                  f" (different {row['different_results']})")
            for path in ("sqlite", "postgres", "postgres_uncached", "recall_sqlite",
                         "recall_postgres"):
                print(f"  {path:<18} p50 {row[path]['p50']:>8.3f} ms"
                      f"  p95 {row[path]['p95']:>8.3f} ms")
    report["load_after"] = os.getloadavg()
    print("load average", report["load"], "->", report["load_after"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
