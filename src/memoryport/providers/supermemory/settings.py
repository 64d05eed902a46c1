"""The ``supermemory`` provider's settings: the ``ConfigField`` schema and the checked
values (``config.yaml`` section ``supermemory:``; the key in ``SUPERMEMORY_API_KEY``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.config.sections import checked_values, retry_fields

__all__ = ["API_KEY_ENV", "CAPTURE_MODES", "CONFIG_SCHEMA", "SEARCH_MODES", "Settings"]

API_KEY_ENV = "SUPERMEMORY_API_KEY"
SEARCH_MODES = ("hybrid", "memories", "chunks")
CAPTURE_MODES = ("all", "user")
_CONTAINER = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "api_key", "description": "Supermemory API key.", "secret": True,
     "required": True, "env_var": API_KEY_ENV, "url": "https://console.supermemory.ai"},
    {"key": "base_url", "description": "API base URL.", "type": "text",
     "default": "https://api.supermemory.ai"},
    {"key": "container_tag", "description": "Namespace prefix; empty: memoryport-<profile>"
     " (the user id is appended either way).", "type": "text", "default": ""},
    {"key": "custom_containers", "description": "Extra containers the tools may name,"
     " comma-separated (multi-container mode), e.g. work,health.", "type": "text",
     "default": ""},
    {"key": "auto_recall", "description": "Recall memories into each turn.",
     "type": "boolean", "default": True},
    {"key": "auto_capture", "description": "Capture completed turns and sessions.",
     "type": "boolean", "default": True},
    {"key": "capture_mode", "description": "all (user and assistant) or user (user"
     " messages only).", "type": "text", "default": "all", "choices": list(CAPTURE_MODES)},
    {"key": "search_mode", "description": "hybrid (memories and chunks), memories or"
     " chunks.", "type": "text", "default": "memories", "choices": list(SEARCH_MODES)},
    {"key": "max_recall_results", "description": "Most memories recalled per turn.",
     "type": "integer", "default": 5, "minimum": 1, "maximum": 50},
    {"key": "include_profile", "description": "Add the user's profile facts to the"
     " recall.", "type": "boolean", "default": True},
    {"key": "entity_context", "description": "Who the memories are about, sent as"
     " supporting context with every capture.", "type": "text", "default": ""},
    {"key": "recall_chars", "description": "Character budget of the recall.",
     "type": "integer", "default": 1500, "minimum": 100, "maximum": 20000},
    {"key": "tools", "description": "Offer the supermemory_* tools.", "type": "boolean",
     "default": True},
    {"key": "timeout_s", "description": "Seconds one API call may take.", "type": "number",
     "default": 3.0, "minimum": 0.1, "maximum": 60.0},
    *retry_fields("write"),
]
"""The settings ``memoryport setup supermemory`` and ``status`` know."""


@dataclass(frozen=True)
class Settings:
    """Checked non-secret settings (see :data:`CONFIG_SCHEMA`)."""

    base_url: str = "https://api.supermemory.ai"
    container_tag: str = ""
    custom_containers: str = ""
    auto_recall: bool = True
    auto_capture: bool = True
    capture_mode: str = "all"
    search_mode: str = "memories"
    max_recall_results: int = 5
    include_profile: bool = True
    entity_context: str = ""
    recall_chars: int = 1500
    tools: bool = True
    timeout_s: float = 3.0
    retry_attempts: int = 3
    retry_backoff_s: float = 0.5
    retry_cooldown_s: float = 30.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; bad values raise ``ConfigError`` naming every problem."""
        return cls(**checked_values("supermemory", CONFIG_SCHEMA, section, _problems))

    @property
    def containers(self) -> list[str]:
        """The custom container names, in order."""
        return _split(self.custom_containers)


def _split(text: Any) -> list[str]:
    return [p.strip() for p in str(text or "").split(",") if p.strip()]


def _problems(values: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for name in _split(values.get("custom_containers", "")):
        if not _CONTAINER.match(name):
            problems.append(f"custom_containers: {name!r} is not a container name"
                            " (letters, digits, _ and -, at most 64)")
    tag = values.get("container_tag", "")
    if tag and not _CONTAINER.match(str(tag)):
        problems.append(f"container_tag: {tag!r} is not a container name")
    return problems
