"""Pure helpers for tool routing: schema normalisation, the routing table, argument and
result checks. The manager owns the threads; this module owns the rules."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, TypeVar

from memoryport.types import ToolSchema

__all__ = [
    "RESERVED_TOOL_NAMES",
    "build_tool_table",
    "error_json",
    "normalize_schemas",
    "parse_tool_args",
    "result_to_json",
]

log = logging.getLogger("memoryport.manager")

RESERVED_TOOL_NAMES = frozenset({"memory", "session_search", "delegate_task"})
"""Tool names only the library's built-in providers and agent loop may register."""

Owner = TypeVar("Owner")


def error_json(message: str) -> str:
    """A tool error as the JSON string a model receives: ``{"error": message}``."""
    return json.dumps({"error": message})


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


def build_tool_table(
    entries: Iterable[tuple[Owner, str, bool, list[ToolSchema]]],
) -> tuple[dict[str, Owner], list[ToolSchema]]:
    """Route each tool name to its first owner, in order; reserved names only for built-ins.

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
            elif name in RESERVED_TOOL_NAMES and not builtin:
                log.warning("provider %r: tool %r shadows a core tool; ignored", provider, name)
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
            return error_json(f"Arguments for tool '{tool_name}' are not valid JSON: {exc}")
    if not isinstance(args, dict):
        kind = type(args).__name__
        return error_json(f"Arguments for tool '{tool_name}' must be a JSON object, got {kind}")
    return args


def result_to_json(tool_name: str, result: Any) -> str:
    """A provider's tool result as a JSON string (dicts and lists are serialised)."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict | list):
        return json.dumps(result)
    return error_json(f"Memory tool '{tool_name}' returned {type(result).__name__}")
