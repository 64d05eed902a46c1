"""``ManagerSettings``: the deadlines and limits of the manager's threading contract."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ManagerSettings"]


@dataclass(frozen=True)
class ManagerSettings:
    """Deadlines and limits of the threading contract (seconds unless named otherwise)."""

    prefetch_deadline_s: float = 5.0
    pre_compress_deadline_s: float = 120.0
    shutdown_deadline_s: float = 15.0
    tool_deadline_s: float = 60.0
    init_deadline_s: float = 30.0
    max_external_providers: int = 1
    breaker_threshold: int = 3
    breaker_cooldown_s: float = 30.0
    queue_maxsize: int = 10_000
