"""The ``byterover`` provider's settings: the ``ConfigField`` schema and the checked
values (``config.yaml`` section ``byterover:``; the optional cloud key in ``BRV_API_KEY``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.config.sections import MODES, ModeSwitches, checked_values, mode_field, retry_fields

__all__ = ["API_KEY_ENV", "CONFIG_SCHEMA", "MODES", "QUERY_METHODS", "Settings"]

API_KEY_ENV = "BRV_API_KEY"
QUERY_METHODS = ("search", "query")

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "api_key", "description": "ByteRover cloud key (optional: local use needs"
     " none).", "secret": True, "env_var": API_KEY_ENV, "url": "https://byterover.dev"},
    {"key": "brv_path", "description": "The brv executable (npm install -g byterover-cli).",
     "type": "text", "default": "brv"},
    {"key": "project_dir", "description": "Where the knowledge trees live; empty:"
     " <home>/byterover (one project per user below it).", "type": "text", "default": ""},
    mode_field(),
    {"key": "recall_method", "description": "search (BM25, no LLM, fast) or query (an LLM"
     " answer; slower) for the turn's recall.", "type": "text", "default": "search",
     "choices": list(QUERY_METHODS)},
    {"key": "recall_limit", "description": "Most tree entries recalled per turn.",
     "type": "integer", "default": 5, "minimum": 1, "maximum": 50},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1500, "minimum": 100, "maximum": 20000},
    {"key": "curate_turns", "description": "Also curate every completed turn (each curate"
     " may cost an LLM call).", "type": "boolean", "default": False},
    {"key": "compress_chars", "description": "Most characters of the messages about to be"
     " compressed that are curated as one insight.", "type": "integer", "default": 4000,
     "minimum": 200, "maximum": 100000},
    {"key": "timeout_s", "description": "Seconds a recall/status run of brv may take (keep"
     " it under memory.prefetch_deadline_s).", "type": "number", "default": 4.0,
     "minimum": 0.1, "maximum": 300.0},
    {"key": "curate_timeout_s", "description": "Seconds a curate run may take.",
     "type": "number", "default": 60.0, "minimum": 0.1, "maximum": 900.0},
    *retry_fields("curate"),
]
"""The settings ``memoryport setup byterover`` and ``status`` know."""


@dataclass(frozen=True)
class Settings(ModeSwitches):
    """Checked non-secret settings (see :data:`CONFIG_SCHEMA`)."""

    brv_path: str = "brv"
    project_dir: str = ""
    mode: str = "hybrid"
    recall_method: str = "search"
    recall_limit: int = 5
    recall_chars: int = 1500
    curate_turns: bool = False
    compress_chars: int = 4000
    timeout_s: float = 4.0
    curate_timeout_s: float = 60.0
    retry_attempts: int = 3
    retry_backoff_s: float = 0.5
    retry_cooldown_s: float = 30.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; bad values raise ``ConfigError`` naming every problem."""
        return cls(**checked_values("byterover", CONFIG_SCHEMA, section))
