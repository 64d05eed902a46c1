"""Shared helpers for the benchmark scripts: percentiles, a table, a JSON file."""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` percentile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def summary_us(samples: Sequence[float]) -> dict[str, float]:
    """p50/p99/mean of second-valued samples, in microseconds."""
    return {
        "p50_us": round(percentile(samples, 0.50) * 1e6, 2),
        "p95_us": round(percentile(samples, 0.95) * 1e6, 2),
        "p99_us": round(percentile(samples, 0.99) * 1e6, 2),
        "mean_us": round(statistics.fmean(samples) * 1e6, 2) if samples else 0.0,
    }


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    """Print rows as an aligned plain-text table."""
    if not rows:
        return
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print(f"\n{title}")
    print("  ".join(c.ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for row in rows:
        print("  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))


def write_json(name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plus machine info) to ``benchmarks/results/<name>.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **payload,
    }
    path.write_text(json.dumps(payload, indent=2))
    return path
