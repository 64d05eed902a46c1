"""``ProviderSlot``: one registered provider with its profile, threads and counters."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from memoryport.manager._health import ProviderHealth
from memoryport.manager._hooks import ProviderProfile
from memoryport.manager._workers import BackgroundQueue, Lane

__all__ = ["ProviderSlot"]

log = logging.getLogger("memoryport.manager")


@dataclass
class ProviderSlot:
    """A registered provider: what the manager learned about it, its lane, queue and health."""

    provider: Any
    name: str
    builtin: bool
    profile: ProviderProfile
    lane: Lane
    queue: BackgroundQueue
    health: ProviderHealth
    initialized: bool = False
    missed_streak_logged: bool = False

    def stuck_before(self, mark: float) -> bool:
        """True when the lane still runs a call submitted before ``mark`` (monotonic time)."""
        since = self.lane.stuck_since()
        return since is not None and since < mark

    def record_success(self) -> None:
        """A deadline-bound call finished in time: close the breaker, re-arm the miss log."""
        self.health.breaker.record_success()
        self.missed_streak_logged = False

    def record_miss(self, hook: str, why: str) -> None:
        """A deadline-bound call was missed: count it, log the first of a streak, maybe trip."""
        opened = self.health.breaker.record_miss()
        if not self.missed_streak_logged:
            log.warning("provider %r left out of this %s: %s", self.name, hook, why)
            self.missed_streak_logged = True
        if opened:
            log.warning(
                "provider %r: %d consecutive misses; skipping it for %.0fs",
                self.name,
                self.health.breaker.consecutive_misses,
                self.health.breaker.cooldown_s,
            )

    def lane_callback(self, hook: str, started: float) -> Callable[[Future[Any]], None]:
        """A future callback recording the outcome of a fire-and-forget lane call."""

        def done(future: Future[Any]) -> None:
            exc = future.exception()
            if exc is None:
                self.health.ok(hook, time.perf_counter() - started)
            else:
                self.health.error(hook, exc, time.perf_counter() - started)
                log.warning("provider %r: %s raised %r", self.name, hook, exc)

        return done
