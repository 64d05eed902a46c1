"""Checked ranges and choices of settings beyond their declared types (``config set``
and loading ``config.yaml`` apply them)."""

from __future__ import annotations

from typing import Any

__all__ = ["AGENT_NOTES_MODES", "CONSTRAINTS", "MAXIMA", "SECTION_KEY_TYPES"]

AGENT_NOTES_MODES = ("shared", "per_user")
"""Where ``MEMORY.md`` lives: one file for every user (``shared``, the reference
behaviour) or one per user next to that user's ``USER.md`` (``per_user``)."""

# Extra constraints checked after the type: (choices, minimum).
CONSTRAINTS: dict[str, tuple[tuple[str, ...] | None, float | None]] = {
    "memory.memory_char_limit": (None, 1),
    "memory.user_char_limit": (None, 1),
    "memory.agent_notes": (AGENT_NOTES_MODES, None),
    "memory.max_external_providers": (None, 0),
    "memory.prefetch_deadline_s": (None, 0),
    "memory.context_budget_chars": (None, 0),
    "memory.nudge_interval": (None, 0),
    "memory.history_max_age_days": (None, 0),
    "memory.history_max_revisions": (None, 1),
    "sessions.backend": (("sqlite", "postgres"), None),
    "storage.backend": (("sqlite", "postgres"), None),
    "agent.compression_threshold_chars": (None, 1),
    "agent.max_tool_iterations": (None, 1),
    "plugins.timeout_s": (None, 0.001),
}

# Keys with a declared type inside sections that are not blocks (the rest of such a
# section, e.g. ``plugins.entries``, is free-form like a provider section).
SECTION_KEY_TYPES: dict[str, type[Any]] = {
    "plugins.enabled": list,
    "plugins.timeout_s": float,
}

# Largest value of each numeric setting (the smallest is in CONSTRAINTS).
MAXIMA: dict[str, float] = {
    "memory.memory_char_limit": 1_000_000,
    "memory.user_char_limit": 1_000_000,
    "memory.max_external_providers": 64,
    "memory.prefetch_deadline_s": 600,
    "memory.context_budget_chars": 1_000_000,
    "memory.nudge_interval": 100_000,
    "memory.history_max_age_days": 36_500,
    "memory.history_max_revisions": 1_000_000,
    "agent.compression_threshold_chars": 100_000_000,
    "agent.max_tool_iterations": 1_000,
    "plugins.timeout_s": 3600,
}
