"""LLM-free retrieval benchmark on LoCoMo (protocol: ../shared/data/README.md).

One index per conversation, one document per dialogue turn (text prefixed with the speaker
name, keyed by dia_id); every QA item queries with its question; ranked dia_ids are scored
against the evidence: recall@1/5/10, MRR, nDCG@10, and latency p50/p95, per category.

    python benchmarks/locomo_retrieval.py --backend sessions [--data PATH] [--json OUT]
    python benchmarks/locomo_retrieval.py --backend holographic [--folds] [--scale 100000]

``--backend holographic`` ingests every turn through the holographic provider's public
path (``sync_turn`` with the session date, speaker and dia_id) and ranks with the turn
index the provider's recall uses; the sessions backend runs beside it in the same run.
``--folds`` fits the turn-index weights on conversations 0-3 and scores 4-6, and the
reverse (the two-fold protocol; category 5 is never used for fitting). ``--scale N``
measures ingest rate, query p95 and bytes per turn at N stored turns.

The data file defaults to ``../shared/data/locomo-dev.json`` next to the repository
(resolved from this file, so any working directory works), or ``$MEMORYPORT_LOCOMO_DATA``.

Backends are entries of ``BACKENDS`` (name -> factory returning a ``RetrievalIndex``);
add one there to compare another retrieval layer on the same protocol.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _locomo_holo as _holo  # noqa: E402  (beside this file)


def default_data() -> Path:
    """``$MEMORYPORT_LOCOMO_DATA``, else ``../shared/data/locomo-dev.json`` beside the repo."""
    env = os.environ.get("MEMORYPORT_LOCOMO_DATA")
    if env:
        return Path(env).expanduser()
    return (REPO.parent / "shared" / "data" / "locomo-dev.json").resolve()


DEFAULT_DATA = default_data()


class RetrievalIndex(Protocol):
    """What a backend provides: index a conversation's turns, rank dia_ids for a query."""

    def add_session(self, started_at: float, turns: list[dict[str, Any]]) -> None:
        """Index one LoCoMo session (turns have speaker, dia_id, text)."""

    def search(self, query: str, k: int) -> list[str]:
        """Return up to ``k`` dia_ids, best first."""

    def close(self) -> None:
        """Release resources."""


class SessionsIndex:
    """The SQLite session store's message-level ranking (the search behind discover)."""

    def __init__(self) -> None:
        from memoryport.storage.sessions.sqlite import SQLiteSessionStore

        self.store = SQLiteSessionStore(":memory:")

    def add_session(self, started_at: float, turns: list[dict[str, Any]]) -> None:
        """One store session per LoCoMo session, one message per turn."""
        session = self.store.create_session(source="import", started_at=started_at)
        self.store.append_messages(
            session.id,
            [
                {
                    "role": "user",
                    "content": _turn_text(t),
                    "timestamp": started_at + i,
                    "metadata": {"dia_id": t["dia_id"], "speaker": t["speaker"]},
                }
                for i, t in enumerate(turns)
            ],
        )

    def search(self, query: str, k: int) -> list[str]:
        """Rank messages with ``search_messages`` and map them back to dia_ids."""
        result = self.store.search_messages(query, limit=k, exclude_sources=())
        return [str(h.message.metadata.get("dia_id")) for h in result.hits]

    def close(self) -> None:
        """Close the store."""
        self.store.close()


def _turn_text(turn: dict[str, Any]) -> str:
    """The indexed text of a turn: speaker-prefixed, plus the image caption if any."""
    text = f"{turn['speaker']}: {turn['text']}"
    if CAPTIONS and turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


CAPTIONS = False
BACKENDS: dict[str, Callable[[], RetrievalIndex]] = {"sessions": SessionsIndex}
BACKENDS["holographic"] = _holo.HolographicIndex


def _session_time(raw: str) -> float:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(raw.strip(), fmt).timestamp()
        except ValueError:
            continue
    return 0.0


