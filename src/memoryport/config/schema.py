"""Provider settings: the ``ConfigField`` schema format and ``validate_config``.

A provider describes its settings with ``get_config_schema()`` (a list of ``ConfigField``
dicts, the format of the Hermes setup wizard); ``validate_config`` checks values against
such a list. Both live here, with the rest of configuration, so ``config`` never needs the
provider contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

__all__ = ["ConfigField", "validate_config"]


class ConfigField(TypedDict, total=False):
    """One field of ``get_config_schema()`` (the format of the Hermes setup wizard).

    Keys: ``key`` (required), ``description``, ``secret`` (goes to ``.env``), ``required``,
    ``env_var`` (explicit environment variable name), ``url`` (where to obtain the value),
    ``default``, ``choices``, and optionally ``type`` (``text``/``integer``/``number``/
    ``boolean``), ``minimum`` and ``maximum``.
    """

    key: str
    description: str
    secret: bool
    required: bool
    env_var: str
    url: str
    default: Any
    choices: list[Any]
    type: str
    minimum: float
    maximum: float


_TYPE_CHECKS: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def validate_config(schema: Sequence[Mapping[str, Any]], values: Mapping[str, Any]) -> list[str]:
    """Check ``values`` against a ``get_config_schema()`` list; return every problem at once.

    An empty list means the values are valid. Each problem names the key, the value and
    what was expected, e.g. ``"region: 'mars' is not one of 'us-east', 'eu-west'"``.
    """
    problems: list[str] = []
    known = {str(f.get("key")) for f in schema if f.get("key")}
    for index, field in enumerate(schema):
        key = field.get("key")
        if not isinstance(key, str) or not key:
            problems.append(f"schema field #{index} has no 'key'; every field needs a name")
            continue
        present = key in values and values[key] not in (None, "")
        if not present:
            if field.get("required") and field.get("default") in (None, ""):
                hint = f" (set it, or export {field['env_var']})" if field.get("env_var") else ""
                problems.append(f"{key}: required but missing{hint}")
            continue
        value = values[key]
        choices = field.get("choices")
        if choices and value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            problems.append(f"{key}: {value!r} is not one of {allowed}")
        kind = field.get("type")
        if isinstance(kind, str) and kind in _TYPE_CHECKS:
            expected = _TYPE_CHECKS[kind]
            bad_bool = isinstance(value, bool) and kind in ("integer", "number")
            if not isinstance(value, expected) or bad_bool:
                problems.append(f"{key}: {value!r} should be {kind}")
                continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            minimum, maximum = field.get("minimum"), field.get("maximum")
            if minimum is not None and value < minimum:
                problems.append(f"{key}: {value!r} is below the minimum {minimum!r}")
            if maximum is not None and value > maximum:
                problems.append(f"{key}: {value!r} is above the maximum {maximum!r}")
    for key in values:
        if key not in known:
            problems.append(f"{key}: unknown setting (known: {', '.join(sorted(known)) or 'none'})")
    return problems
