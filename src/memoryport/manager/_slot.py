"""``ProviderSlot``: one registered provider with its profile, threads and counters, and
the rules over the list of slots (who may register, the shutdown sequence)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from memoryport.manager._health import ProviderHealth
from memoryport.manager._hooks import ProviderProfile
from memoryport.manager._workers import BackgroundQueue, Lane

__all__ = [
    "RESERVED_PROVIDER_NAMES",
    "ProviderSlot",
    "registration_problem",
    "shutdown_slots",
]

log = logging.getLogger("memoryport.manager")

RESERVED_PROVIDER_NAMES = frozenset({"builtin", "sessions"})
"""Provider names only the library's own built-in provider objects may use."""


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


def registration_problem(
    slots: Sequence[ProviderSlot], name: str, builtin: bool, max_external: int
) -> str:
    """Why a provider called ``name`` may not join ``slots`` ("" when it may)."""
    if any(slot.name == name for slot in slots):
        return "a provider with this name is already registered"
    if not builtin and name in RESERVED_PROVIDER_NAMES:
        return f"the name {name!r} is reserved for memoryport's built-in providers"
    external = sum(1 for slot in slots if not slot.builtin)
    if not builtin and external >= max_external:
        return (
            f"at most {max_external} external provider(s) may be active "
            "(raise memory.max_external_providers to allow more)"
        )
    return ""


def shutdown_slots(
    slots: Sequence[ProviderSlot],
    deadline: float,
    run_with_deadline: Callable[[Callable[[], Any], float], Any],
) -> dict[str, Any]:
    """Drain every queue, then ``shutdown()`` each provider in reverse order, each within
    ``deadline``. Returns ``{"abandoned": {name: items not delivered}, "timed_out": [...]}``."""
    abandoned: dict[str, int] = {}
    timed_out: list[str] = []
    for slot in slots:
        left = slot.queue.drain(deadline) + slot.queue.close()
        if left:
            abandoned[slot.name] = left
            log.warning("provider %r: %d queued item(s) not delivered at shutdown", slot.name, left)
    for slot in reversed(slots):
        if slot.profile.overrides("shutdown"):
            try:
                run_with_deadline(slot.profile.hooks["shutdown"].call, deadline)
            except TimeoutError:
                timed_out.append(slot.name)
                log.warning("provider %r: shutdown exceeded %gs", slot.name, deadline)
            except Exception as exc:
                log.warning("provider %r: shutdown raised %r", slot.name, exc)
        slot.lane.stop()
    return {"abandoned": abandoned, "timed_out": timed_out}
