"""Hermes import and export/import round trip at scale: msg/s, peak RSS, archive size.

Run: .venv/bin/python benchmarks/bench_migrate.py [--messages 1000000] [--per-session 50]
     [--dir PATH] [--keep]
Builds a Hermes-layout ``state.db`` (July schema 21: every ``sessions`` / ``messages``
column, the inline ``messages_fts`` index and its insert trigger) with N messages in
sessions of ``--per-session`` messages (a tenth of them compression children of the one
before), then, each step in a fresh child process so its peak RSS is its own:

1. ``migrate_hermes`` into an empty home (goal: >= 20,000 messages/s, bounded memory);
2. the same again (idempotence: imports nothing);
3. ``export_home`` of that home (archive size vs the Hermes ``state.db``);
4. ``import_archive`` of the archive into another empty home;

and the round trip (3 + 4: time, peak RSS, archive size vs ``state.db``).

Each step reports wall seconds and the CPU seconds of its process (on a shared machine
the wall clock mostly measures the other load); the import also reports the CPU and peak
RSS of its reader process (which reads one batch ahead of the writer, on the other core:
on two idle cores the import's wall time is about the larger of the two CPU figures).
Prints a table and writes ``benchmarks/results/bench_migrate.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import print_table, write_json

_TEXT = (
    "the deploy pipeline runs tests on every push to main and the staging cluster uses "
    "rust python postgres redis kafka lisbon flight hotel meeting tuesday budget review "
    "refactor parser memory provider session search index trigram unicode error retry "
    "timeout latency cache invalidation token model prompt agent tool call result"
)
_WORDS = _TEXT.split(" ")

SCHEMA = """
CREATE TABLE schema_version (version INTEGER);
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, session_key TEXT, chat_id TEXT,
    chat_type TEXT, thread_id TEXT, display_name TEXT, origin_json TEXT,
    expiry_finalized INTEGER DEFAULT 0, model TEXT, model_config TEXT, system_prompt TEXT,
    parent_session_id TEXT REFERENCES sessions(id), started_at REAL NOT NULL, ended_at REAL,
    end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0, cwd TEXT, git_branch TEXT, git_repo_root TEXT,
    billing_provider TEXT, billing_base_url TEXT, billing_mode TEXT, estimated_cost_usd REAL,
    actual_cost_usd REAL, cost_status TEXT, cost_source TEXT, pricing_version TEXT,
    title TEXT, api_call_count INTEGER DEFAULT 0, handoff_state TEXT, handoff_platform TEXT,
    handoff_error TEXT, compression_failure_cooldown_until REAL,
    compression_failure_error TEXT, compression_fallback_streak INTEGER DEFAULT 0,
    rewind_count INTEGER DEFAULT 0, archived INTEGER DEFAULT 0);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    effect_disposition TEXT, timestamp REAL NOT NULL, token_count INTEGER,
    finish_reason TEXT, reasoning TEXT, reasoning_content TEXT, reasoning_details TEXT,
    codex_reasoning_items TEXT, codex_message_items TEXT, platform_message_id TEXT,
    observed INTEGER, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
CREATE INDEX idx_sessions_source ON sessions(source);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX idx_sessions_started ON sessions(started_at);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE VIRTUAL TABLE messages_fts USING fts5(content);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, COALESCE(new.content, '') || ' '
    || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, ''));