def _evidence(item: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for entry in item.get("evidence") or []:
        for part in str(entry).replace(",", ";").split(";"):
            if part.strip():
                out.add(part.strip())
    return out


def _scores(ranked: list[str], gold: set[str]) -> dict[str, float]:
    def recall(k: int) -> float:
        return len(gold & set(ranked[:k])) / len(gold)

    first = next((i for i, d in enumerate(ranked) if d in gold), None)
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in gold)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    return {
        "recall@1": recall(1),
        "recall@5": recall(5),
        "recall@10": recall(10),
        "mrr": 0.0 if first is None else 1 / (first + 1),
        "ndcg@10": dcg / idcg,
    }


def _aggregate(rows: list[tuple[dict[str, float], float]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    keys = ["recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"]
    latencies = sorted(lat for _, lat in rows)
    out: dict[str, Any] = {"n": len(rows)}
    out.update({k: round(statistics.fmean(r[k] for r, _ in rows), 4) for k in keys})
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    out["latency_ms"] = {"p50": round(statistics.median(latencies), 3), "p95": round(p95, 3)}
    return out


def sessions_of(conv: dict[str, Any]) -> list[tuple[float, list[dict[str, Any]]]]:
    """A conversation's sessions in order: (session date, turns)."""
    c = conv["conversation"]
    numbers = sorted(
        int(k.split("_")[1])
        for k in c
        if k.startswith("session_") and k.split("_")[1].isdigit() and isinstance(c[k], list)
    )
    return [
        (_session_time(c.get(f"session_{n}_date_time", "")), c[f"session_{n}"]) for n in numbers
    ]


def run(backend: str, data_path: Path) -> dict[str, Any]:
    """Run the protocol; return the JSON report."""
    data = json.loads(data_path.read_text())
    per_cat: dict[int, list[tuple[dict[str, float], float]]] = {}
    slices: dict[str, list[tuple[dict[str, float], float]]] = {}
    ingest: list[float] = []
    for number, conv in enumerate(data):
        index = BACKENDS[backend]()
        for started_at, turns in sessions_of(conv):
            index.add_session(started_at, turns)
        for item in conv["qa"]:
            gold = _evidence(item)
            if not gold:
                continue
            start = time.perf_counter()
            ranked = index.search(str(item["question"]), 10)
            latency = (time.perf_counter() - start) * 1000
            row = (_scores(ranked, gold), latency)
            per_cat.setdefault(int(item["category"]), []).append(row)
            _slice(slices, number, int(item["category"]), str(item["question"]), row)
        ingest.extend(getattr(index, "ingest_ms", []))
        index.close()
    report: dict[str, Any] = {"backend": backend, "data": str(data_path)}
    if backend == "holographic":
        from memoryport.storage.turns import vectors

        report["embeddings"] = vectors.status()
        from memoryport.providers.holographic.settings import QUERY_VECTORS_DEFAULT

        report["query_vectors"] = _holo.QUERY_VECTORS or QUERY_VECTORS_DEFAULT
    if ingest:
        report["ingest_ms_per_turn"] = _holo.percentiles(ingest)
    report["cat1-4"] = _aggregate([r for c in (1, 2, 3, 4) for r in per_cat.get(c, [])])
    report["all"] = _aggregate([r for rows in per_cat.values() for r in rows])
    for cat in sorted(per_cat):
        report[f"cat{cat}"] = _aggregate(per_cat[cat])
    for key in sorted(slices):
        report[key] = _aggregate(slices[key])
    return report


_NAMES_DATE = re.compile(r"\b(?:19|20)\d\d\b")


def _slice(
    slices: dict[str, list[tuple[dict[str, float], float]]],
    conv: int,
    cat: int,
    question: str,
    row: tuple[dict[str, float], float],
) -> None:
    """Breakdowns: cat 1-4 / 2 / 4 per half (conversations 0-3, 4-6) and the questions
    that name a date (a year), whole and per half."""
    half = "h0-3" if conv < 4 else "h4-6"
    keys = [f"{half}:c1-4"] if cat in (1, 2, 3, 4) else []
    keys += [f"{half}:c{cat}"] if cat in (2, 4) else []
    if cat in (1, 2, 3, 4) and _NAMES_DATE.search(question):
        keys += ["dated", f"{half}:dated"]
    for key in keys:
        slices.setdefault(key, []).append(row)


def _print(report: dict[str, Any]) -> None:
    print(f"backend: {report['backend']}"
          + (f" (dense vectors: {report['embeddings']})" if "embeddings" in report else ""))
    print(
        f"{'slice':11} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'nDCG':>6} "
        f"{'p50ms':>7} {'p95ms':>7}"
    )
    for key, row in report.items():
        if not isinstance(row, dict) or "n" not in row or not row["n"]:
            continue
        lat = row["latency_ms"]
        print(
            f"{key:11} {row['n']:>5} {row['recall@1']:>6.3f} {row['recall@5']:>6.3f} "
            f"{row['recall@10']:>6.3f} {row['mrr']:>6.3f} {row['ndcg@10']:>6.3f} "
            f"{lat['p50']:>7.2f} {lat['p95']:>7.2f}"
        )


def _run_postgres(backend: str, data: Path, dsn: str, scale: int = 0) -> dict[str, Any]:
    """``run`` with the provider's stores on PostgreSQL (as an ordinary role, so row-level
    security applies), and on SQLite beside it under ``"sqlite"``."""
    import _locomo_pg

    with _locomo_pg.postgres_dsn(dsn) as server_dsn:
        _holo.STORAGE_DSN = server_dsn
        try:
            report = run(backend, data)
        finally:
            _holo.STORAGE_DSN = ""
        if scale:
            report["scale_postgres"] = _locomo_pg.scale(
                json.loads(data.read_text()), sessions_of, scale, server_dsn)
            print("scale (postgres):", json.dumps(report["scale_postgres"]))
    report["storage"] = "postgres"
    report["sqlite"] = run(backend, data)
    return report


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sessions")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument("--folds", action="store_true", help="two-fold weight fit (holographic)")
    parser.add_argument("--scale", type=int, default=0, help="also measure at N stored turns")
    parser.add_argument("--storage", choices=("sqlite", "postgres"), default="sqlite",
                        help="holographic: where its stores live (postgres: SQLite beside it)")
    parser.add_argument("--dsn", default="", help="--storage postgres: this server "
                        "(default: start the distribution's PostgreSQL for the run)")
    parser.add_argument("--query-vectors", choices=("table", "model"), default="",
                        help="holographic: its query_vectors setting (model: MiniLM embeds "
                        "each question; default: the provider's default)")
    args = parser.parse_args(argv)
    _holo.QUERY_VECTORS = args.query_vectors
    if not args.data.is_file():
        parser.error(
            f"LoCoMo data file not found: {args.data}. Pass --data PATH or set "
            "MEMORYPORT_LOCOMO_DATA (the default is ../shared/data/locomo-dev.json "
            "relative to the repository)."
        )
    if args.storage == "postgres":
        report = _run_postgres(args.backend, args.data, args.dsn, args.scale)
    else:
        report = run(args.backend, args.data)
    _print(report)
    if "ingest_ms_per_turn" in report:
        print(f"ingest ms per turn: {report['ingest_ms_per_turn']}")
    if "sqlite" in report:
        print("the same on SQLite, same run:")
        _print(report["sqlite"])
        print(f"ingest ms per turn: {report['sqlite'].get('ingest_ms_per_turn')}")
    if args.backend != "sessions":
        report["sessions"] = run("sessions", args.data)
        _print(report["sessions"])
    if args.folds:
        report["folds"] = _holo.folds(json.loads(args.data.read_text()), sessions_of, _evidence)
        _holo.print_folds(report["folds"])
    if args.scale:
        report["scale"] = _holo.scale(json.loads(args.data.read_text()), sessions_of, args.scale)
        print("scale:", json.dumps(report["scale"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
