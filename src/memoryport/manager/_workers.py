"""The threads the manager runs provider hooks on.

- ``Lane``: one daemon thread per provider for calls the caller waits on with a deadline
  (prefetch, pre-compress, tool calls). FIFO; a call stuck in a provider keeps the lane
  busy, which the manager sees (``stuck_since``) and skips instead of queueing behind it.
- ``BackgroundQueue``: one ordered, bounded queue and daemon thread per provider for
  fire-and-forget hooks (sync_turn, queue_prefetch, on_memory_write, ...). Turn N is
  delivered before turn N+1; a full queue drops its oldest item with a warning;
  ``drain(timeout)`` waits until everything queued has run.
- ``LoopThread``: one asyncio event loop on its own thread for ``async def`` hooks.

None of these objects refers to the manager, so a discarded manager can be collected.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any

__all__ = [
    "MAX_RESULT_CHARS",
    "BackgroundQueue",
    "Lane",
    "LoopThread",
    "coerce_text",
    "resolve",
    "run_with_deadline",
    "timed",
]

MAX_RESULT_CHARS = 262_144
"""Provider text results are cut to this size before any further processing."""

log = logging.getLogger("memoryport.manager")

Task = Callable[[], Any]


class LoopThread:
    """An asyncio event loop running forever on a daemon thread."""

    def __init__(self, name: str = "memoryport-async") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> Future[Any]:
        """Schedule ``coro`` on the loop; returns a thread-safe future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Stop the loop (pending tasks are cancelled) and let the thread end."""
        if self.loop.is_closed():
            return

        def _cancel_all() -> None:
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.stop()

        self.loop.call_soon_threadsafe(_cancel_all)
        self._thread.join(timeout=2.0)


def resolve(value: Any, loop_getter: Callable[[], LoopThread | None]) -> Any:
    """Run ``value`` to completion on the event loop if it is awaitable; return it otherwise.

    ``loop_getter`` is only called for awaitables, so sync hooks never touch the loop.
    """
    if not inspect.isawaitable(value):
        return value
    loop = loop_getter()
    if loop is None:
        raise RuntimeError("an async hook was called but no event loop thread is running")

    async def _await() -> Any:
        return await value

    return loop.submit(_await()).result()


class Lane:
    """A FIFO worker thread for deadline-bound calls into one provider."""

    def __init__(self, name: str, loop_getter: Callable[[], LoopThread | None]) -> None:
        self._queue: queue.SimpleQueue[tuple[Task, Future[Any]] | None] = queue.SimpleQueue()
        self._loop_getter = loop_getter
        self._running_since: float | None = None
        self._pending = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"mp-lane-{name}", daemon=True)
        self._thread.start()

    def submit(self, task: Task) -> Future[Any]:
        """Queue ``task``; the future holds its result or exception."""
        future: Future[Any] = Future()
        with self._lock:
            self._pending += 1
        self._queue.put((task, future))
        return future

    def stuck_since(self) -> float | None:
        """Monotonic time the current call started, if a call is running or queued."""
        with self._lock:
            if self._pending == 0:
                return None
            return self._running_since if self._running_since is not None else time.monotonic()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            task, future = item
            with self._lock:
                self._running_since = time.monotonic()
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(resolve(task(), self._loop_getter))
                    except BaseException as exc:
                        future.set_exception(exc)
            finally:
                with self._lock:
                    self._pending -= 1
                    self._running_since = None

    def stop(self) -> None:
        """Ask the thread to end after the calls already queued."""
        self._queue.put(None)


class BackgroundQueue:
    """An ordered, bounded, fire-and-forget queue with one worker thread."""

    def __init__(
        self,
        name: str,
        maxsize: int,
        loop_getter: Callable[[], LoopThread | None],
        on_error: Callable[[str, BaseException, float], None],
        on_done: Callable[[str, float], None],
    ) -> None:
        self.name = name
        self._items: collections.deque[tuple[str, Task]] = collections.deque()
        self._maxsize = maxsize
        self._cond = threading.Condition()
        self._busy = False
        self._stopped = False
        self.dropped = 0
        self._loop_getter = loop_getter
        self._on_error = on_error
        self._on_done = on_done
        self._thread = threading.Thread(target=self._run, name=f"mp-queue-{name}", daemon=True)
        self._thread.start()

    def put(self, hook: str, task: Task) -> None:
        """Queue ``task`` for ``hook``; never blocks. A full queue drops its oldest item."""
        with self._cond:
            if self._stopped:
                log.warning("provider %s: %s arrived after shutdown; dropped", self.name, hook)
                self.dropped += 1
                return
            if len(self._items) >= self._maxsize:
                old_hook, _ = self._items.popleft()
                self.dropped += 1
                log.warning(
                    "provider %s: background queue full (%d); dropped the oldest %s",
                    self.name,
                    self._maxsize,
                    old_hook,
                )
            self._items.append((hook, task))
            self._cond.notify()

    @property
    def pending(self) -> int:
        """Items queued or running."""
        with self._cond:
            return len(self._items) + (1 if self._busy else 0)

    def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` s for the queue to empty; return how many items remain."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._items or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return len(self._items) + (1 if self._busy else 0)

    def close(self) -> int:
        """Refuse new items, discard what is left (after a drain), stop the thread."""
        with self._cond:
            self._stopped = True
            abandoned = len(self._items)
            self._items.clear()
            self._cond.notify_all()
            return abandoned

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._stopped:
                    self._cond.wait()
                if not self._items:
                    return
                hook, task = self._items.popleft()
                self._busy = True
            started = time.perf_counter()
            try:
                resolve(task(), self._loop_getter)
                self._on_done(hook, time.perf_counter() - started)
            except BaseException as exc:
                self._on_error(hook, exc, time.perf_counter() - started)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


def run_with_deadline(
    fn: Callable[[], Any], deadline: float, loop_getter: Callable[[], LoopThread | None]
) -> Any:
    """Run ``fn`` on a one-off daemon thread and wait at most ``deadline`` seconds.

    A coroutine result is run on the loop. Raises ``TimeoutError`` when the deadline passes
    (the thread is abandoned, not killed) and re-raises whatever ``fn`` raised.
    """
    future: Future[Any] = Future()

    def target() -> None:
        try:
            future.set_result(resolve(fn(), loop_getter))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=target, name="mp-oneoff", daemon=True).start()
    return future.result(timeout=deadline)


def coerce_text(value: Any, what: str) -> str:
    """Turn a provider's text result into ``str``; raise TypeError for unusable types."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", errors="replace")
    if not isinstance(value, str):
        raise TypeError(f"{what} returned {type(value).__name__}, expected str")
    return value[:MAX_RESULT_CHARS]


def timed(
    loop_getter: Callable[[], LoopThread | None], fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[Any, float]:
    """Call ``fn`` (running a coroutine result on the loop) and return ``(result, seconds)``."""
    started = time.perf_counter()
    result = resolve(fn(*args, **kwargs), loop_getter)
    return result, time.perf_counter() - started