END;
"""


def _messages(n: int, per: int, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    start = 1_700_000_000.0
    for i in range(n):
        session = i // per
        role = ("user", "assistant")[i % 2]
        text = " ".join(rng.choices(_WORDS, k=rng.randint(8, 60)))
        calls = None
        if role == "assistant" and i % 10 == 1:
            calls = json.dumps([{"id": f"c{i}", "type": "function",
                                 "function": {"name": "search", "arguments": "{}"}}])
        yield (f"s{session:07d}", role, text, calls, start + i * 7.0, len(text) // 4,
               "stop" if role == "assistant" else None)  # fmt: skip


def build_state_db(path: Path, messages: int, per_session: int, seed: int = 7) -> None:
    """A Hermes schema-21 ``state.db`` with ``messages`` messages."""
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_version VALUES (21)")
    sessions = (messages + per_session - 1) // per_session
    conn.executemany(
        "INSERT INTO sessions (id, source, user_id, model, parent_session_id, started_at,"
        " ended_at, title, input_tokens, cwd) VALUES (?,?,?,?,?,?,?,?,?,?)",
        ((f"s{s:07d}", ("cli", "telegram", "cron")[s % 3], "ana", "model-x",
          f"s{s - 1:07d}" if s % 10 == 5 else None, 1_700_000_000.0 + s * per_session * 7.0,
          1_700_000_000.0 + (s + 1) * per_session * 7.0, f"Session {s}", s, "projects/ana")
         for s in range(sessions)),
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, tool_calls, timestamp,"
        " token_count, finish_reason) VALUES (?,?,?,?,?,?,?)",
        _messages(messages, per_session, rng),
    )
    conn.commit()
    conn.close()


def child(step: str, args: list[str]) -> dict[str, Any]:
    """Run one step in this script as a fresh process; returns its JSON result."""
    out = subprocess.run(
        [sys.executable, __file__, "--step", step, *args],
        capture_output=True, text=True, check=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def run_step(step: str, a: str, b: str) -> dict[str, Any]:
    """The child side: one timed step; prints JSON with seconds and peak RSS."""
    from memoryport.admin.archive import export_home, import_archive
    from memoryport.admin.migrate import HermesOptions, migrate_hermes

    started = time.perf_counter()
    detail: dict[str, Any] = {}
    if step == "hermes":
        report = migrate_hermes(Path(b), HermesOptions(source=Path(a), profiles=False))
        detail = dict(report.counts)
    elif step == "export":
        detail = {"sessions": export_home(Path(a), Path(b))["sessions"]}
    elif step == "import":
        detail = dict(import_archive(Path(b), Path(a)).counts)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    reader = resource.getrusage(resource.RUSAGE_CHILDREN)  # the import's reader process
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "main_thread_cpu_seconds": round(time.thread_time(), 2),
            "reader_process_cpu_seconds": round(reader.ru_utime + reader.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "reader_peak_rss_mb": round(reader.ru_maxrss / 1024, 1), **detail}


def main() -> None:
    """Parse options, build, run each step in a child, print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--per-session", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None, help="work directory")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--hermes-db", type=Path, default=None,
                        help="use this Hermes state.db (read only) instead of building one")
    parser.add_argument("--step", default=None, help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(run_step(args.step, *args.paths)))
        return
    work = Path(tempfile.mkdtemp(prefix="bench-migrate-", dir=args.dir))
    try:
        hermes, home, copy = work / "hermes", work / "home", work / "copy"
        hermes.mkdir()
        started = time.perf_counter()
        if args.hermes_db is not None:
            (hermes / "state.db").symlink_to(args.hermes_db.resolve())
            with sqlite3.connect(f"file:{args.hermes_db}?mode=ro", uri=True) as conn:
                args.messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        else:
            build_state_db(hermes / "state.db", args.messages, args.per_session)
        build_s = time.perf_counter() - started
        db_mb = (hermes / "state.db").stat().st_size / 1e6
        first = child("hermes", [str(hermes), str(home)])
        again = child("hermes", [str(hermes), str(home)])
        archive = work / "home.zip"
        exported = child("export", [str(home), str(archive)])
        imported = child("import", [str(archive), str(copy)])
        report(args, build_s, db_mb, first, again, exported, imported, archive)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report(args: argparse.Namespace, build_s: float, db_mb: float, first: dict[str, Any],
           again: dict[str, Any], exported: dict[str, Any], imported: dict[str, Any],
           archive: Path) -> None:  # fmt: skip
    """Print the table and write the JSON."""
    n = args.messages
    archive_mb = archive.stat().st_size / 1e6
    round_trip = {"seconds": round(exported["seconds"] + imported["seconds"], 2),
                  "cpu": round(exported["cpu_seconds"] + imported["cpu_seconds"], 2),
                  "peak_rss_mb": max(exported["peak_rss_mb"], imported["peak_rss_mb"]),
                  "archive_vs_state_db": round(archive_mb / db_mb, 3)}  # fmt: skip
    rows = [
        {"step": "build Hermes state.db", "seconds": round(build_s, 1), "msg/s": "",
         "msg/CPU-s": "", "peak RSS MB": "", "note": f"{db_mb:.1f} MB"},
        {"step": "migrate hermes", "seconds": first["seconds"],
         "msg/s": round(n / first["seconds"]), "msg/CPU-s": round(n / first["cpu_seconds"]),
         "peak RSS MB": first["peak_rss_mb"],
         "note": f"{first.get('messages', 0)} imported; CPU s writer "
                 f"{first['cpu_seconds']}, reader process "
                 f"{first['reader_process_cpu_seconds']} (peak RSS "
                 f"{first['reader_peak_rss_mb']} MB)"},
        {"step": "migrate hermes again", "seconds": again["seconds"], "msg/s": "",
         "msg/CPU-s": "", "peak RSS MB": again["peak_rss_mb"],
         "note": f"{again.get('messages', 0)} imported (idempotent)"},
        {"step": "export", "seconds": exported["seconds"],
         "msg/s": round(n / exported["seconds"]),
         "msg/CPU-s": round(n / exported["cpu_seconds"]), "peak RSS MB": exported["peak_rss_mb"],
         "note": f"archive {archive_mb:.1f} MB = {archive_mb / db_mb:.2f} x state.db"},
        {"step": "import archive", "seconds": imported["seconds"],
         "msg/s": round(n / imported["seconds"]),
         "msg/CPU-s": round(n / imported["cpu_seconds"]), "peak RSS MB": imported["peak_rss_mb"],
         "note": f"{imported.get('messages', 0)} messages"},
        {"step": "round trip (export + import)", "seconds": round_trip["seconds"],
         "msg/s": round(n / round_trip["seconds"]), "msg/CPU-s": round(n / round_trip["cpu"]),
         "peak RSS MB": round_trip["peak_rss_mb"],
         "note": f"archive {archive_mb:.1f} MB vs state.db {db_mb:.1f} MB"},
    ]  # fmt: skip
    print_table(f"Hermes import and export/import round trip, {n:,} messages", rows)
    path = write_json("bench_migrate", {
        "messages": n, "per_session": args.per_session, "state_db_mb": round(db_mb, 1),
        "archive_mb": round(archive_mb, 1), "build_s": round(build_s, 1),
        "migrate": first, "migrate_again": again, "export": exported, "import": imported,
        "round_trip": round_trip, "load_average": [round(x, 2) for x in os.getloadavg()],
        "goal_msg_s": 20_000, "rows": rows,
    })  # fmt: skip
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
