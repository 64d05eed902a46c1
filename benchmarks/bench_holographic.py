"""Ingest cost of the ``holographic`` provider: ``sync_turn`` per turn, with facts
extracted, on a store that already holds facts and turns.

Every measured turn is one ``sync_turn`` call (both sides stored in the turn index, the
user's fact sentences extracted, safety-scanned, deduplicated, checked for contradictions
and written). ``all_cpu`` is the same turns' CPU time (this thread), which the other
processes on a shared machine do not inflate. Three kinds of turn are interleaved:
chatter without a fact, a turn stating one or two new facts (some contradicting earlier
ones), and a turn repeating a fact already stored (a duplicate). ``--profile`` prints
the top functions.

Run: .venv/bin/python benchmarks/bench_holographic.py [--turns N] [--preload N] [--profile]
Goal: p50 and p95 under 5 ms per turn (issue 12: ingest <= 5 ms per turn).

``--floors`` instead measures the recall floor on the LoCoMo dev file (categories 1-4):
every turn goes in through ``sync_turn`` (as ``locomo_retrieval.py --backend holographic``
does), every question is asked through ``recall_items`` (the call ``prefetch`` renders),
and for each floor it reports recall@5/@10 of the ranked turns, and what ``prefetch``
actually injects within the default 1,200-character budget: how many turns, and the
share of the evidence turns among them ("injected recall"). The row ``shared word``
is the former rule (only turns sharing a word with the question were injected).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import print_table, summary_us, write_json

from memoryport.providers.holographic.provider import HolographicProvider

GOAL_MS = 5.0

_PEOPLE = ["Alice", "Bob", "Carol", "Dmitri", "Eun-ji", "Farah", "Gustavo", "Hana", "Ivo",
           "Jamal", "Kirsten", "Luis", "Mei", "Nadia", "Oskar", "Priya"]
_CITIES = ["Lisbon", "Porto", "Berlin", "Madrid", "Osaka", "Denver", "Nairobi", "Quito",
           "Tallinn", "Hanoi", "Perth", "Lyon", "Boston", "Seoul", "Bergen", "Cusco"]
_THINGS = ["vim", "emacs", "tea", "coffee", "jazz", "hiking", "chess", "pottery", "sushi",
           "rust", "python", "cycling", "opera", "gardening", "surfing", "knitting"]
_ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Hooli"]
_CHATTER = [
    "We spent the afternoon going through the flaky checkout tests and the retry logic.",
    "Can you summarise what we discussed about the migration plan yesterday?",
    "The build took forty minutes again, which is getting annoying for everyone.",
    "Thanks, that explanation of the FTS5 tokenizer was really helpful for the team.",
    "Let's look at the deployment script after lunch and see what breaks first.",
]


def fact_sentence(rng: random.Random) -> str:
    """One statement the extractor recognises (first person or a named person)."""
    person, city = rng.choice(_PEOPLE), rng.choice(_CITIES)
    thing, org = rng.choice(_THINGS), rng.choice(_ORGS)
    return rng.choice([
        f"I live in {city}.", f"{person} lives in {city}.", f"I work at {org}.",
        f"{person} works for {org}.", f"I really like {thing}.", f"{person} prefers {thing}.",
        f"My favorite city is {city}.", f"{person} doesn't like {thing}.",
        f"I use {thing} as my editor.", f"{person} is married to {rng.choice(_PEOPLE)}.",
    ])


def turn_text(rng: random.Random, kind: str, seen: list[str]) -> str:
    """The user side of one turn of ``kind`` (chatter / facts / duplicate)."""
    chatter = rng.choice(_CHATTER)
    if kind == "duplicate" and seen:
        return f"{rng.choice(seen)} {chatter}"
    if kind == "facts":
        facts = [fact_sentence(rng) for _ in range(rng.choice((1, 2)))]
        seen.extend(facts)
        return " ".join([*facts, chatter])
    return chatter


def make_provider(home: Path) -> HolographicProvider:
    """A provider on ``home`` (defaults: auto_extract on)."""
    provider = HolographicProvider()
    provider.initialize("bench", home=home, platform="bench")
    return provider


def preload(provider: HolographicProvider, turns: int, rng: random.Random) -> list[str]:
    """``turns`` fact-bearing turns (setup only); return the fact sentences stated."""
    seen: list[str] = []
    for index in range(turns):
        provider.sync_turn(turn_text(rng, "facts", seen), "Noted, thanks.",
                           session_id=f"old-{index // 50}")
    return seen


def measure(provider: HolographicProvider, turns: int, rng: random.Random,
            seen: list[str]) -> dict[str, list[float]]:
    """Time ``turns`` sync_turn calls; samples (seconds) per kind and overall."""
    samples: dict[str, list[float]] = {"all": [], "chatter": [], "facts": [], "duplicate": [],
                                       "all_cpu": []}
    kinds = ["chatter", "facts", "facts", "duplicate"]
    for index in range(turns):
        kind = kinds[index % len(kinds)]
        text = turn_text(rng, kind, seen)
        started, cpu = time.perf_counter(), time.thread_time()
        provider.sync_turn(text, "Got it — I'll remember that.", session_id="bench-live",
                           source_id=f"m{index}")
        elapsed = time.perf_counter() - started
        samples["all_cpu"].append(time.thread_time() - cpu)
        samples[kind].append(elapsed)
        samples["all"].append(elapsed)
    return samples


def run(turns: int, preload_turns: int, profile: bool) -> dict[str, Any]:
    """Measure; return the JSON-ready result."""
    rng = random.Random(12)
    with tempfile.TemporaryDirectory() as tmp:
        provider = make_provider(Path(tmp))
        seen = preload(provider, preload_turns, rng)
        stored = provider.store.count() if provider.store else 0
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        samples = measure(provider, turns, rng, seen)
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        provider.shutdown()
    rows: dict[str, Any] = {}
    for kind, values in samples.items():
        stats = summary_us(values)
        rows[kind] = {"turns": len(values),
                      **{f"{k}_ms": round(stats[f"{k}_us"] / 1000, 3)
                         for k in ("p50", "p95", "p99", "mean")}}
    return {"turns": turns, "preload_turns": preload_turns, "facts_before": stored,
            "goal_ms": GOAL_MS, "by_kind": rows}


FLOORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6)
"""Floors ``--floors`` compares (fractions of the best turn's score)."""


def _injected(text: str, hits: list[Any]) -> list[str]:
    """source ids of the hits whose line made it into the rendered recall."""
    from memoryport.providers.holographic.recall import turn_line
    return [h.source_id for h in hits if turn_line(h) in text]


def floors(budget: int = 1200) -> dict[str, Any]:
    """Recall@5/@10 and injected recall per floor on LoCoMo dev (categories 1-4)."""
    import locomo_retrieval as loco
    from _locomo_holo import HolographicIndex

    from memoryport.providers.holographic.recall import render
    from memoryport.storage.facts.text import tokens

    data = json.loads(loco.DEFAULT_DATA.read_text(encoding="utf-8"))
    names = [f"floor {f}" for f in FLOORS] + ["shared word"]
    sums: dict[str, dict[str, float]] = {n: {"r5": 0.0, "r10": 0.0, "inj": 0.0, "turns": 0.0}
                                         for n in names}
    count = 0
    for conv in data:
        index = HolographicIndex()
        for started, turns in loco.sessions_of(conv):
            index.add_session(started, turns)
        for qa in conv["qa"]:
            gold = loco._evidence(qa)
            if int(qa["category"]) not in (1, 2, 3, 4) or not gold:
                continue
            count += 1
            facts, hits = index.provider.recall_items(str(qa["question"]))
            best = max((h.score for h in hits), default=0.0)
            wanted = set(tokens(str(qa["question"])))
            variants = {f"floor {f}": [h for h in hits if h.score >= f * best] for f in FLOORS}
            variants["shared word"] = [h for h in hits if wanted & set(tokens(h.text))]
            for name, kept in variants.items():
                ranked = [h.source_id for h in kept]
                shown = _injected(render(facts, kept, budget), kept)
                row = sums[name]
                row["r5"] += len(gold & set(ranked[:5])) / len(gold)
                row["r10"] += len(gold & set(ranked[:10])) / len(gold)
                row["inj"] += len(gold & set(shown)) / len(gold)
                row["turns"] += len(shown)
        index.close()
    return {name: {"recall@5": round(v["r5"] / count, 4), "recall@10": round(v["r10"] / count, 4),
                   "injected_recall": round(v["inj"] / count, 4),
                   "injected_turns": round(v["turns"] / count, 2)} for name, v in sums.items()
            } | {"questions": count, "budget_chars": budget}


def main() -> None:
    """Parse arguments, run, print the table and write ``results/bench_holographic.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--preload", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--floors", action="store_true", help="measure the recall floor")
    args = parser.parse_args()
    if args.floors:
        measured = floors()
        print_table(f"recall floor on LoCoMo dev, categories 1-4 ({measured['questions']}"
                    f" questions; injected = within {measured['budget_chars']} chars)",
                    [{"rule": k, **v} for k, v in measured.items() if isinstance(v, dict)])
        print(f"\nwrote {write_json('bench_holographic_floors', {'result': measured})}")
        return
    result = run(args.turns, args.preload, args.profile)
    table = [{"kind": kind, **row} for kind, row in result["by_kind"].items()]
    for row in table:
        row["ok"] = "yes" if row["p50_ms"] <= GOAL_MS and row["p95_ms"] <= GOAL_MS else "NO"
    print_table(f"holographic sync_turn per turn ({result['facts_before']} live facts before;"
                f" goal <= {GOAL_MS} ms)", table)
    path = write_json("bench_holographic", {"result": result})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
