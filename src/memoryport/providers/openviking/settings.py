"""The ``openviking`` provider's settings: the ``ConfigField`` schema and the checked
values (``config.yaml`` section ``openviking:``; an API key, when the server has auth
enabled, in ``OPENVIKING_API_KEY``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.config.sections import MODES, ModeSwitches, checked_values, mode_field, retry_fields

__all__ = ["API_KEY_ENV", "CONFIG_SCHEMA", "MODES", "Settings"]

API_KEY_ENV = "OPENVIKING_API_KEY"
_ROOT = re.compile(r"^viking://[A-Za-z0-9_./-]+$")

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "api_key", "description": "OpenViking API key (only when the server has auth"
     " enabled).", "secret": True, "env_var": API_KEY_ENV},
    {"key": "endpoint", "description": "Your OpenViking server.", "type": "text",
     "default": "http://127.0.0.1:1933"},
    {"key": "memory_root", "description": "viking:// directory holding memoryport's"
     " memories; the profile and user are appended.", "type": "text",
     "default": "viking://user/memories/memoryport"},
    mode_field(),
    {"key": "recall_limit", "description": "Most entries recalled per turn (each as its"
     " one-line abstract).", "type": "integer", "default": 5, "minimum": 1, "maximum": 50},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1200, "minimum": 100, "maximum": 20000},
    {"key": "capture_turns", "description": "Send completed turns to an OpenViking session"
     " (memories are extracted when the session ends).", "type": "boolean",
     "default": True},
    {"key": "timeout_s", "description": "Seconds one API call may take.", "type": "number",
     "default": 3.0, "minimum": 0.1, "maximum": 300.0},
    *retry_fields("write"),
]
"""The settings ``memoryport setup openviking`` and ``status`` know."""


@dataclass(frozen=True)
class Settings(ModeSwitches):
    """Checked non-secret settings (see :data:`CONFIG_SCHEMA`)."""

    endpoint: str = "http://127.0.0.1:1933"
    memory_root: str = "viking://user/memories/memoryport"
    mode: str = "hybrid"
    recall_limit: int = 5
    recall_chars: int = 1200
    capture_turns: bool = True
    timeout_s: float = 3.0
    retry_attempts: int = 3
    retry_backoff_s: float = 0.5
    retry_cooldown_s: float = 30.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; bad values raise ``ConfigError`` naming every problem."""
        return cls(**checked_values("openviking", CONFIG_SCHEMA, section, _problems))


def _problems(values: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    root = values.get("memory_root")
    if root and not _ROOT.match(str(root)):
        problems.append(f"memory_root: {root!r} is not a viking:// directory")
    return problems
