"""The ``retaindb`` provider's settings: the ``ConfigField`` schema and the checked values
(``config.yaml`` section ``retaindb:``; the API key in ``RETAINDB_API_KEY``, environment
or ``<home>/.env``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField, validate_config
from memoryport.errors import ConfigError

__all__ = ["API_KEY_ENV", "CONFIG_SCHEMA", "MEMORY_TYPES", "MODES", "Settings"]

MODES = ("hybrid", "context", "tools")
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
    {"key": "mode", "description": "hybrid (recall + tools), context (recall only) or tools"
     " (tools only).", "type": "text", "default": "hybrid", "choices": list(MODES)},
    {"key": "top_k", "description": "Most memories recalled per turn.", "type": "integer",
     "default": 5, "minimum": 1, "maximum": 20},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1500, "minimum": 100, "maximum": 20000},
    {"key": "delta", "description": "Send the previous context hash so RetainDB answers"
     " only what changed (unchanged context is not sent again).", "type": "boolean",
     "default": True},
    {"key": "timeout_s", "description": "Seconds one API call may take.", "type": "number",
     "default": 3.0, "minimum": 0.1, "maximum": 60.0},
    {"key": "retry_attempts", "description": "Attempts per queued write before it waits for"
     " the next write.", "type": "integer", "default": 3, "minimum": 1, "maximum": 10},
    {"key": "retry_backoff_s", "description": "First retry delay (doubles each attempt).",
     "type": "number", "default": 0.5, "minimum": 0.0, "maximum": 30.0},
    {"key": "retry_cooldown_s", "description": "After a failed round, seconds before writes"
     " wait through backoff again.", "type": "number", "default": 30.0, "minimum": 0.0,
     "maximum": 3600.0},
]
"""The settings ``memoryport setup retaindb`` and ``status`` know."""


@dataclass(frozen=True)
class Settings:
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
        schema = [f for f in CONFIG_SCHEMA if not f.get("secret")]
        known = {str(f["key"]) for f in schema}
        values = {k: v for k, v in section.items() if k in known and v not in (None, "")}
        problems = validate_config(schema, values)
        if problems:
            raise ConfigError("retaindb settings are invalid: " + "; ".join(problems)
                              + " (fix them with: memoryport setup retaindb --set KEY=VALUE)",
                              problems)
        return cls(**values)

    @property
    def inject(self) -> bool:
        """True when recall is injected each turn."""
        return self.mode in ("hybrid", "context")

    @property
    def tools(self) -> bool:
        """True when the tools are offered."""
        return self.mode in ("hybrid", "tools")
