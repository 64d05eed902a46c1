"""What the bundled remote providers' config sections have in common.

Each remote provider (hindsight, supermemory, openviking, retaindb, byterover, mem0,
mentisdb) reads one ``config.yaml`` section into a frozen ``Settings`` dataclass. The
pieces they share live here so that a fix lands once:

* :func:`retry_fields` -- the three outbox retry settings, with the same bounds everywhere;
* :func:`mode_field` and :class:`ModeSwitches` -- the seed's ``hybrid`` / ``context`` /
  ``tools`` modes and what each shows;
* :func:`checked_values` -- the non-secret values of a section, validated against the
  schema, with every problem named in one ``ConfigError`` that says how to fix it;
* :func:`resolved_values` -- the same for providers whose fields may also come from
  environment variables (section, then environment, then default).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from memoryport.config import coerce
from memoryport.config.envfile import get_secret
from memoryport.config.schema import ConfigField, validate_config
from memoryport.errors import ConfigError

__all__ = ["MODES", "ModeSwitches", "checked_values", "env_value", "mode_field",
           "resolved_values", "retry_fields"]

Problems = Callable[[dict[str, Any]], list[str]]
"""Provider-specific checks of the parsed values: one message per problem."""

_TYPES: dict[str, type[Any]] = {"integer": int, "number": float, "text": str, "boolean": bool}

MODES = ("hybrid", "context", "tools")
"""The seed's provider modes: inject and tools, inject only, tools only."""


def mode_field(key: str = "mode") -> ConfigField:
    """The ``mode`` setting (``hybrid`` by default) under the name *key*."""
    return {"key": key, "description": "hybrid (recall + tools), context (recall only) or"
            " tools (tools only).", "type": "text", "default": "hybrid",
            "choices": list(MODES)}


def retry_fields(what: str = "write") -> list[ConfigField]:
    """The outbox's ``retry_attempts``, ``retry_backoff_s`` and ``retry_cooldown_s``.

    *what* names the queued thing in the description ("retain", "curate", ...).
    """
    return [
        {"key": "retry_attempts", "description": f"Attempts per queued {what}.",
         "type": "integer", "default": 3, "minimum": 1, "maximum": 10},
        {"key": "retry_backoff_s", "description": "First retry delay (doubles each attempt).",
         "type": "number", "default": 0.5, "minimum": 0.0, "maximum": 30.0},
        {"key": "retry_cooldown_s", "description": "After a failed round, seconds before"
         " writes wait through backoff again.", "type": "number", "default": 30.0,
         "minimum": 0.0, "maximum": 3600.0},
    ]


def checked_values(provider: str, schema: Sequence[ConfigField], section: Mapping[str, Any],
                   extra: Problems | None = None) -> dict[str, Any]:
    """The section's non-secret values that *schema* knows, empty ones left out.

    Unknown keys are ignored and secrets are never read from the section. Every problem --
    the schema's checks, then *extra*'s provider-specific ones -- is named in one
    ``ConfigError`` that also says how to fix it.
    """
    fields = [f for f in schema if not f.get("secret")]
    known = {str(f["key"]) for f in fields}
    values = {k: v for k, v in section.items() if k in known and v not in (None, "")}
    _check(provider, fields, values, extra)
    return values


def env_value(home: Path | None, name: str) -> str | None:
    """The variable *name* from the environment or the home's ``.env`` (None when unset)."""
    return get_secret(home, name) if home is not None else os.environ.get(name) or None


def resolved_values(provider: str, schema: Sequence[ConfigField], section: Mapping[str, Any],
                    home: Path | None, extra: Problems | None = None) -> dict[str, Any]:
    """Every field's value: the section's, else its ``env_var``'s, else left to the default.

    Text from the section or the environment is coerced to the field's type (``"3"`` for
    an integer); number fields come back as ``float``. Problems raise as in
    :func:`checked_values`.
    """
    values: dict[str, Any] = {}
    for spec in schema:
        key = spec["key"]
        raw = section.get(key)
        if raw in (None, "") and "env_var" in spec:
            raw = env_value(home, spec["env_var"])
        if raw in (None, ""):
            continue
        kind = _TYPES.get(str(spec.get("type", "text")), str)
        values[key] = coerce(f"{provider}.{key}", raw, kind) if isinstance(raw, str) else raw
    _check(provider, schema, values, extra)
    for spec in schema:
        value = values.get(spec["key"])
        if spec.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
            values[spec["key"]] = float(value)
    return values


def _check(provider: str, schema: Sequence[ConfigField], values: dict[str, Any],
           extra: Problems | None) -> None:
    problems = validate_config(schema, values)
    if extra is not None:
        problems.extend(extra(values))
    if problems:
        raise ConfigError(f"{provider} settings are invalid: " + "; ".join(problems)
                          + f" (fix them with: memoryport setup {provider} --set KEY=VALUE)",
                          problems)


class ModeSwitches:
    """Mixin for a settings dataclass with a mode field: what the mode shows.

    ``MODE_KEY`` names the field (``mode`` unless the reference system used another name).
    """

    MODE_KEY: ClassVar[str] = "mode"

    @property
    def inject(self) -> bool:
        """True when recall is injected each turn (``hybrid`` or ``context``)."""
        return str(getattr(self, self.MODE_KEY)) in ("hybrid", "context")

    @property
    def tools(self) -> bool:
        """True when the tools are offered (``hybrid`` or ``tools``)."""
        return str(getattr(self, self.MODE_KEY)) in ("hybrid", "tools")
