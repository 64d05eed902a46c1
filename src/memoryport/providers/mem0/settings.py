"""The ``mem0`` provider's settings: the ``ConfigField`` schema and their resolution.

Each key is read from the ``mem0:`` section of ``config.yaml`` (or ``memory.mem0:``),
then from its environment variable (the environment, then ``<home>/.env``), then the
default. ``api_key`` is a secret (``MEM0_API_KEY``, written to ``.env`` by setup).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport.config import load_config
from memoryport.config.schema import ConfigField
from memoryport.config.sections import MODES, ModeSwitches, env_value, mode_field, resolved_values

__all__ = ["BACKENDS", "CONFIG_SCHEMA", "MODES", "SCOPES", "Settings"]

"""``hybrid``: recall injected and tools; ``context``: recall only; ``tools``: tools only."""

BACKENDS = ("auto", "platform", "oss")
"""``platform``: the Mem0 API (needs ``api_key``); ``oss``: the open-source ``Memory`` with
a local Qdrant under the home; ``auto``: platform when an API key is set, else oss."""

SCOPES = ("user", "agent", "session")
"""What recall searches: the user's memories, only this agent's for the user, or only this
session's."""

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "backend", "description": "auto, platform (Mem0 API) or oss (local open-source"
     " Memory)", "type": "text", "default": "auto", "choices": list(BACKENDS)},
    {"key": "api_key", "description": "Mem0 platform API key", "secret": True,
     "env_var": "MEM0_API_KEY", "url": "https://app.mem0.ai"},
    {"key": "host", "description": "Mem0 platform API URL", "type": "text",
     "default": "https://api.mem0.ai", "env_var": "MEM0_HOST"},
    mode_field(),
    {"key": "user_id", "description": "Mem0 user id (blank: the session's user, else"
     " 'memoryport-user')", "type": "text", "default": ""},
    {"key": "agent_id", "description": "Mem0 agent id (blank: the agent identity, else"
     " 'memoryport')", "type": "text", "default": ""},
    {"key": "search_scope", "description": "recall searches the user's memories, this"
     " agent's, or this session's", "type": "text", "default": "user",
     "choices": list(SCOPES)},
    {"key": "infer", "description": "Let Mem0's LLM extract memories from turns (false:"
     " store the messages as they are)", "type": "boolean", "default": True},
    {"key": "top_k", "description": "Memories recalled per turn", "type": "integer",
     "default": 5, "minimum": 1, "maximum": 50},
    {"key": "recall_chars", "description": "Character budget of the recall injected each"
     " turn", "type": "integer", "default": 1500, "minimum": 100, "maximum": 20000},
    {"key": "embedder", "description": "oss: embedder provider (openai, ollama, ...; 'hash'"
     " is a built-in offline word-hashing embedder)", "type": "text", "default": "openai"},
    {"key": "embedding_dims", "description": "oss: embedding size (0: 1536, or 256 for"
     " 'hash')", "type": "integer", "default": 0, "minimum": 0, "maximum": 8192},
    {"key": "llm", "description": "oss: LLM provider for infer (openai, ollama, ...)",
     "type": "text", "default": "openai"},
    {"key": "retry_base_s", "description": "First retry delay of an undelivered write"
     " (doubles per failure)", "type": "number", "default": 1.0, "minimum": 0.0,
     "maximum": 600.0},
    {"key": "retry_max_s", "description": "Longest retry delay of an undelivered write",
     "type": "number", "default": 60.0, "minimum": 0.0, "maximum": 3600.0},
    {"key": "llm_model", "description": "oss: LLM model (blank: the provider's default)",
     "type": "text", "default": ""},
]
"""The settings ``memoryport setup mem0`` asks for (``get_config_schema``)."""

@dataclass(frozen=True)
class Settings(ModeSwitches):
    """Resolved settings (see :data:`CONFIG_SCHEMA` for meanings and defaults)."""

    backend: str = "auto"
    api_key: str = ""
    host: str = "https://api.mem0.ai"
    mode: str = "hybrid"
    user_id: str = ""
    agent_id: str = ""
    search_scope: str = "user"
    infer: bool = True
    top_k: int = 5
    recall_chars: int = 1500
    embedder: str = "openai"
    embedding_dims: int = 0
    llm: str = "openai"
    llm_model: str = ""
    retry_base_s: float = 1.0
    retry_max_s: float = 60.0
    openai_key_set: bool = False

    @classmethod
    def resolve(cls, section: Mapping[str, Any], home: Path | None) -> Settings:
        """Section > environment variable > default; ``ConfigError`` names every bad value."""
        values = resolved_values("mem0", CONFIG_SCHEMA, section, home)
        return cls(**values, openai_key_set=bool(env_value(home, "OPENAI_API_KEY")))

    @classmethod
    def load(cls, home: Path | None) -> Settings:
        """The settings of ``<home>/config.yaml`` plus environment (defaults without a home)."""
        section = load_config(home).provider_section("mem0") if home else {}
        return cls.resolve(section, home)

    @property
    def platform(self) -> bool:
        """True for the Mem0 API, False for the local open-source ``Memory``."""
        return self.backend == "platform" or (self.backend == "auto" and bool(self.api_key))

    @property
    def dims(self) -> int:
        """The embedding size actually used (oss)."""
        return self.embedding_dims or (256 if self.embedder == "hash" else 1536)

    def missing(self) -> str:
        """Why the provider cannot run with these settings ("" when it can)."""
        if self.platform:
            return "" if self.api_key else "backend 'platform' needs api_key (MEM0_API_KEY)"
        needs_openai = self.embedder == "openai" or (self.infer and self.llm == "openai")
        if needs_openai and not self.openai_key_set:
            return ("backend 'oss' with the openai embedder/LLM needs OPENAI_API_KEY (or set"
                    " embedder=hash and infer=false to run offline)")
        return ""
