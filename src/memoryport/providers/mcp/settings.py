"""The ``mcp`` provider's settings (``config.yaml`` section ``mcp:``).

Scalars are declared in :data:`CONFIG_SCHEMA` (``memoryport setup``/``status`` know them);
the structured keys (``args``, ``env``, ``tools``, ``prefetch_args``, ``sync_args``) take
YAML lists/mappings or the same as JSON text, and are checked here.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memoryport.config.schema import ConfigField, validate_config
from memoryport.errors import ConfigError

__all__ = ["CONFIG_SCHEMA", "Settings", "fill"]

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "command", "description": "Command that starts a stdio MCP server (e.g. npx, "
     "node, uvx); or set url.", "type": "text", "default": ""},
    {"key": "args", "description": "Arguments of the command (a YAML list, or one "
     "shell-quoted string).", "type": "text", "default": ""},
    {"key": "url", "description": "Streamable-HTTP endpoint of a running MCP server "
     "(instead of command).", "type": "text", "default": ""},
    {"key": "token_env", "description": "Environment variable holding the bearer token "
     "sent to url.", "type": "text", "default": ""},
    {"key": "tool_prefix", "description": "Prefix added to the server's tool names "
     "(avoids clashes, e.g. remote_).", "type": "text", "default": ""},
    {"key": "prefetch_tool", "description": "Server tool called with each user message; "
     "its text is recalled into the turn.", "type": "text", "default": ""},
    {"key": "prefetch_field", "description": "Take this key of a JSON-object answer as "
     "the recalled text (e.g. context).", "type": "text", "default": ""},
    {"key": "sync_tool", "description": "Server tool called with each completed turn.",
     "type": "text", "default": ""},
    {"key": "send_identity", "description": "Send the user and session id in each call's "
     "_meta (memoryport servers scope by them).", "type": "boolean", "default": False},
    {"key": "protocol", "description": "auto (newest both sides speak) or legacy "
     "(initialize handshake).", "type": "text", "default": "auto",
     "choices": ["auto", "legacy"]},
    {"key": "connect_timeout_s", "description": "Seconds to wait for the server to start "
     "and list its tools.", "type": "number", "default": 20.0, "minimum": 0.5,
     "maximum": 300.0},
    {"key": "call_timeout_s", "description": "Seconds one tool call may take (keep under "
     "memory.prefetch_deadline_s).", "type": "number", "default": 4.0, "minimum": 0.1,
     "maximum": 300.0},
]
"""The scalar settings ``memoryport setup`` and ``status`` know."""

_STRUCTURED = ("args", "env", "tools", "prefetch_args", "sync_args")


def _decode(key: str, value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"mcp.{key} is not valid JSON: {exc}") from None
    return value


def _strings(key: str, value: Any, *, split: bool) -> tuple[str, ...]:
    value = _decode(key, value)
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(shlex.split(value)) if split else tuple(
            part.strip() for part in value.split(",") if part.strip()
        )
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return tuple(str(v) for v in value)
    raise ConfigError(f"mcp.{key} must be a list of strings, not {value!r}")


def _mapping(key: str, value: Any, default: Mapping[str, Any]) -> dict[str, Any]:
    value = _decode(key, value)
    if value in (None, ""):
        return dict(default)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"mcp.{key} must be a mapping of argument names, not {value!r}")
    return dict(value)


@dataclass(frozen=True)
class Settings:
    """Checked settings; see :data:`CONFIG_SCHEMA` and ``providers/mcp/README.md``."""

    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    token_env: str = ""
    tools: tuple[str, ...] = ()
    tool_prefix: str = ""
    prefetch_tool: str = ""
    prefetch_args: dict[str, Any] = field(default_factory=lambda: {"query": "{query}"})
    prefetch_field: str = ""
    sync_tool: str = ""
    sync_args: dict[str, Any] = field(
        default_factory=lambda: {"user": "{user}", "assistant": "{assistant}"}
    )
    send_identity: bool = False
    protocol: str = "auto"
    connect_timeout_s: float = 20.0
    call_timeout_s: float = 4.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Settings:
        """Parse a config section; ``ConfigError`` names every problem."""
        known = {str(f["key"]) for f in CONFIG_SCHEMA if f["key"] != "args"}
        scalars = {k: v for k, v in section.items() if k in known and v not in (None, "")}
        problems = validate_config(CONFIG_SCHEMA, scalars)
        if scalars.get("command") and scalars.get("url"):
            problems.append("set either command or url, not both")
        if problems:
            raise ConfigError(
                "mcp settings are invalid: " + "; ".join(problems)
                + " (fix them with: memoryport config set mcp.<key> <value>)",
                problems,
            )
        env = _mapping("env", section.get("env"), {})
        defaults = cls()
        return cls(
            **scalars,
            args=_strings("args", section.get("args"), split=True),
            env={str(k): str(v) for k, v in env.items()},
            tools=_strings("tools", section.get("tools"), split=False),
            prefetch_args=_mapping("prefetch_args", section.get("prefetch_args"),
                                   defaults.prefetch_args),
            sync_args=_mapping("sync_args", section.get("sync_args"), defaults.sync_args),
        )

    @property
    def configured(self) -> bool:
        """True when a server is named (a command or a URL)."""
        return bool(self.command or self.url)


def fill(template: Any, values: Mapping[str, str]) -> Any:
    """``template`` with ``{name}`` placeholders replaced in every string it contains; a
    string that is exactly one placeholder becomes the value itself."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, Mapping):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [fill(v, values) for v in template]
    return template
