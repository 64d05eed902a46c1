"""Per-provider, per-hook counters and the prefetch circuit breaker."""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CircuitBreaker", "HookStats", "ProviderHealth"]

log = logging.getLogger("memoryport.manager")

_LATENCY_WINDOW = 512


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


@dataclass
class HookStats:
    """Counters for one hook of one provider."""

    calls: int = 0
    errors: int = 0
    timeouts: int = 0
    skipped: int = 0
    latencies: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=_LATENCY_WINDOW)
    )
    last_error: str = ""

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready view: counts and p50/p95 latency in milliseconds."""
        ordered = sorted(self.latencies)
        return {
            "calls": self.calls,
            "errors": self.errors,
            "timeouts": self.timeouts,
            "skipped": self.skipped,
            "p50_ms": round(_percentile(ordered, 0.50) * 1000, 3),
            "p95_ms": round(_percentile(ordered, 0.95) * 1000, 3),
            "last_error": self.last_error,
        }


class CircuitBreaker:
    """Skips a provider after ``threshold`` consecutive deadline misses, for ``cooldown_s``.

    After the cool-down one call is let through (half-open); a success closes the breaker,
    another miss opens it again.
    """

    def __init__(self, threshold: int, cooldown_s: float) -> None:
        self.threshold = max(1, threshold)
        self.cooldown_s = cooldown_s
        self.consecutive_misses = 0
        self.open_until = 0.0
        self.times_opened = 0

    def allow(self, now: float | None = None) -> bool:
        """True when a call may be attempted now."""
        return (now if now is not None else time.monotonic()) >= self.open_until

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half-open``."""
        if self.consecutive_misses < self.threshold:
            return "closed"
        return "open" if time.monotonic() < self.open_until else "half-open"

    def record_success(self) -> None:
        """A call finished in time: close the breaker."""
        self.consecutive_misses = 0
        self.open_until = 0.0

    def record_miss(self) -> bool:
        """A call missed its deadline; returns True when this miss opened the breaker."""
        self.consecutive_misses += 1
        if self.consecutive_misses >= self.threshold:
            self.open_until = time.monotonic() + self.cooldown_s
            self.times_opened += 1
            return True
        return False


class ProviderHealth:
    """All counters of one provider, safe to update from several threads."""

    def __init__(self, breaker: CircuitBreaker) -> None:
        self._lock = threading.Lock()
        self._hooks: dict[str, HookStats] = {}
        self.breaker = breaker

    def _stats(self, hook: str) -> HookStats:
        stats = self._hooks.get(hook)
        if stats is None:
            stats = self._hooks[hook] = HookStats()
        return stats

    def ok(self, hook: str, seconds: float) -> None:
        """Record a successful call and its latency."""
        with self._lock:
            stats = self._stats(hook)
            stats.calls += 1
            stats.latencies.append(seconds)

    def error(self, hook: str, exc: BaseException, seconds: float) -> None:
        """Record a call that raised (or returned something unusable)."""
        with self._lock:
            stats = self._stats(hook)
            stats.calls += 1
            stats.errors += 1
            stats.latencies.append(seconds)
            stats.last_error = f"{type(exc).__name__}: {exc}"[:300]

    def error_logged(self, provider: str) -> Callable[[str, BaseException, float], None]:
        """An ``error`` recorder that also logs a warning naming ``provider`` and the hook."""

        def record(hook: str, exc: BaseException, seconds: float) -> None:
            log.warning("provider %r: %s raised %r", provider, hook, exc)
            self.error(hook, exc, seconds)

        return record

    def timeout(self, hook: str) -> None:
        """Record a call that missed its deadline."""
        with self._lock:
            stats = self._stats(hook)
            stats.calls += 1
            stats.timeouts += 1

    def skip(self, hook: str) -> None:
        """Record a call that was not attempted (breaker open, or provider still busy)."""
        with self._lock:
            self._stats(hook).skipped += 1

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready view of every hook plus the breaker."""
        with self._lock:
            hooks = {name: stats.snapshot() for name, stats in sorted(self._hooks.items())}
        return {
            "hooks": hooks,
            "breaker": {
                "state": self.breaker.state,
                "consecutive_misses": self.breaker.consecutive_misses,
                "times_opened": self.breaker.times_opened,
            },
        }
