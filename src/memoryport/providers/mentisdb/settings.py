"""The ``mentisdb`` provider's settings: the ``ConfigField`` schema and their resolution.

Each key is read from the ``mentisdb:`` section of ``config.yaml`` (or Hermes'
``memory.mentisdb:``), then from its environment variable (the environment, then
``<home>/.env``), then the default. The API key is a secret: only the environment or
``.env`` hold it (``memoryport setup mentisdb`` writes it there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from memoryport.config import load_config
from memoryport.config.schema import ConfigField
from memoryport.config.sections import MODES, ModeSwitches, mode_field, resolved_values

__all__ = ["CONFIG_SCHEMA", "MODES", "THOUGHT_TYPES", "Settings", "display_url"]

"""``hybrid``: recall injected and tools; ``context``: recall only; ``tools``: tools only."""

THOUGHT_TYPES = ("Fact", "LessonLearned", "Decision", "Observation", "Summary", "Reference",
                 "Hypothesis")
"""MentisDB's thought types (``mentisdb_store``'s ``thought_type``)."""

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "url", "description": "MentisDB daemon URL", "type": "text",
     "default": "http://localhost:9471", "env_var": "MENTISDB_URL"},
    {"key": "chain_key", "description": "Chain key (blank: the agent identity, else"
     " 'memoryport')", "type": "text", "default": "", "env_var": "MENTISDB_CHAIN_KEY"},
    {"key": "api_key", "description": "Bearer token, if the daemon sits behind an"
     " authenticating proxy (optional)", "secret": True, "env_var": "MENTISDB_API_KEY"},
    mode_field(),
    {"key": "recall_limit", "description": "Thoughts recalled per turn", "type": "integer",
     "default": 8, "minimum": 1, "maximum": 50},
    {"key": "recall_chars", "description": "Character budget of the recall injected each turn",
     "type": "integer", "default": 2000, "minimum": 100, "maximum": 20000},
    {"key": "timeout_s", "description": "Seconds one HTTP request may take (keep it under"
     " memory.prefetch_deadline_s)", "type": "number", "default": 3.0, "minimum": 0.1,
     "maximum": 60.0},
    {"key": "retry_base_s", "description": "First retry delay of an undelivered write"
     " (doubles per failure)", "type": "number", "default": 1.0, "minimum": 0.0,
     "maximum": 600.0},
    {"key": "retry_max_s", "description": "Longest retry delay of an undelivered write",
     "type": "number", "default": 60.0, "minimum": 0.0, "maximum": 3600.0},
]
"""The settings ``memoryport setup mentisdb`` asks for (``get_config_schema``)."""

def display_url(url: str) -> str:
    """``url`` without user:password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Settings(ModeSwitches):
    """Resolved settings (see :data:`CONFIG_SCHEMA` for meanings and defaults)."""

    url: str = "http://localhost:9471"
    chain_key: str = ""
    api_key: str = ""
    mode: str = "hybrid"
    recall_limit: int = 8
    recall_chars: int = 2000
    timeout_s: float = 3.0
    retry_base_s: float = 1.0
    retry_max_s: float = 60.0

    @classmethod
    def resolve(cls, section: Mapping[str, Any], home: Path | None) -> Settings:
        """Section > environment variable > default; ``ConfigError`` names every bad value."""
        return cls(**resolved_values("mentisdb", CONFIG_SCHEMA, section, home, _url_problems))

    @classmethod
    def load(cls, home: Path | None) -> Settings:
        """The settings of ``<home>/config.yaml`` plus environment (defaults without a home)."""
        section = load_config(home).provider_section("mentisdb") if home else {}
        return cls.resolve(section, home)

    @property
    def shown_url(self) -> str:
        """The URL as messages show it (no credentials)."""
        return display_url(self.url)


def _url_problems(values: dict[str, Any]) -> list[str]:
    scheme = urlsplit(str(values.get("url", Settings.url))).scheme
    return [] if scheme in ("http", "https") else [
        f"url: {values.get('url')!r} is not an http(s) URL"]
