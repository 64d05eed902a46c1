"""The stress scenarios of issue 9. Each returns an :class:`Outcome` (one table row).

- ``concurrent_adds``: N processes x M curated adds released at once on one home.
- ``kill_loop``: a curated or a session writer SIGKILLed at random points, K times.
- ``first_open``: N processes opening a fresh (absent) home at once, T trials.
- ``disk_full``: a curated or a session writer under a lowered RLIMIT_FSIZE (``ulimit -f``).
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

from benchmarks.stress._common import (
    Outcome,
    Worker,
    acked_curated,
    count_errors,
    prepare_home,
    release,
    session_expectations,
    start_worker,
    timed,
    verify_curated,
    verify_sessions,
)


def _verify(mode: str, home: Path, workers: list[tuple[Worker, str]], out: Outcome) -> None:
    tags = {tag for _, tag in workers}
    if mode in ("curated", "both"):
        acked: set[str] = set()
        for worker, tag in workers:
            acked |= acked_curated(worker, tag)
        verify_curated(home, acked, tags, out)
    if mode in ("session", "both"):
        verify_sessions(home, session_expectations(workers), out)
    out.acknowledged += sum(len(worker.acks) for worker, _ in workers)


def _run_released(mode: str, home: Path, tags: list[str], options: list[str]) -> list[Worker]:
    """Start one worker per tag, wait until all are READY, release them together, drain."""
    workers = [start_worker(mode, home, tag, "--wait-go", *options) for tag in tags]
    for worker in workers:
        worker.read_until(lambda w: w.ready or bool(w.errs))
    release(workers)
    for worker in workers:
        worker.drain()
    return workers


def concurrent_adds(base: Path, processes: int, adds: int) -> Outcome:
    """``processes`` writers x ``adds`` curated adds each, released at the same moment."""
    out = Outcome(f"{processes} processes x {adds} curated adds", runs=processes)
    start = timed()
    home = base / "concurrent-adds"
    prepare_home(home)
    tags = [f"p{n}" for n in range(processes)]
    workers = _run_released("curated", home, tags, ["--count", str(adds)])
    for worker in workers:
        count_errors(worker, out)
        if worker.proc.returncode != 0:
            out.errors += 1
            out.note(f"writer exited with {worker.proc.returncode}")
    _verify("curated", home, list(zip(workers, tags, strict=True)), out)
    out.seconds = timed() - start
    return out


def kill_loop(base: Path, mode: str, kills: int, rng: random.Random) -> Outcome:
    """SIGKILL a ``mode`` writer ``kills`` times after a random number of acknowledged writes."""
    out = Outcome(f"SIGKILL loop, {mode} writer", runs=kills)
    start = timed()
    home = base / f"kill-{mode}"
    prepare_home(home)
    workers: list[tuple[Worker, str]] = []
    for run in range(kills):
        tag = f"k{run}"
        worker = start_worker(mode, home, tag)
        target = rng.randint(1, 25)
        alive = worker.read_until(lambda w, n=target: len(w.acks) >= n or bool(w.errs))
        time.sleep(rng.uniform(0.0, 0.004))  # land inside the next write or two
        worker.proc.send_signal(signal.SIGKILL)
        worker.drain()
        if not alive or worker.errs:
            code = worker.proc.returncode
            out.note(f"run {run}: writer stopped before it was killed (rc {code})")
        count_errors(worker, out)
        workers.append((worker, tag))
    _verify(mode, home, workers, out)
    out.seconds = timed() - start
    return out


def first_open(base: Path, processes: int, trials: int) -> Outcome:
    """``processes`` workers open an absent home at once (then one add, one turn), per trial."""
    out = Outcome(f"{processes}-process first open of a fresh home", runs=trials)
    start = timed()
    failed_trials = 0
    for trial in range(trials):
        home = base / f"first-open-{trial}"
        tags = [f"t{trial}p{n}" for n in range(processes)]
        workers = _run_released("both", home, tags, ["--open-after-go"])
        for worker in workers:
            count_errors(worker, out)
        failed_trials += any(worker.errs for worker in workers)
        _verify("both", home, list(zip(workers, tags, strict=True)), out)
    if failed_trials:
        out.note(f"{failed_trials} of {trials} trials had a worker fail to open or write")
    out.seconds = timed() - start
    return out


def disk_full(base: Path, mode: str, headroom: int, count: int) -> Outcome:
    """A ``mode`` writer whose files may grow only ``headroom`` bytes (EFBIG past that)."""
    out = Outcome(f"disk full (RLIMIT_FSIZE), {mode} store", runs=1, expect_errors=True)
    start = timed()
    home = base / f"disk-full-{mode}"
    prepare_home(home)
    tag = "full"
    worker = start_worker(
        mode, home, tag, "--count", str(count), "--fsize-headroom", str(headroom)
    )
    worker.drain()
    count_errors(worker, out)
    if not worker.errs:
        out.note(
            "no write was refused: the limit was never reached (raise --full-count or lower "
            "the headroom), or failed writes were reported as done (see lost)"
        )
        out.expect_errors = False
    _verify(mode, home, [(worker, tag)], out)
    out.seconds = timed() - start
    return out
