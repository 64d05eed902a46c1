"""The LoCoMo benchmark's holographic backend, scored on a tiny synthetic conversation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import locomo_retrieval as bench  # noqa: E402

CONVERSATION = {
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Toby!"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats, what breed is he?"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "A beagle, very loud."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I started learning the violin."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Toby howls when you practise?"},
        ],
    },
    "qa": [
        {"question": "What did Ana adopt?", "evidence": ["D1:1"], "category": 4},
        {"question": "Which instrument is Ben learning?", "evidence": ["D2:1"], "category": 4},
        {"question": "What breed is Toby?", "evidence": ["D1:1; D1:3"], "category": 1},
        {"question": "Does Ben play drums?", "evidence": ["D2:1"], "category": 5},
        {"question": "No evidence here", "evidence": [], "category": 2},
    ],
}


def test_holographic_backend_scores_the_tiny_conversation(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([CONVERSATION]))
    report = bench.run("holographic", data)
    assert report["cat1-4"]["n"] == 3 and report["cat5"]["n"] == 1
    assert report["cat4"]["recall@1"] == 1.0
    assert report["cat1"]["recall@10"] == 1.0  # "D1:1; D1:3" split into two evidence turns
    assert report["cat5"]["recall@10"] == 1.0
    assert "cat2" not in report  # the item without evidence is not scored
    assert report["ingest_ms_per_turn"]["p50"] > 0
    sessions = bench.run("sessions", data)
    assert sessions["cat1-4"]["n"] == 3 and "ingest_ms_per_turn" not in sessions


def test_scores_are_recall_mrr_and_ndcg() -> None:
    scores = bench._scores(["x", "D1:3", "y", "D1:1"], {"D1:1", "D1:3"})
    assert scores["recall@1"] == 0.0 and scores["recall@5"] == 1.0
    assert scores["mrr"] == 0.5
    assert bench._evidence({"evidence": ["D1:3; D1:4", " D2:1 "]}) == {"D1:3", "D1:4", "D2:1"}


def test_main_runs_both_backends_and_writes_json(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([CONVERSATION]))
    out = tmp_path / "out.json"
    assert bench.main(["--backend", "holographic", "--data", str(data), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["backend"] == "holographic" and report["sessions"]["backend"] == "sessions"
