"""The ``honcho`` settings ``memoryport setup`` knows (``ConfigField``s, the seed's key
names) and the edits of ``honcho.json`` that setup and ``memoryport honcho ...`` make."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.providers.honcho.config import (
    INJECTION,
    LEVELS,
    OBSERVATION_MODES,
    RECALL_MODES,
    STRATEGIES,
    config_files,
    host_key,
    load_file,
)

__all__ = ["CONFIG_SCHEMA", "edit_file", "save_host_values", "target_file"]

CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "apiKey", "description": "Honcho API key (app.honcho.dev; not needed for a local"
     " server)", "secret": True, "env_var": "HONCHO_API_KEY", "url": "https://app.honcho.dev"},
    {"key": "baseUrl", "description": "Base URL of a self-hosted Honcho (blank: the cloud)",
     "type": "text", "default": "", "env_var": "HONCHO_BASE_URL"},
    {"key": "environment", "description": "SDK environment", "type": "text",
     "default": "production", "choices": ["production", "local"]},
    {"key": "workspace", "description": "Workspace id (blank: the host key)", "type": "text",
     "default": ""},
    {"key": "peerName", "description": "User peer (blank: the session's user id)",
     "type": "text", "default": ""},
    {"key": "aiPeer", "description": "AI peer (blank: the host key)", "type": "text",
     "default": ""},
    {"key": "recallMode", "description": "hybrid (inject + tools), context (inject only) or"
     " tools (tools only)", "type": "text", "default": "hybrid", "choices": list(RECALL_MODES)},
    {"key": "observationMode", "description": "directional (all on) or unified",
     "type": "text", "default": "directional", "choices": list(OBSERVATION_MODES)},
    {"key": "writeFrequency", "description": "async, turn, session, or a number of turns",
     "type": "text", "default": "async"},
    {"key": "saveMessages", "description": "Send the turns to Honcho", "type": "boolean",
     "default": True},
    {"key": "sessionStrategy", "description": "per-directory, per-repo, per-session or"
     " global", "type": "text", "default": "per-directory", "choices": list(STRATEGIES)},
    {"key": "sessionPeerPrefix", "description": "Prefix session names with the peer name",
     "type": "boolean", "default": False},
    {"key": "dialecticDepth", "description": "Dialectic passes per cycle (1-3)",
     "type": "integer", "default": 1, "minimum": 1, "maximum": 3},
    {"key": "dialecticReasoningLevel", "description": "Base reasoning level",
     "type": "text", "default": "low", "choices": list(LEVELS)},
    {"key": "dialecticDynamic", "description": "The model may pick the level in"
     " honcho_reasoning", "type": "boolean", "default": True},
    {"key": "dialecticMaxChars", "description": "Most chars of dialectic injected",
     "type": "integer", "default": 600, "minimum": 50},
    {"key": "dialecticMaxInputChars", "description": "Most chars sent to chat() (cloud"
     " limit 10000)", "type": "integer", "default": 10000, "minimum": 100},
    {"key": "contextTokens", "description": "Token budget of context() and the injection"
     " (0: the SDK default, no cut)", "type": "integer", "default": 0, "minimum": 0},
    {"key": "messageMaxChars", "description": "Most chars per message; longer ones are"
     " chunked (cloud limit 25000)", "type": "integer", "default": 25000, "minimum": 100},
    {"key": "contextCadence", "description": "Turns between base context refreshes",
     "type": "integer", "default": 1, "minimum": 1},
    {"key": "dialecticCadence", "description": "Turns between dialectic cycles",
     "type": "integer", "default": 3, "minimum": 1},
    {"key": "injectionFrequency", "description": "every-turn or first-turn", "type": "text",
     "default": "every-turn", "choices": list(INJECTION)},
    {"key": "writeRetrySeconds", "description": "First retry delay of an undelivered write"
     " (doubles per failure; memoryport)", "type": "integer", "default": 1, "minimum": 0,
     "maximum": 600},
    {"key": "writeRetryMaxSeconds", "description": "Longest retry delay (memoryport)",
     "type": "integer", "default": 60, "minimum": 0, "maximum": 3600},
    {"key": "reasoningLevelCap", "description": "Hard cap on the reasoning level (blank:"
     " none)", "type": "text", "default": "", "choices": ["", *LEVELS[:4]]},
]
"""Scalar settings; ``observation``, ``dialecticDepthLevels``, ``sessions`` and ``hosts``
are objects, edited in ``honcho.json`` (or with ``memoryport honcho map``)."""

_DEFAULTS = {str(f["key"]): f.get("default") for f in CONFIG_SCHEMA}


def target_file(home: Path) -> Path:
    """The file edits go to: the one in use, else ``<home>/honcho.json``."""
    path, _ = load_file(home)
    return path or config_files(home)[0]


def edit_file(home: Path, change: Callable[[dict[str, Any], str], None]) -> Path:
    """Load the file in use, let ``change(data, host)`` edit it, write it back atomically
    (mode 0600). Returns the path written."""
    path = target_file(home)
    _, data = load_file(home)
    hosts = data.get("hosts")
    change(data, host_key(home, hosts if isinstance(hosts, dict) else None))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".honcho-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def set_host(data: dict[str, Any], host: str, values: dict[str, Any]) -> None:
    """Merge ``values`` into ``data['hosts'][host]``."""
    hosts = data.setdefault("hosts", {})
    hosts.setdefault(host, {}).update(values)


def save_host_values(home: Path, values: dict[str, Any]) -> Path | None:
    """Write setup's values into the host block (defaults and secrets are not pinned)."""
    keep = {k: v for k, v in values.items()
            if k != "apiKey" and k in _DEFAULTS and v != _DEFAULTS[k]}
    if "contextTokens" in keep and keep["contextTokens"] == 0:
        keep.pop("contextTokens")
    if not keep:
        return None
    return edit_file(home, lambda data, host: set_host(data, host, keep))
