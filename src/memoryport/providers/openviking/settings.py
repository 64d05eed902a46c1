"""The ``openviking`` provider's settings: the ``ConfigField`` schema and the checked
values (``config.yaml`` section ``openviking:``; an API key, when the server has auth
enabled, in ``OPENVIKING_API_KEY``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField, validate_config
from memoryport.errors import ConfigError

__all__ = ["API_KEY_ENV", "CONFIG_SCHEMA", "MODES", "Settings"]

API_KEY_ENV = "OPENVIKING_API_KEY"
MODES = ("hybrid", "context", "tools")
_ROOT = re.compile(r"^viking://[A-Za-z0-9_./-]+$")

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "api_key", "description": "OpenViking API key (only when the server has auth"
     " enabled).", "secret": True, "env_var": API_KEY_ENV},
    {"key": "endpoint", "description": "Your OpenViking server.", "type": "text",
     "default": "http://127.0.0.1:1933"},
    {"key": "memory_root", "description": "viking:// directory holding memoryport's"
     " memories; the profile and user are appended.", "type": "text",
     "default": "viking://user/memories/memoryport"},
    {"key": "mode", "description": "hybrid (recall + tools), context (recall only) or tools"
     " (tools only).", "type": "text", "default": "hybrid", "choices": list(MODES)},
    {"key": "recall_limit", "description": "Most entries recalled per turn (each as its"
     " one-line abstract).", "type": "integer", "default": 5, "minimum": 1, "maximum": 50},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn.", "type": "integer", "default": 1200, "minimum": 100, "maximum": 20000},
    {"key": "capture_turns", "description": "Send completed turns to an OpenViking session"
     " (memories are extracted when the session ends).", "type": "boolean",
     "default": True},
    {"key": "timeout_s", "description": "Seconds one API call may take.", "type": "number",
     "default": 3.0, "minimum": 0.1, "maximum": 300.0},
    {"key": "retry_attempts", "description": "Attempts per queued write.", "type": "integer",
     "default": 3, "minimum": 1, "maximum": 10},
    {"key": "retry_backoff_s", "description": "First retry delay (doubles each attempt).",
     "type": "number", "default": 0.5, "minimum": 0.0, "maximum": 30.0},
    {"key": "retry_cooldown_s", "description": "After a failed round, seconds before writes"
     " wait through backoff again.", "type": "number", "default": 30.0, "minimum": 0.0,
     "maximum": 3600.0},
]
"""The settings ``memoryport setup openviking`` and ``status`` know."""


@dataclass(frozen=True)
class Settings:
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
        schema = [f for f in CONFIG_SCHEMA if not f.get("secret")]
        known = {str(f["key"]) for f in schema}
        values = {k: v for k, v in section.items() if k in known and v not in (None, "")}
        problems = validate_config(schema, values)
        root = values.get("memory_root")
        if root and not _ROOT.match(str(root)):
            problems.append(f"memory_root: {root!r} is not a viking:// directory")
        if problems:
            raise ConfigError("openviking settings are invalid: " + "; ".join(problems)
                              + " (fix them with: memoryport setup openviking --set"
                              " KEY=VALUE)", problems)
        return cls(**values)

    @property
    def inject(self) -> bool:
        """True when recall is injected each turn."""
        return self.mode in ("hybrid", "context")

    @property
    def tools(self) -> bool:
        """True when the tools are offered."""
        return self.mode in ("hybrid", "tools")
