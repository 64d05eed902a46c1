"""The ``hindsight`` provider's settings: the ``ConfigField`` schema and the checked values
(``config.yaml`` section ``hindsight:``; the key, when the server needs one, in
``HINDSIGHT_API_KEY``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from memoryport.config.schema import ConfigField
from memoryport.config.sections import MODES, ModeSwitches, checked_values, mode_field, retry_fields

__all__ = ["API_KEY_ENV", "BUDGETS", "CONFIG_SCHEMA", "MODES", "PREFETCH_METHODS", "Settings"]

API_KEY_ENV = "HINDSIGHT_API_KEY"
BUDGETS = ("low", "mid", "high")
PREFETCH_METHODS = ("recall", "reflect")
_BANK = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "api_key", "description": "Hindsight API key (Hindsight cloud; leave empty for a"
     " local server without auth).", "secret": True, "env_var": API_KEY_ENV,
     "url": "https://hindsight.vectorize.io"},
    {"key": "api_url", "description": "Hindsight API URL (cloud, or your local/self-hosted"
     " server such as http://localhost:8888).", "type": "text",
     "default": "https://api.hindsight.vectorize.io"},
    {"key": "bank_id", "description": "Memory bank prefix; empty: memoryport-<profile> (the"
     " user id is appended: one bank per profile and user).", "type": "text", "default": ""},
    mode_field("memory_mode"),
    {"key": "auto_retain", "description": "Retain every completed turn.", "type": "boolean",
     "default": True},
    {"key": "retain_async", "description": "Ask the server to process retains in the"
     " background.", "type": "boolean", "default": False},
    {"key": "prefetch_method", "description": "recall (memories) or reflect (a synthesized"
     " answer; slower) for the turn's context.", "type": "text", "default": "recall",
     "choices": list(PREFETCH_METHODS)},
    {"key": "recall_budget", "description": "Search effort: low, mid or high.", "type": "text",
     "default": "mid", "choices": list(BUDGETS)},
    {"key": "recall_max_tokens", "description": "Token limit of what recall returns.",
     "type": "integer", "default": 1024, "minimum": 64, "maximum": 16384},
    {"key": "recall_max_input_chars", "description": "The query sent to recall is cut to"
     " this many characters (input limit).", "type": "integer", "default": 800,
     "minimum": 32, "maximum": 20000},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1500, "minimum": 100, "maximum": 20000},
    {"key": "timeout_s", "description": "Seconds one API call may take.", "type": "number",
     "default": 3.0, "minimum": 0.1, "maximum": 300.0},
    *retry_fields("retain"),
]
"""The settings ``memoryport setup hindsight`` and ``status`` know."""


@dataclass(frozen=True)
class Settings(ModeSwitches):
    """Checked non-secret settings (see :data:`CONFIG_SCHEMA`)."""

    MODE_KEY: ClassVar[str] = "memory_mode"
    api_url: str = "https://api.hindsight.vectorize.io"
    bank_id: str = ""
    memory_mode: str = "hybrid"
    auto_retain: bool = True
    retain_async: bool = False
    prefetch_method: str = "recall"
    recall_budget: str = "mid"
    recall_max_tokens: int = 1024
    recall_max_input_chars: int = 800
    recall_chars: int = 1500
    timeout_s: float = 3.0
    retry_attempts: int = 3
    retry_backoff_s: float = 0.5
    retry_cooldown_s: float = 30.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; bad values raise ``ConfigError`` naming every problem."""
        return cls(**checked_values("hindsight", CONFIG_SCHEMA, section, _problems))


def _problems(values: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    bank = values.get("bank_id")
    if bank and not _BANK.match(str(bank)):
        problems.append(f"bank_id: {bank!r} is not a bank id (letters, digits, _ . : -)")
    return problems
