"""Pure helpers for tool routing: schema normalisation, the routing table, argument and
result checks. The manager owns the threads; this module owns the rules."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, TypeVar

from memoryport.errors import tool_error_json
from memoryport.types import ToolSchema

__all__ = [
    "CORE_TOOL_NAMES",
    "build_tool_table",
    "check_tool_names",
    "error_json",
    "normalize_schemas",
    "parse_tool_args",
    "result_to_json",
]

log = logging.getLogger("memoryport.manager")

CORE_TOOL_NAMES = frozenset({"memory", "session_search"})
"""Tool names only the library's built-in providers may register.

An agent that exposes tools of its own (the reference agent's ``delegate_task``) reserves
their names through ``MemoryManager.reserve_tool_names``.
"""

Owner = TypeVar("Owner")


def error_json(message: str, error_type: str) -> str:
    """A tool error as the JSON string a model receives, in the one shape
    (``{"success": false, "error": message, "error_type": ...}``, ``memoryport.errors``)."""
    return tool_error_json(message, error_type)


def normalize_schemas(raw: Any, provider: str) -> list[ToolSchema]:
    """Unwrap ``{"type": "function", "function": {...}}`` and drop schemas without a name."""
    schemas: list[ToolSchema] = []
    for item in raw if isinstance(raw, list | tuple) else []:
        if isinstance(item, dict) and item.get("type") == "function":
            item = item.get("function")
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
            schemas.append(dict(item))
        else:
            log.warning("provider %r: dropped a tool schema without a name", provider)
    return schemas


def check_tool_names(names: Iterable[Any]) -> frozenset[str]:
    """``names`` as a set of tool names; ValueError naming the bad one when one is not valid."""
    checked: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ValueError(
                f"cannot reserve tool name {name!r}: a tool name is a non-empty string "
                "without surrounding whitespace, e.g. 'delegate_task'"
            )
        checked.add(name)
    return frozenset(checked)


def build_tool_table(
    entries: Iterable[tuple[Owner, str, bool, list[ToolSchema]]],
    reserved: frozenset[str] = CORE_TOOL_NAMES,
) -> tuple[dict[str, Owner], list[ToolSchema]]:
    """Route each tool name to its first owner, in order; ``reserved`` names only for built-ins.

    ``entries`` are ``(owner, provider name, is builtin, schemas)``. Returns the table and
    the schemas that made it in.
    """
    table: dict[str, Owner] = {}
    owners: dict[str, str] = {}
    kept: list[ToolSchema] = []
    for owner, provider, builtin, schemas in entries:
        for schema in schemas:
            name = schema["name"]
            if name in table:
                log.warning(
                    "tool name conflict: %r already registered by %r, ignoring from %r",
                    name,
                    owners[name],
                    provider,
                )
            elif name in reserved and not builtin:
                log.warning("provider %r: tool %r shadows a reserved tool; ignored", provider, name)
            else:
                table[name], owners[name] = owner, provider
                kept.append(schema)
    return table, kept


def parse_tool_args(tool_name: str, args: Any) -> dict[str, Any] | str:
    """The arguments as a dict, or an error JSON string saying what was wrong."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return error_json(
                f"Arguments for tool '{tool_name}' are not valid JSON: {exc}", "ToolArgumentError"
            )
    if not isinstance(args, dict):
        kind = type(args).__name__
        return error_json(
            f"Arguments for tool '{tool_name}' must be a JSON object, got {kind}",
            "ToolArgumentError",
        )
    return args


def result_to_json(tool_name: str, result: Any) -> str:
    """A provider's tool result as a JSON string (dicts and lists are serialised)."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict | list):
        return json.dumps(result)
    return error_json(
        f"Memory tool '{tool_name}' returned {type(result).__name__}, not a JSON string",
        "ProviderError",
    )
