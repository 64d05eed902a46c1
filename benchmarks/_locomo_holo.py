"""The holographic backend of ``locomo_retrieval.py``: ingest through the provider,
two-fold weight fitting on the turn index's signals, and the 100k-turn scale run."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from memoryport.providers.holographic.provider import HolographicProvider
from memoryport.storage.turns import Components, TurnIndex, TurnInput, Weights
from memoryport.storage.turns.rank import LIST_KEEP

GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
"""Values the fit tries for each weight (``main`` stays 1: the scale)."""
HALVES = ((0, 1, 2, 3), (4, 5, 6))
"""Conversation indexes of the two folds."""
STORAGE_DSN = ""
"""``--storage postgres``: the database the provider's stores use (empty: SQLite files)."""
QUERY_VECTORS = ""
"""``--query-vectors``: the provider's ``query_vectors`` setting (``table`` or ``model``;
empty: not set, the provider's default)."""


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 / p95 (milliseconds) of ``values``."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3)}


class HolographicIndex:
    """One provider home per conversation; turns go in through ``sync_turn``."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="locomo-holo-")
        home = Path(self._tmp.name)
        config, user = "holographic:\n  recall_turns: 10\n", ""
        if QUERY_VECTORS:
            config += f"  query_vectors: {QUERY_VECTORS}\n"
        if STORAGE_DSN:  # --storage postgres: one user (BM25 scope) per conversation
            config += f"storage:\n  backend: postgres\n  dsn: {json.dumps(STORAGE_DSN)}\n"
            user = uuid.uuid4().hex
        (home / "config.yaml").write_text(config)
        self.provider = HolographicProvider()
        self.provider.initialize("locomo", home=home, platform="bench", user_id=user)
        self.ingest_ms: list[float] = []
        self._sessions = 0
        self._flushed = False

    def add_session(self, started_at: float, turns: list[dict[str, Any]]) -> None:
        """Each turn through ``sync_turn`` with its speaker, the session date and dia_id."""
        self._sessions += 1
        for turn in turns:
            start = time.perf_counter()
            self.provider.sync_turn(
                str(turn["text"]), "", session_id=f"s{self._sessions}",
                timestamp=started_at, speaker=str(turn["speaker"]), source_id=str(turn["dia_id"]),
            )
            self.ingest_ms.append((time.perf_counter() - start) * 1000)

    def search(self, query: str, k: int) -> list[str]:
        """The turns of the provider's recall (``recall_items``), as dia_ids (once the
        background writer has stored every turn's vector, when there is a model)."""
        turns = self.provider.turns
        if not self._flushed and turns is not None:
            self._flushed = turns.flush_vectors(600)
        _, hits = self.provider.recall_items(query)
        return [h.source_id for h in hits[:k]]

    def close(self) -> None:
        """Shut the provider down and remove its home."""
        self.provider.shutdown()
        self._tmp.cleanup()


Item = tuple[int, int, set[str], list[str], list[Components]]


def _collect(data: list[dict[str, Any]], sessions_of: Callable[..., Any],
             evidence: Callable[..., set[str]]) -> list[Item]:
    """(conversation, category, gold, candidate dia_ids, signals) for every question."""
    items: list[Item] = []
    with tempfile.TemporaryDirectory() as tmp:
        for ci, conv in enumerate(data):
            index = TurnIndex(Path(tmp) / f"c{ci}.db")
            for n, (started, turns) in enumerate(sessions_of(conv)):
                index.add_turns([TurnInput(f"s{n}", str(t["speaker"]), str(t["text"]), started,
                                           str(t["dia_id"])) for t in turns])
            index.flush_vectors(600)
            for qa in conv["qa"]:
                gold = evidence(qa)
                if gold:
                    rows, parts = index.candidates(str(qa["question"]))
                    items.append((ci, int(qa["category"]), gold, [r[6] for r in rows], parts))
            index.close()
    return items


def _matrix(parts: list[Components]) -> Any:
    """A question's signals, each column divided by its best value (as ``combine``)."""
    import numpy as np

    raw = np.array([list(p) for p in parts], dtype=np.float64).reshape(len(parts), -1)
    best = raw.max(axis=0) if len(parts) else np.zeros(0)
    return np.where(best > 0, raw / np.where(best > 0, best, 1.0), 0.0), raw[:, :1]


_PREPARED: dict[int, tuple[Any, Any, Any]] = {}
_LISTED = [f.name for f in fields(Weights)].index("listed")


def _scores(normed: Any, main: Any, vector: Any) -> Any:
    """A question's combined scores (``combine_columns``): the weighted sum, and the
    ``listed`` signal moving only the candidates after the ``LIST_KEEP`` best without it."""
    import numpy as np

    weight = vector[_LISTED]
    listed = normed[:, _LISTED]
    if not weight or not listed.any():
        return normed @ vector
    base = normed @ np.where(np.arange(len(vector)) == _LISTED, 0.0, vector)
    out = base + weight * listed
    kept = np.lexsort((np.arange(len(base)), -main[:, 0], -base))[:LIST_KEEP]
    others = np.delete(out, kept)
    if len(others):
        out[kept] = base[kept] + max(0.0, float(others.max() - base[kept].min())) + 1e-6
    return out


