"""Many writer processes, and writers killed with SIGKILL mid-write, never lose an entry.

Children are created with ``os.fork`` (cheap: no interpreter start-up; the suite runs on
POSIX), always leave with ``os._exit`` and report through pipes.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memoryport.providers.curated import CuratedMemory
from memoryport.storage.markdown import parse_entries, render_entries

_BIG = 10**8  # budget raised so that only concurrency, not capacity, is under test


def _fork(body: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 0
        try:
            body()
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def test_eight_processes_times_one_hundred_adds(tmp_path: Path) -> None:
    processes, adds = 8, 100

    def writer(number: int) -> Callable[[], None]:
        def body() -> None:
            store = CuratedMemory(tmp_path, memory_char_limit=_BIG)
            for i in range(adds):
                store.add("memory", f"process {number} wrote entry {i}")

        return body

    pids = [_fork(writer(n)) for n in range(processes)]
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    assert codes == [0] * processes

    store = CuratedMemory(tmp_path, memory_char_limit=_BIG)
    raw = store.path("memory").read_text(encoding="utf-8")
    entries = parse_entries(raw)
    expected = {f"process {n} wrote entry {i}" for n in range(processes) for i in range(adds)}
    assert render_entries(entries) == raw  # parses and round-trips exactly
    assert len(entries) == processes * adds
    assert set(entries) == expected
    for n in range(processes):  # each process's own entries stay in its order
        own = [e for e in entries if e.startswith(f"process {n} ")]
        assert own == [f"process {n} wrote entry {i}" for i in range(adds)]


def _writer_until_killed(home: Path, run: int, ack_fd: int) -> Callable[[], None]:
    def body() -> None:
        store = CuratedMemory(home, memory_char_limit=_BIG)
        i = 0
        while True:
            store.add("memory", f"run {run} item {i}")
            os.write(ack_fd, f"run {run} item {i}\n".encode())  # only after add returned
            i += 1

    return body


def test_sigkill_at_random_points_never_corrupts_or_loses_acked_entries(tmp_path: Path) -> None:
    """Each run waits for a random number of acks, then kills within the next write or two."""
    rng = random.Random(20260527)
    path = CuratedMemory(tmp_path).path("memory")
    acked: list[str] = []
    waited_for = 0
    for run in range(200):
        read_fd, write_fd = os.pipe()
        pid = _fork(_writer_until_killed(tmp_path, run, write_fd))
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as acks:
            wanted = rng.randrange(0, 6)
            for _ in range(wanted):
                acked.append(acks.readline().decode().strip())
            waited_for += wanted
            time.sleep(rng.uniform(0.0, 0.003))
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status), f"run {run}: the writer exited on its own"
            acked.extend(line.decode().strip() for line in acks)

        raw = path.read_text(encoding="utf-8") if path.exists() else ""
        entries = parse_entries(raw)
        assert render_entries(entries) == raw.strip(), f"run {run}: file does not round-trip"
        missing = set(acked) - set(entries)
        assert not missing, f"run {run}: acknowledged entries lost: {sorted(missing)[:5]}"

    assert len(acked) >= waited_for > 0  # the writers made progress before being killed
    survivor = CuratedMemory(tmp_path, memory_char_limit=_BIG)
    survivor.add("memory", "written after the crashes")
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []  # temp files of killed writers were swept
    assert survivor.entries("memory")[-1] == "written after the crashes"


def test_threads_sharing_one_store_never_lose_entries(tmp_path: Path) -> None:
    import threading

    store = CuratedMemory(tmp_path, memory_char_limit=_BIG)

    def writer(number: int) -> None:
        for i in range(50):
            store.add("memory", f"thread {number} entry {i}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = {f"thread {n} entry {i}" for n in range(4) for i in range(50)}
    assert sorted(store.entries("memory")) == sorted(expected)
