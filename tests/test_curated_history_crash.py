"""SIGKILL at random points: the history and the live file never disagree in a way that
loses an acknowledged write."""

from __future__ import annotations

import itertools
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from memoryport.providers.curated import CuratedMemory

_WRITER = textwrap.dedent(
    """
    import sys
    from memoryport.providers.curated import CuratedMemory
    home, tag = sys.argv[1], sys.argv[2]
    store = CuratedMemory(home, memory_char_limit=1_000_000, history_max_revisions=1_000_000)
    print("ready", flush=True)
    for number in range(10_000):
        text = f"{tag} entry {number}"
        if number % 7 == 3:
            store.replace("memory", f"{tag} entry {number - 1}", text + " (replaced)")
            text += " (replaced)"
        else:
            store.add("memory", text)
        print("ack " + text, flush=True)  # one write: a kill never tears it
    """
)


def _run_round(home: Path, tag: str, delay: float) -> list[str]:
    """Start two writers, kill both with SIGKILL after ``delay`` s; their acknowledged texts."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(home), f"{tag}{side}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for side in "ab"
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
    acked: list[str] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        # Only whole lines count: a writer killed while printing acknowledged nothing.
        acked.extend(line[4:-1] for line in out.splitlines(keepends=True)
                     if line.startswith("ack ") and line.endswith("\n"))
    return acked


def test_sigkill_never_loses_an_acknowledged_write_or_its_revision(tmp_path: Path) -> None:
    rng = random.Random(1304)
    acked: list[str] = []
    for round_number in range(12):
        acked += _run_round(tmp_path, f"r{round_number}", rng.uniform(0.0, 0.25))
    assert acked, "no write was acknowledged; the test proves nothing"
    store = CuratedMemory(tmp_path, memory_char_limit=1_000_000)
    live = store.path("memory").read_text(encoding="utf-8")
    revisions = store.history("memory")  # parses: a torn last line is skipped
    applied = [r for r in revisions if r.applied]
    # The file is exactly what the last applied revision wrote.
    assert applied and applied[-1].after == live
    # Every acknowledged write is in the file and has an applied revision that wrote it.
    entries = set(store.entries("memory"))
    written = {change["content"] for r in applied for change in r.changes}
    replaced = {c["previous"] for r in applied for c in r.changes if c["action"] == "replace"}
    for text in acked:
        assert text in written, text
        assert text in entries or text in replaced, text
    # The chain is unbroken: each applied revision started from the previous applied one.
    for earlier, later in itertools.pairwise(applied):
        assert later.before == earlier.after, (earlier.rev, later.rev)
    # Revision numbers are unique and increasing; a later writer appends cleanly.
    numbers = [r.rev for r in revisions]
    assert numbers == sorted(set(numbers))
    store.add("memory", "after the storm")
    assert store.history("memory")[-1].before == live


_KILLED_AT_THE_COMMIT = textwrap.dedent(
    """
    import os, signal, sys
    from memoryport.providers.curated import CuratedMemory
    store = CuratedMemory(sys.argv[1])
    store.add("memory", "acknowledged")
    print("ack", flush=True)
    # The process dies exactly after the revision is committed (appended and synced),
    # before the file is replaced: the one point a random kill rarely hits.
    os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
    store.add("memory", "committed")
    print("ack", flush=True)
    """
)


def test_sigkill_between_the_commit_and_the_file_replace_is_rolled_forward(
    tmp_path: Path,
) -> None:
    """The history line is the commit point: a write killed right after it is not lost;
    the next open rolls the file forward to it (and the next write sweeps the temp file)."""
    proc = subprocess.run([sys.executable, "-c", _KILLED_AT_THE_COMMIT, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout.splitlines() == ["ack"]
    path = tmp_path / "memories" / "MEMORY.md"
    assert path.read_text(encoding="utf-8") == "acknowledged"  # the file missed it
    assert [p.name.endswith(".tmp") for p in path.parent.iterdir()].count(True) == 1
    store = CuratedMemory(tmp_path)
    assert path.read_text(encoding="utf-8") == "acknowledged\n§\ncommitted"
    assert [(r.rev, r.applied) for r in store.history("memory")] == [(1, True), (2, True)]
    store.add("memory", "after the crash")
    assert store.entries("memory") == ["acknowledged", "committed", "after the crash"]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
