"""Honcho settings: where they are read from, every key with its default and clamp.

Files, first that exists: ``<home>/honcho.json`` (profile-local), for a named profile the
root home's ``honcho.json`` (shared host blocks), then ``~/.honcho/config.json`` (global,
shared with other Honcho apps). Host blocks under
``hosts`` are keyed by profile: ``memoryport`` for the default profile,
``memoryport.<profile>`` otherwise (``MEMORYPORT_HONCHO_HOST`` overrides; a file written
by Hermes, with only ``hermes``/``hermes.<profile>`` blocks, is read through those). For every key:
**host block > root > environment variable > default**. Bad values raise ``ConfigError``
naming each key, the value and what is allowed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memoryport.config import profile_name
from memoryport.config.envfile import get_secret
from memoryport.errors import ConfigError

__all__ = ["HOST_ENV", "LEVELS", "HonchoConfig", "config_files", "host_key", "load_file"]

HOST_ENV = "MEMORYPORT_HONCHO_HOST"
"""Environment variable overriding the host key."""

LEVELS = ("minimal", "low", "medium", "high", "max")
"""Dialectic reasoning levels, weakest first."""

RECALL_MODES = ("hybrid", "context", "tools")
WRITE_MODES = ("async", "turn", "session")
STRATEGIES = ("per-directory", "per-repo", "per-session", "global")
INJECTION = ("every-turn", "first-turn")
OBSERVATION_MODES = ("directional", "unified")
CLOUD_MESSAGE_LIMIT = 25_000
CLOUD_DIALECTIC_INPUT_LIMIT = 10_000
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")
_ENV = {"apiKey": "HONCHO_API_KEY", "baseUrl": "HONCHO_BASE_URL",
        "environment": "HONCHO_ENVIRONMENT"}


def config_files(home: Path) -> list[Path]:
    """The candidate files, highest priority first: the profile's own, the root home's
    (shared host blocks; for named profiles), the global one."""
    files = [home / "honcho.json"]
    if home.parent.name == "profiles":
        files.append(home.parent.parent / "honcho.json")
    return [*files, Path.home() / ".honcho" / "config.json"]


def load_file(home: Path) -> tuple[Path | None, dict[str, Any]]:
    """The first existing config file and its JSON object (``(None, {})`` when none)."""
    for path in config_files(home):
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{path}: not readable JSON ({exc}); fix or remove it"
                                  ) from None
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: must hold a JSON object")
            return path, data
    return None, {}


def host_key(home: Path, hosts: Mapping[str, Any] | None = None) -> str:
    """``memoryport`` or ``memoryport.<profile>`` (``MEMORYPORT_HONCHO_HOST``, then Hermes'
    ``HERMES_HONCHO_HOST``, win). When ``hosts`` (the file's host blocks) has no block for
    it but has Hermes' ``hermes`` / ``hermes.<profile>``, that one is used, so a file
    written by Hermes keeps its workspace and peers."""
    override = os.environ.get(HOST_ENV) or os.environ.get("HERMES_HONCHO_HOST")
    if override:
        return override
    profile = profile_name(home)
    suffix = "" if profile == "default" else f".{profile}"
    ours, hermes = f"memoryport{suffix}", f"hermes{suffix}"
    if hosts is not None and ours not in hosts and hermes in hosts:
        return hermes
    return ours


def _observation(preset: str, raw: Any) -> dict[str, dict[str, bool]]:
    if preset == "unified":
        base = {"user": {"observeMe": True, "observeOthers": False},
                "ai": {"observeMe": False, "observeOthers": True}}
    else:
        base = {"user": {"observeMe": True, "observeOthers": True},
                "ai": {"observeMe": True, "observeOthers": True}}
    if isinstance(raw, Mapping):
        for side in ("user", "ai"):
            for key, value in (raw.get(side) or {}).items():
                if key in ("observeMe", "observeOthers") and isinstance(value, bool):
                    base[side][key] = value
    return base


@dataclass(frozen=True)
class HonchoConfig:
    """Every setting of the seed's tables, resolved and checked."""

    host: str = "memoryport"
    path: str = ""
    api_key: str = ""
    base_url: str = ""
    environment: str = "production"
    enabled: bool = False
    workspace: str = "memoryport"
    peer_name: str = ""
    ai_peer: str = "memoryport"
    recall_mode: str = "hybrid"
    observation_mode: str = "directional"
    observation: dict[str, dict[str, bool]] = field(default_factory=lambda: _observation(
        "directional", None))
    write_frequency: str | int = "async"
    save_messages: bool = True
    session_strategy: str = "per-directory"
    session_peer_prefix: bool = False
    sessions: dict[str, str] = field(default_factory=dict)
    dialectic_depth: int = 1
    dialectic_depth_levels: tuple[str, ...] = ()
    dialectic_reasoning_level: str = "low"
    dialectic_dynamic: bool = True
    dialectic_max_chars: int = 600
    dialectic_max_input_chars: int = 10_000
    context_tokens: int | None = None
    message_max_chars: int = 25_000
    context_cadence: int = 1
    dialectic_cadence: int = 3
    injection_frequency: str = "every-turn"
    reasoning_level_cap: str = ""
    retry_base_s: float = 1.0
    retry_max_s: float = 60.0

    @property
    def is_local(self) -> bool:
        """True for a self-hosted server on this machine (no API key needed)."""
        return (urlsplit(self.base_url).hostname or "") in _LOCAL_HOSTS

    @property
    def url(self) -> str:
        """The API URL the client talks to (for messages; never holds a credential)."""
        if self.base_url:
            return self.base_url.rstrip("/")
        return "http://localhost:8000" if self.environment == "local" else \
            "https://api.honcho.dev"

    @property
    def tools_visible(self) -> bool:
        """Tools are hidden in ``context`` mode."""
        return self.recall_mode != "context"

    @property
    def injects(self) -> bool:
        """Context is injected except in ``tools`` mode."""
        return self.recall_mode != "tools"

    def cap(self, level: str) -> str:
        """``level`` lowered to ``reasoningLevelCap`` when one is set."""
        if self.reasoning_level_cap and LEVELS.index(level) > LEVELS.index(
                self.reasoning_level_cap):
            return self.reasoning_level_cap
        return level

    def pass_levels(self) -> list[str]:
        """The reasoning level of each dialectic pass (explicit, else proportional)."""
        depth = self.dialectic_depth
        if self.dialectic_depth_levels:
            levels = list(self.dialectic_depth_levels[:depth])
            levels += [self.dialectic_reasoning_level] * (depth - len(levels))
        else:
            base = self.dialectic_reasoning_level
            levels = {1: [base], 2: ["minimal", base], 3: ["minimal", base, "low"]}[depth]
        return [self.cap(level) for level in levels]

    @classmethod
    def load(cls, home: Path) -> HonchoConfig:
        """Resolve every key for ``home``'s profile (see the module docstring)."""
        path, data = load_file(home)
        hosts = data.get("hosts")
        host = host_key(home, hosts if isinstance(hosts, Mapping) else None)
        block = hosts.get(host) if isinstance(hosts, Mapping) else None
        if not isinstance(block, Mapping):
            block = {}
        return _Resolver(home, host, data, block).build(str(path or ""))


class _Resolver:
    """Reads one key at a time: host block > root > env > default, with checks."""

    def __init__(self, home: Path, host: str, root: Mapping[str, Any],
                 block: Mapping[str, Any]) -> None:
        self.home, self.host, self.root, self.block = home, host, root, block
        self.problems: list[str] = []

    def raw(self, key: str) -> Any:
        for layer in (self.block, self.root):
            if key in layer and layer[key] is not None:
                return layer[key]
        env = _ENV.get(key)
        return get_secret(self.home, env) if env else None

    def text(self, key: str, default: str, choices: tuple[str, ...] = ()) -> str:
        value = self.raw(key)
        if value in (None, ""):
            return default
        if not isinstance(value, str) or (choices and value not in choices):
            allowed = f"one of {', '.join(choices)}" if choices else "a string"
            self.problems.append(f"{key}: {value!r} should be {allowed}")
            return default
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            self.problems.append(f"{key}: {value!r} should be true or false")
            return default
        return value

    def number(self, key: str, default: int | None, low: int, high: int | None = None
               ) -> int | None:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append(f"{key}: {value!r} should be a whole number")
            return default
        return max(low, value if high is None else min(high, value))

    def build(self, path: str) -> HonchoConfig:
        return _build(self, path)


def _recall_mode(r: _Resolver) -> str:
    value = r.raw("recallMode")
    if value == "auto":  # the legacy name
        return "hybrid"
    return r.text("recallMode", "hybrid", RECALL_MODES)


def _write_frequency(r: _Resolver) -> str | int:
    value = r.raw("writeFrequency")
    if value is None:
        return "async"
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if value in WRITE_MODES:
        return str(value)
    r.problems.append(f"writeFrequency: {value!r} should be async, turn, session or a"
                      " number of turns (1 or more)")
    return "async"


def _levels(r: _Resolver) -> tuple[str, ...]:
    value = r.raw("dialecticDepthLevels")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(v in LEVELS for v in value):
        r.problems.append(f"dialecticDepthLevels: {value!r} should be a list of"
                          f" {', '.join(LEVELS)}")
        return ()
    return tuple(value)


def _sessions(r: _Resolver) -> dict[str, str]:
    value = r.raw("sessions")
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        r.problems.append("sessions: should map directories to session names")
        return {}
    return {str(k): v for k, v in value.items()}


def _build(r: _Resolver, path: str) -> HonchoConfig:
    api_key, base_url = r.text("apiKey", ""), r.text("baseUrl", "")
    cloud = not base_url
    enabled_raw = r.raw("enabled")
    preset = r.text("observationMode", "directional", OBSERVATION_MODES)
    config = HonchoConfig(
        host=r.host, path=path, api_key=api_key, base_url=base_url,
        environment=r.text("environment", "production", ("production", "local")),
        enabled=r.flag("enabled", False) if enabled_raw is not None else bool(
            api_key or base_url),
        workspace=r.text("workspace", r.host), peer_name=r.text("peerName", ""),
        ai_peer=r.text("aiPeer", r.host), recall_mode=_recall_mode(r),
        observation_mode=preset, observation=_observation(preset, r.raw("observation")),
        write_frequency=_write_frequency(r), save_messages=r.flag("saveMessages", True),
        session_strategy=r.text("sessionStrategy", "per-directory", STRATEGIES),
        session_peer_prefix=r.flag("sessionPeerPrefix", False), sessions=_sessions(r),
        dialectic_depth=r.number("dialecticDepth", 1, 1, 3) or 1,
        dialectic_depth_levels=_levels(r),
        dialectic_reasoning_level=r.text("dialecticReasoningLevel", "low", LEVELS),
        dialectic_dynamic=r.flag("dialecticDynamic", True),
        dialectic_max_chars=r.number("dialecticMaxChars", 600, 50) or 600,
        dialectic_max_input_chars=r.number(
            "dialecticMaxInputChars", 10_000, 100,
            CLOUD_DIALECTIC_INPUT_LIMIT if cloud else None) or 10_000,
        context_tokens=None if r.raw("contextTokens") in (0, "0") else r.number(
            "contextTokens", None, 50),
        message_max_chars=r.number("messageMaxChars", 25_000, 100,
                                   CLOUD_MESSAGE_LIMIT if cloud else None) or 25_000,
        context_cadence=r.number("contextCadence", 1, 1) or 1,
        dialectic_cadence=r.number("dialecticCadence", 3, 1) or 3,
        injection_frequency=r.text("injectionFrequency", "every-turn", INJECTION),
        reasoning_level_cap=r.text("reasoningLevelCap", "", LEVELS[:4]),
        retry_base_s=float(r.number("writeRetrySeconds", 1, 0, 600) or 0),
        retry_max_s=float(r.number("writeRetryMaxSeconds", 60, 0, 3600) or 0),
    )
    if r.problems:
        raise ConfigError(f"honcho settings ({path or 'defaults'}, host {r.host!r}) are"
                          " invalid: " + "; ".join(r.problems)
                          + " (fix them with: memoryport honcho ... or edit the file)",
                          r.problems)
    return config
