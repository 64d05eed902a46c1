"""The ``retaindb`` provider's settings: the ``ConfigField`` schema and the checked values
(``config.yaml`` section ``retaindb:``; the API key in ``RETAINDB_API_KEY``, environment
or ``<home>/.env``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.config.sections import MODES, ModeSwitches, checked_values, mode_field, retry_fields

__all__ = ["API_KEY_ENV", "CONFIG_SCHEMA", "MEMORY_TYPES", "MODES", "Settings"]

"""``hybrid``: recall injected and tools; ``context``: recall only; ``tools``: tools only."""

MEMORY_TYPES = ("factual", "preference", "semantic", "procedural", "decision", "constraint",
                "instruction", "goal", "event", "correction", "opinion")
"""RetainDB memory types ``retaindb_remember`` accepts."""

API_KEY_ENV = "RETAINDB_API_KEY"

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "api_key", "description": "RetainDB API key.", "secret": True, "required": True,
     "env_var": API_KEY_ENV, "url": "https://retaindb.com"},
    {"key": "base_url", "description": "API base URL (RetainDB cloud, or your RetainDB"
     " Server).", "type": "text", "default": "https://api.retaindb.com"},
    {"key": "project", "description": "RetainDB project; empty: memoryport-<profile>.",
     "type": "text", "default": ""},
    mode_field(),
    {"key": "top_k", "description": "Most memories recalled per turn.", "type": "integer",
     "default": 5, "minimum": 1, "maximum": 20},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1500, "minimum": 100, "maximum": 20000},
    {"key": "delta", "description": "Send the previous context hash so RetainDB answers"
     " only what changed (unchanged context is not sent again).", "type": "boolean",
     "default": True},
    {"key": "timeout_s", "description": "Seconds one API call may take.", "type": "number",
     "default": 3.0, "minimum": 0.1, "maximum": 60.0},
    *retry_fields("write"),
]
"""The settings ``memoryport setup retaindb`` and ``status`` know."""


@dataclass(frozen=True)
class Settings(ModeSwitches):
    """Checked non-secret settings (see :data:`CONFIG_SCHEMA`)."""

    base_url: str = "https://api.retaindb.com"
    project: str = ""
    mode: str = "hybrid"
    top_k: int = 5
    recall_chars: int = 1500
    delta: bool = True
    timeout_s: float = 3.0
    retry_attempts: int = 3
    retry_backoff_s: float = 0.5
    retry_cooldown_s: float = 30.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section (unknown keys ignored, the key is never read from it);
        bad values raise ``ConfigError`` naming every problem."""
        return cls(**checked_values("retaindb", CONFIG_SCHEMA, section))