def _recall(items: list[Item], weights: Weights) -> tuple[float, float]:
    """Mean recall@5 and recall@10 of ``items`` ranked with ``weights`` (numpy: the same
    order as ``combine`` then best score, then the turn's own BM25, then position)."""
    import numpy as np

    vector = np.array([getattr(weights, f.name) for f in fields(Weights)], dtype=np.float64)
    r5 = r10 = 0.0
    for item in items:
        _, _, gold, ids, parts = item
        if not parts:
            continue
        prepared = _PREPARED.get(id(item))
        if prepared is None or prepared[0] is not item:
            prepared = _PREPARED[id(item)] = (item, *_matrix(parts))
        _, normed, main = prepared
        scores = _scores(normed, main, vector)
        order = np.lexsort((np.arange(len(ids)), -main[:, 0], -scores))[:10]
        top = [ids[i] for i in order.tolist()]
        r5 += len(gold & set(top[:5])) / len(gold)
        r10 += len(gold & set(top)) / len(gold)
    n = max(1, len(items))
    return r5 / n, r10 / n


def fit(items: list[Item]) -> Weights:
    """Coordinate ascent of R@5 + R@10 over :data:`GRID`, two passes, from the defaults."""
    weights = Weights()
    best = sum(_recall(items, weights))
    for _ in range(2):
        for f in fields(Weights):
            if f.name == "main":
                continue
            for value in GRID:
                trial = replace(weights, **{f.name: value})
                score = sum(_recall(items, trial))
                if score > best + 1e-9:
                    best, weights = score, trial
    return weights


def folds(data: list[dict[str, Any]], sessions_of: Callable[..., Any],
          evidence: Callable[..., set[str]]) -> dict[str, Any]:
    """Weights fitted on each half (categories 1-4) and scored on the other, per category."""
    items = _collect(data, sessions_of, evidence)
    out: dict[str, Any] = {}
    scored: dict[int, list[tuple[float, float]]] = {}
    for train, test in ((HALVES[0], HALVES[1]), (HALVES[1], HALVES[0])):
        weights = fit([i for i in items if i[0] in train and i[1] <= 4])
        name = f"fit_{''.join(map(str, train))}_score_{''.join(map(str, test))}"
        held = [i for i in items if i[0] in test]
        out[name] = {"weights": weights.__dict__,
                     "cat1-4": _recall([i for i in held if i[1] <= 4], weights)}
        for cat in (1, 2, 3, 4, 5):
            rows = [i for i in held if i[1] == cat]
            scored.setdefault(cat, []).extend(_recall([i], weights) for i in rows)
    for cat, rows in sorted(scored.items()):
        out[f"all7_cat{cat}"] = _mean(rows)
    out["all7_cat1-4"] = _mean([r for c in (1, 2, 3, 4) for r in scored.get(c, [])])
    return out


def _mean(rows: list[tuple[float, float]]) -> dict[str, float]:
    return {"n": len(rows), "recall@5": round(statistics.fmean(r[0] for r in rows), 4),
            "recall@10": round(statistics.fmean(r[1] for r in rows), 4)}


def print_folds(report: dict[str, Any]) -> None:
    """The two-fold table."""
    for key, value in report.items():
        print(f"{key}: {value}")


def ingest_repeated(index: Any, sessions: list[Any], total: int) -> tuple[int, float]:
    """Give ``index`` ``total`` turns: the dev sessions repeated under new session ids
    (``c0``, ``c1``, ...; 40 users), one ``add_turns`` per turn. Returns (turns stored,
    seconds spent inside ``add_turns``)."""
    stored, copy, spent = 0, 0, 0.0
    while stored < total:
        for started, turns in sessions:
            for t in turns[: total - stored]:
                row = TurnInput(f"c{copy}", str(t["speaker"]), str(t["text"]), started,
                                str(t["dia_id"]), f"u{copy % 40}")
                start = time.perf_counter()
                index.add_turns([row])
                spent += time.perf_counter() - start
                stored += 1
            copy += 1
            if stored >= total:
                break
    return stored, spent


def scale(
    data: list[dict[str, Any]], sessions_of: Callable[..., Any], total: int
) -> dict[str, Any]:
    """Store ``total`` turns (the dev turns repeated under new session ids, 40 users) in one
    file, one ``add_turns`` per turn; report ingest rate, query p95 and bytes per turn."""
    sessions = [s for conv in data for s in sessions_of(conv)]
    questions = [str(qa["question"]) for conv in data for qa in conv["qa"]][:300]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.db"
        index = TurnIndex(path)
        stored, spent = ingest_repeated(index, sessions, total)
        start = time.perf_counter()
        index.flush_vectors()
        vectors_s = time.perf_counter() - start
        latencies = []
        for n, q in enumerate(questions):
            start = time.perf_counter()
            index.search(q, limit=10, user_id=f"u{n % 40}")
            latencies.append((time.perf_counter() - start) * 1000)
        index.close()
        size = sum(p.stat().st_size for p in Path(tmp).iterdir() if p.name.startswith("scale"))
    return {"turns": stored, "ingest_turns_per_s": round(stored / spent),
            "ingest_ms_per_turn": round(spent * 1000 / stored, 3),
            "query_ms": percentiles(latencies), "bytes_per_turn": round(size / stored),
            "vectors_wait_s": round(vectors_s, 1),
            "cpus": os.cpu_count()}
