"""Shared pieces of the stress scenarios: starting workers, reading their lines, verifying.

A scenario's figures are always the same five: *acknowledged* (writes a worker reported
as done before it exited or was killed), *stored* (the scenario's writes a fresh
``memoryport.open`` reads back), *lost* (acknowledged but not stored), *corrupt* (a store
that fails to open or parse, or a stored text that is not exactly one that was written,
or an entry stored twice) and *errors* (writes or opens that failed visibly).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from benchmarks.stress.worker import PAD, curated_text, turn_texts

import memoryport
from memoryport.errors import SessionNotFound

REPO = Path(__file__).resolve().parents[2]
WORKER_TIMEOUT_S = 120.0
_CURATED = re.compile(r"^(?P<tag>\S+) entry (?P<i>\d+)" + re.escape(PAD) + "$")
_TURN = re.compile(r"^(?P<tag>\S+) (?P<role>user|assistant) (?P<i>\d+)" + re.escape(PAD) + "$")


@dataclass
class Outcome:
    """One scenario's figures (one row of the table)."""

    scenario: str
    runs: int = 0
    acknowledged: int = 0
    stored: int = 0
    lost: int = 0
    corrupt: int = 0
    errors: int = 0
    seconds: float = 0.0
    expect_errors: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """0 lost, 0 corrupt, and errors only where the scenario provokes them."""
        clean = self.lost == 0 and self.corrupt == 0 and self.acknowledged > 0
        return clean and (self.expect_errors or self.errors == 0)

    def row(self) -> dict[str, Any]:
        """The table row."""
        return {
            "scenario": self.scenario,
            "runs": self.runs,
            "acknowledged": self.acknowledged,
            "stored": self.stored,
            "lost": self.lost,
            "corrupt": self.corrupt,
            "errors": self.errors,
            "seconds": round(self.seconds, 1),
            "result": "ok" if self.ok else "FAIL",
        }

    def to_json(self) -> dict[str, Any]:
        """The JSON record: the row plus notes."""
        data = asdict(self)
        data.pop("expect_errors")
        return {**data, "ok": self.ok, "seconds": round(self.seconds, 2)}

    def note(self, text: str, limit: int = 8) -> None:
        """Keep the first few distinct notes (error messages, mismatches)."""
        if text not in self.notes and len(self.notes) < limit:
            self.notes.append(text)


@dataclass
class Worker:
    """A running worker process and what it has said so far."""

    proc: subprocess.Popen[str]
    acks: list[dict[str, Any]] = field(default_factory=list)
    errs: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    ready: bool = False
    done: bool = False

    def feed(self, line: str) -> None:
        """Record one protocol line."""
        kind, _, rest = line.strip().partition(" ")
        payload = json.loads(rest) if rest else {}
        if kind == "ACK":
            self.acks.append(payload)
        elif kind == "ERR":
            self.errs.append(payload)
        elif kind == "SESSION":
            self.sessions.append(payload["session"])
        elif kind == "READY":
            self.ready = True
        elif kind == "DONE":
            self.done = True

    def read_until(self, predicate: Any) -> bool:
        """Read lines until ``predicate(self)`` holds (True) or the stream ends (False)."""
        stream = _stdout(self.proc)
        while not predicate(self):
            line = stream.readline()
            if not line:
                return False
            self.feed(line)
        return True

    def drain(self) -> None:
        """Read the rest of stdout (after an exit or a kill) and reap the process."""
        for line in _stdout(self.proc):
            self.feed(line)
        self.proc.wait(timeout=WORKER_TIMEOUT_S)


def _stdout(proc: subprocess.Popen[str]) -> IO[str]:
    assert proc.stdout is not None
    return proc.stdout


def start_worker(mode: str, home: Path, tag: str, *options: str) -> Worker:
    """Start ``python -m benchmarks.stress.worker`` from the repository root."""
    command = [sys.executable, "-m", "benchmarks.stress.worker", mode, str(home), tag, *options]
    proc = subprocess.Popen(
        command,
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
    )
    return Worker(proc)


def release(workers: list[Worker]) -> None:
    """Send the go line to workers started with ``--wait-go`` (all at once)."""
    for worker in workers:
        assert worker.proc.stdin is not None
        worker.proc.stdin.write("go\n")
        worker.proc.stdin.flush()


def prepare_home(home: Path, *, big_budget: bool = True) -> None:
    """Create and migrate ``home`` once, with a curated budget capacity never limits."""
    home.mkdir(parents=True, exist_ok=True)
    if big_budget:
        (home / "config.yaml").write_text("memory:\n  memory_char_limit: 1000000\n")
    with memoryport.open(home, platform="cli", load_provider=False):
        pass


