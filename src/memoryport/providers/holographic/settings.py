"""The ``holographic`` provider's settings: the ``ConfigField`` schema and the parsed,
checked values (``config.yaml`` section ``holographic:``, or ``memory.holographic:``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField, validate_config
from memoryport.errors import ConfigError

__all__ = ["CONFIG_SCHEMA", "MODES", "Settings"]

MODES = ("hybrid", "context", "tools")
"""``hybrid``: recall injected and tools; ``context``: recall only; ``tools``: tools only."""

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "mode", "description": "hybrid (recall + tools), context (recall only) or tools"
     " (tools only).", "type": "text", "default": "hybrid", "choices": list(MODES)},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1200, "minimum": 100, "maximum": 20000},
    {"key": "recall_facts", "description": "Most facts recalled per turn.", "type": "integer",
     "default": 6, "minimum": 0, "maximum": 50},
    {"key": "recall_turns", "description": "Most past turns recalled per turn.",
     "type": "integer", "default": 6, "minimum": 0, "maximum": 50},
    {"key": "recall_floor", "description": "Past turns scoring under this fraction of the"
     " best turn's score are not recalled (0 keeps all recall_turns).", "type": "number",
     "default": 0.0, "minimum": 0.0, "maximum": 1.0},
    {"key": "auto_extract", "description": "Extract durable facts from turns, compression"
     " and session end.", "type": "boolean", "default": True},
    {"key": "default_trust", "description": "Trust of a new fact (0-1).", "type": "number",
     "default": 0.5, "minimum": 0.0, "maximum": 1.0},
    {"key": "min_trust", "description": "Facts under this trust are hidden from recall"
     " (still listed).", "type": "number", "default": 0.3, "minimum": 0.0, "maximum": 1.0},
]
"""The settings ``memoryport setup`` and ``status`` know (``get_config_schema``)."""


@dataclass(frozen=True)
class Settings:
    """Checked settings (see :data:`CONFIG_SCHEMA` for meanings and defaults)."""

    mode: str = "hybrid"
    recall_chars: int = 1200
    recall_facts: int = 6
    recall_turns: int = 6
    recall_floor: float = 0.0
    auto_extract: bool = True
    default_trust: float = 0.5
    min_trust: float = 0.3

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; unknown keys are ignored, bad values raise
        ``ConfigError`` naming every problem."""
        known = {str(f["key"]) for f in CONFIG_SCHEMA}
        values = {k: v for k, v in section.items() if k in known and v not in (None, "")}
        problems = validate_config(CONFIG_SCHEMA, values)
        if problems:
            raise ConfigError(
                "holographic settings are invalid: " + "; ".join(problems)
                + " (fix them with: memoryport config set holographic.<key> <value>)",
                problems,
            )
        return cls(**values)

    @property
    def inject(self) -> bool:
        """True when recall is injected each turn."""
        return self.mode in ("hybrid", "context")

    @property
    def tools(self) -> bool:
        """True when the tools are offered."""
        return self.mode in ("hybrid", "tools")
