"""The write lock of one file: exclusive across the threads and processes writing it.

A thread lock, then ``flock`` on the lock file: the lock ``filelock`` takes, so writers
using that library exclude these and the other way round, at a fraction of its cost (no
per-hold bookkeeping: about 10 us instead of 200 us a hold). Where ``fcntl`` is missing
(Windows) it is ``filelock.FileLock``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from pathlib import Path

import filelock

from memoryport._fs import ensure_private_dir

try:
    import fcntl
except ImportError:  # Windows: filelock's own locking
    fcntl = None  # type: ignore[assignment]

__all__ = ["LockTimeout", "WriteLock"]


class LockTimeout(Exception):
    """The lock stayed held by another writer for the whole timeout."""


_LOCKS: weakref.WeakSet[WriteLock] = weakref.WeakSet()


class WriteLock:
    """Exclusive across the threads and processes writing one file: a thread lock, then
    ``flock`` on ``path`` (opened per hold: nothing to leak, nothing shared after a fork).
    Where ``fcntl`` is missing it is ``filelock.FileLock``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._fallback = filelock.FileLock(str(path)) if fcntl is None else None
        _LOCKS.add(self)

    def acquire(self, timeout: float) -> None:
        """Take the lock within ``timeout`` seconds (``LockTimeout``; ``OSError`` when the
        lock file cannot be opened)."""
        if self._fallback is not None:
            try:
                self._fallback.acquire(timeout=timeout, poll_interval=0.001)
            except filelock.Timeout:
                raise LockTimeout from None
            return
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=max(timeout, 0.0)):
            raise LockTimeout
        try:
            fd = self._open()
            try:
                while not _try_flock(fd):
                    if time.monotonic() >= deadline:
                        raise LockTimeout
                    time.sleep(0.001)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        except BaseException:
            self._thread_lock.release()
            raise

    def release(self) -> None:
        """Let the next writer in."""
        if self._fallback is not None:
            self._fallback.release()
            return
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        finally:
            self._thread_lock.release()

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            ensure_private_dir(self.path.parent)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)

    def _forget(self) -> None:
        """In a forked child: the parent's holds are not the child's."""
        self._thread_lock = threading.Lock()
        self._fd = None


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _forget_locks_in_child() -> None:
    for lock in list(_LOCKS):
        lock._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_in_child)
