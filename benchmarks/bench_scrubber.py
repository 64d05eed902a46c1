"""Benchmark the streaming context scrubber and the safety scan.

Run: ``.venv/bin/python benchmarks/bench_scrubber.py``. Prints a table and writes
``benchmarks/results/bench_scrubber.json``. ``run()`` returns the rows.

Rows:
* scrubber ``feed`` cost per 4-16 char chunk without ``<`` (the fast path; goal < 3 µs),
* ``feed`` cost per chunk on a stream where fenced spans and tag fragments are common,
* throughput (MB/s) on a 10 MB stream in 4-16 char chunks with occasional fenced spans,
* ``safety.scan`` and ``safety.scan_lines`` cost per KB of benign text (plain prose, and
  text dense with trigger words).

Per-chunk figures include the Python ``for`` loop around ``feed`` (a conservative number).
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from memoryport import safety  # noqa: E402
from memoryport.fence import StreamingContextScrubber  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_scrubber.json"
WORDS = [
    "the", "user", "prefers", "concise", "answers", "with", "code", "examples", "and", "runs",
    "tests", "before", "every", "commit", "while", "deploy", "pipeline", "uses", "blue", "green",
    "releases", "on", "kubernetes",
]


def _best_of(repeats: int, func: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def _chunks(text: str, rng: random.Random, low: int = 4, high: int = 16) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        size = rng.randint(low, high)
        out.append(text[pos : pos + size])
        pos += size
    return out


def _prose(rng: random.Random, n_chars: int) -> str:
    parts: list[str] = []
    total = 0
    while total < n_chars:
        word = rng.choice(WORDS)
        parts.append(word)
        total += len(word) + 1
    return " ".join(parts)[:n_chars]


def _fenced_stream(rng: random.Random, n_chars: int, span_every: int) -> str:
    """Prose with a fenced span (in a random tag variant) roughly every ``span_every`` chars."""
    opens = ["<memory-context>", "<MEMORY-CONTEXT>", "< memory-context >"]
    closes = ["</memory-context>", "</ memory-context >"]
    pieces: list[str] = []
    total = 0
    while total < n_chars:
        text = _prose(rng, span_every)
        span = f"{rng.choice(opens)}\nrecalled fact\n{rng.choice(closes)}"
        pieces.extend([text, span, " a < b "])
        total += len(text) + len(span) + 7
    return "".join(pieces)[:n_chars]


def _feed_all(chunks: list[str]) -> Callable[[], None]:
    def go() -> None:
        scrubber = StreamingContextScrubber()
        feed = scrubber.feed
        for chunk in chunks:
            feed(chunk)
        scrubber.flush()

    return go


def _row(name: str, value: float, unit: str, goal: str) -> dict[str, object]:
    return {"name": name, "value": round(value, 3), "unit": unit, "goal": goal}


def _scrubber_rows(rng: random.Random) -> list[dict[str, object]]:
    plain = _chunks(_prose(rng, 400_000), rng)
    per_plain = _best_of(5, _feed_all(plain)) / len(plain) * 1e6
    tagged = _chunks(_fenced_stream(rng, 400_000, span_every=120), rng)
    per_tagged = _best_of(5, _feed_all(tagged)) / len(tagged) * 1e6
    big_text = _fenced_stream(rng, 10 * 1024 * 1024, span_every=4000)
    big = _chunks(big_text, rng)
    seconds = _best_of(2, _feed_all(big))
    return [
        _row("scrubber feed, 4-16 char chunk without '<'", per_plain, "µs/chunk", "< 3"),
        _row(
            "scrubber feed, 4-16 char chunk, span every ~120 chars",
            per_tagged,
            "µs/chunk",
            "informational",
        ),
        _row(
            "scrubber throughput, 10 MB stream in 4-16 char chunks",
            len(big_text) / 1e6 / seconds,
            "MB/s",
            "informational",
        ),
    ]


def _scan_rows(rng: random.Random) -> list[dict[str, object]]:
    from safety_corpus import BENIGN

    plain = _prose(rng, 1024)
    dense = "\n".join(BENIGN)[:1024]
    rows = []
    for label, text in (("plain prose", plain), ("trigger-word dense", dense)):
        assert safety.scan(text) == [], label
        per_scan = _best_of(5, lambda t=text: [safety.scan(t) for _ in range(300)]) / 300
        per_lines = _best_of(5, lambda t=text: [safety.scan_lines(t) for _ in range(300)]) / 300
        rows.append(
            _row(f"safety.scan, 1 KB benign {label}", per_scan * 1e6, "µs/KB", "tens of µs")
        )
        rows.append(
            _row(f"safety.scan_lines, 1 KB benign {label}", per_lines * 1e6, "µs/KB", "tens of µs")
        )
    big = "\n".join(BENIGN * 40)[: safety.MAX_SCAN_CHARS]
    per_big = _best_of(3, lambda: safety.scan(big)) / (len(big) / 1024)
    rows.append(
        _row(
            "safety.scan, 64 KB trigger-word dense (per KB)",
            per_big * 1e6,
            "µs/KB",
            "informational",
        )
    )
    return rows


def run() -> list[dict[str, object]]:
    """Run every measurement and return the rows (name, value, unit, goal)."""
    rng = random.Random(20240601)
    return _scrubber_rows(rng) + _scan_rows(rng)


def _print(rows: list[dict[str, object]]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a runtime dependency
        for row in rows:
            print(f"{row['name']:<60} {row['value']:>12} {row['unit']:<9} {row['goal']}")
        return
    table = Table(title="memoryport scrubber / safety benchmark")
    for column in ("name", "value", "unit", "goal"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for row in rows:
        table.add_row(*(str(row[c]) for c in ("name", "value", "unit", "goal")))
    Console().print(table)


if __name__ == "__main__":
    results = run()
    _print(results)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {"python": sys.version.split()[0], "rows": results}
    RESULTS.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
