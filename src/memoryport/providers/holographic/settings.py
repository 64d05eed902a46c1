"""The ``holographic`` provider's settings: the ``ConfigField`` schema and the parsed,
checked values (``config.yaml`` section ``holographic:``, or ``memory.holographic:``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryport.config.schema import ConfigField, validate_config
from memoryport.errors import ConfigError
from memoryport.storage.turns import query_encoder

if TYPE_CHECKING:
    from memoryport.providers.holographic.llm_extract import LLMConfig

__all__ = ["CONFIG_SCHEMA", "EXTRACTORS", "MODES", "QUERY_VECTORS", "QUERY_VECTORS_DEFAULT",
           "Settings"]

EXTRACTORS = ("rules", "llm")
"""``rules``: the deterministic reader only; ``llm``: the rules plus an OpenAI-compatible
model at compression and session end (the rules' facts are kept when the model fails)."""

QUERY_VECTORS = query_encoder.CHOICES
"""``table``: a query's vector from the model's token table fitted to the user's turns
(the model never runs on the turn's path); ``model``: MiniLM embeds each query."""
QUERY_VECTORS_DEFAULT = "table"
"""The ``query_vectors`` of a home that does not set it: the turn's cost (~2 ms against
10-16 ms with ``model``) over the last points of recall (docs/holographic.md)."""

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
    {"key": "query_vectors", "description": "With the embeddings model: table (query"
     " vectors from its token table, ~2 ms a turn) or model (MiniLM on each query: better"
     " multi-hop and open-domain recall, 10-16 ms a turn).", "type": "text",
     "default": QUERY_VECTORS_DEFAULT, "choices": list(QUERY_VECTORS)},
    {"key": "auto_extract", "description": "Extract durable facts from turns, compression"
     " and session end.", "type": "boolean", "default": True},
    {"key": "default_trust", "description": "Trust of a new fact (0-1).", "type": "number",
     "default": 0.5, "minimum": 0.0, "maximum": 1.0},
    {"key": "min_trust", "description": "Facts under this trust are hidden from recall"
     " (still listed).", "type": "number", "default": 0.3, "minimum": 0.0, "maximum": 1.0},
    {"key": "extractor", "description": "Fact extraction at compression and session end:"
     " rules (deterministic) or llm (rules plus an OpenAI-compatible model).",
     "type": "text", "default": "rules", "choices": list(EXTRACTORS)},
    {"key": "llm_base_url", "description": "OpenAI-compatible endpoint of the llm extractor"
     " (e.g. http://127.0.0.1:11434/v1).", "type": "text", "default": ""},
    {"key": "llm_model", "description": "Model name the llm extractor asks.", "type": "text",
     "default": ""},
    {"key": "llm_api_key_env", "description": "Environment variable (or <home>/.env entry)"
     " holding the llm extractor's API key; empty sends none.", "type": "text",
     "default": ""},
    {"key": "llm_timeout_s", "description": "Seconds the llm extractor waits for an answer"
     " before keeping the rules' facts only.", "type": "number", "default": 20.0,
     "minimum": 0.1, "maximum": 300.0},
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
    query_vectors: str = QUERY_VECTORS_DEFAULT
    auto_extract: bool = True
    default_trust: float = 0.5
    min_trust: float = 0.3
    extractor: str = "rules"
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = ""
    llm_timeout_s: float = 20.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; unknown keys are ignored, bad values raise
        ``ConfigError`` naming every problem."""
        known = {str(f["key"]) for f in CONFIG_SCHEMA}
        values = {k: v for k, v in section.items() if k in known and v not in (None, "")}
        problems = validate_config(CONFIG_SCHEMA, values) or _llm_problems(values)
        if problems:
            raise ConfigError(
                "holographic settings are invalid: " + "; ".join(problems)
                + " (fix them with: memoryport config set holographic.<key> <value>)",
                problems,
            )
        return cls(**values)

    def llm_config(self) -> LLMConfig | None:
        """Where the llm extractor asks, or None with ``extractor: rules``."""
        if self.extractor != "llm":
            return None
        from memoryport.providers.holographic.llm_extract import LLMConfig

        return LLMConfig(self.llm_base_url, self.llm_model, self.llm_api_key_env,
                         float(self.llm_timeout_s))

    @property
    def inject(self) -> bool:
        """True when recall is injected each turn."""
        return self.mode in ("hybrid", "context")

    @property
    def tools(self) -> bool:
        """True when the tools are offered."""
        return self.mode in ("hybrid", "tools")


def _llm_problems(values: Mapping[str, Any]) -> list[str]:
    """What the llm extractor lacks (checked only with ``extractor: llm``)."""
    problems: list[str] = []
    url = str(values.get("llm_base_url") or "")
    if url and not url.startswith(("http://", "https://")):
        problems.append(f"llm_base_url: {url!r} should start with http:// or https://")
    if values.get("extractor") != "llm":
        return problems
    for key, example in (("llm_base_url", "http://127.0.0.1:11434/v1"),
                         ("llm_model", "llama3.1")):
        if not values.get(key):
            problems.append(f"{key}: required with extractor: llm (e.g. {example})")
    env = str(values.get("llm_api_key_env") or "")
    if env and not env.replace("_", "a").isalnum():
        problems.append(f"llm_api_key_env: {env!r} is not an environment variable name")
    return problems