def verify_curated(home: Path, acked: set[str], tags: set[str], out: Outcome) -> None:
    """Fresh open; count stored, lost and corrupt curated entries written by ``tags``."""
    try:
        with memoryport.open(home, platform="cli", load_provider=False) as memory:
            assert memory.curated is not None and memory.curated.store is not None
            entries = memory.curated.store.entries("memory")
    except Exception as exc:
        out.corrupt += 1
        out.note(f"curated store does not open: {type(exc).__name__}: {exc}")
        return
    seen: set[str] = set()
    for entry in entries:
        match = _CURATED.match(entry)
        if match is None or match["tag"] not in tags:
            out.corrupt += 1
            out.note(f"unexpected entry: {entry[:80]!r}")
        elif entry in seen:
            out.corrupt += 1
            out.note(f"entry stored twice: {entry[:40]!r}")
        else:
            seen.add(entry)
    out.stored += len(seen)
    missing = acked - seen
    out.lost += len(missing)
    for entry in sorted(missing)[:3]:
        out.note(f"acknowledged but not stored: {entry[:40]!r}")


def acked_curated(worker: Worker, tag: str) -> set[str]:
    """The curated entries ``worker`` acknowledged."""
    return {curated_text(tag, ack["i"]) for ack in worker.acks if "session" not in ack}


def acked_turns(worker: Worker, tag: str) -> dict[str, set[int]]:
    """The turns ``worker`` acknowledged, by session id."""
    turns: dict[str, set[int]] = {}
    for ack in worker.acks:
        if "session" in ack:
            turns.setdefault(ack["session"], set()).add(ack["i"])
    return turns


def verify_sessions(
    home: Path, expected: dict[str, tuple[str, set[int]]], out: Outcome
) -> None:
    """Fresh open; ``expected`` maps session id -> (writer tag, acknowledged turn numbers)."""
    try:
        memory = memoryport.open(home, platform="cli", load_provider=False)
    except Exception as exc:
        out.corrupt += 1
        out.note(f"session store does not open: {type(exc).__name__}: {exc}")
        return
    with memory:
        for session_id, (tag, acked) in expected.items():
            _verify_session(memory, session_id, tag, acked, out)


def _verify_session(
    memory: memoryport.Memory, session_id: str, tag: str, acked: set[int], out: Outcome
) -> None:
    try:
        messages = memory.sessions.get_messages(session_id)
    except SessionNotFound:
        messages = []
    except Exception as exc:
        out.corrupt += 1
        out.note(f"session {session_id} unreadable: {type(exc).__name__}: {exc}")
        return
    stored: dict[int, set[str]] = {}
    for message in messages:
        match = _TURN.match(message.content or "")
        if match is None or match["tag"] != tag or match["role"] != message.role:
            out.corrupt += 1
            out.note(f"unexpected message: {message.role} {str(message.content)[:60]!r}")
            continue
        stored.setdefault(int(match["i"]), set()).add(message.role)
    complete = {i for i, roles in stored.items() if roles == {"user", "assistant"}}
    if len(complete) != len(stored):
        out.note(f"session {session_id}: a turn stored without its other half")
        out.corrupt += len(stored) - len(complete)
    out.stored += len(complete)
    missing = acked - complete
    out.lost += len(missing)
    if missing:
        out.note(f"session {session_id}: acknowledged turns not stored: {len(missing)}")


def session_expectations(workers: list[tuple[Worker, str]]) -> dict[str, tuple[str, set[int]]]:
    """Session id -> (tag, acknowledged turns) over every worker, sessions with 0 acks too."""
    expected: dict[str, tuple[str, set[int]]] = {}
    for worker, tag in workers:
        for session_id in worker.sessions:
            expected.setdefault(session_id, (tag, set()))
        for session_id, turns in acked_turns(worker, tag).items():
            expected.setdefault(session_id, (tag, set()))[1].update(turns)
    return expected


def count_errors(worker: Worker, out: Outcome) -> None:
    """Add a worker's refused writes and a non-zero exit to ``errors`` (with notes)."""
    out.errors += len(worker.errs)
    for err in worker.errs[:2]:
        out.note(str(err.get("error", err))[:200])


def timed() -> float:
    """A monotonic clock reading (for the seconds column)."""
    return time.monotonic()


__all__ = [
    "PAD",
    "REPO",
    "Outcome",
    "Worker",
    "acked_curated",
    "acked_turns",
    "count_errors",
    "prepare_home",
    "release",
    "session_expectations",
    "start_worker",
    "timed",
    "turn_texts",
    "verify_curated",
    "verify_sessions",
]
