"""The ``memory`` tool: its OpenAI function schema and the dispatcher that returns JSON.

This is an edge: the store raises typed errors and :func:`run_memory_tool` turns every one
of them into a JSON string in the one tool-error shape (``{"success": false, "error": ...,
"error_type": ...}``, see ``memoryport.errors``); it never raises.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.errors import MemoryportError, tool_error
from memoryport.providers.curated.store import CuratedMemory, Provenance, WriteResult
from memoryport.types import ToolSchema

__all__ = [
    "MEMORY_TOOL_NAME",
    "MEMORY_TOOL_SCHEMA",
    "ToolOutcome",
    "memory_tool_schema",
    "run_memory_tool",
]

log = logging.getLogger(__name__)

MEMORY_TOOL_NAME = "memory"
"""The name the model calls the tool by."""

_OP_ENUM = ["add", "replace", "remove"]

MEMORY_TOOL_SCHEMA: ToolSchema = {
    "name": MEMORY_TOOL_NAME,
    "description": (
        "Save durable facts to persistent memory that is shown to you at the start of every "
        "future session. There is no read action: memory is already in your system prompt.\n"
        "WHEN: the user states a preference, corrects you, or you learn a stable fact about "
        "the environment, a project or a tool that will matter in later sessions.\n"
        "TARGETS: 'memory' for your own notes (environment, conventions, tool quirks, "
        "lessons); 'user' for who the user is (preferences, style, role, habits).\n"
        "HOW: add(content); replace(old_text, content) and remove(old_text) find the entry by "
        "a short unique substring. To make several changes, prefer ONE call with an "
        "'operations' list (all-or-nothing).\n"
        "IF FULL: replace or remove stale entries, then add.\n"
        "SKIP: task progress, PR/issue numbers, commit SHAs, logs of finished work, TODO "
        "state, anything stale within a week, and instructions to yourself; write "
        "declarative facts ('User prefers concise answers')."
    ),
    "parameters": {
        "type": "object",
        "required": ["target"],
        "properties": {
            "action": {
                "type": "string",
                "enum": _OP_ENUM,
                "description": "What to do (omit when using 'operations').",
            },
            "target": {
                "type": "string",
                "enum": ["memory", "user"],
                "description": "'memory' for your notes, 'user' for the user profile.",
            },
            "content": {
                "type": "string",
                "description": "The entry text, for add and replace.",
            },
            "old_text": {
                "type": "string",
                "description": "A short substring that identifies one entry, for replace/remove.",
            },
            "operations": {
                "type": "array",
                "description": "Several changes to one target, applied all-or-nothing.",
                "items": {
                    "type": "object",
                    "required": ["action"],
                    "properties": {
                        "action": {"type": "string", "enum": _OP_ENUM},
                        "content": {"type": "string"},
                        "old_text": {"type": "string"},
                    },
                },
            },
        },
    },
}
"""The OpenAI function schema of the ``memory`` tool (``old_text`` cannot be required:
some backends reject top-level combinators, so the dispatcher checks it)."""

_UNAVAILABLE = "Memory is not available. It may be disabled in config or this environment."
_SAVED_NOTE = "Write saved. This update is complete — do not repeat it."
_NOOP_NOTE = "Nothing was written; memory already holds this. Do not repeat the call."


@dataclass(frozen=True)
class ToolOutcome:
    """The JSON text for the model plus the store result (None when the call failed)."""

    text: str
    result: WriteResult | None = None


def memory_tool_schema() -> ToolSchema:
    """A deep copy of :data:`MEMORY_TOOL_SCHEMA` that callers may modify."""
    return copy.deepcopy(MEMORY_TOOL_SCHEMA)


def _error(message: str, error_type: str = "ToolArgumentError", **extra: Any) -> ToolOutcome:
    return _failed(tool_error(message, error_type, **extra))


def _failed(payload: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(json.dumps(payload, ensure_ascii=False))


def _success(result: WriteResult) -> ToolOutcome:
    payload = {
        "success": True,
        "done": True,
        "target": result.target,
        "usage": str(result.usage),
        "entry_count": result.entry_count,
        "message": result.message,
        "note": _SAVED_NOTE if result.changes else _NOOP_NOTE,
    }
    return ToolOutcome(json.dumps(payload, ensure_ascii=False), result)


def run_memory_tool(
    store: CuratedMemory | None,
    args: Mapping[str, Any],
    provenance: Provenance | None = None,
) -> ToolOutcome:
    """Run one ``memory`` tool call against ``store`` and return the JSON outcome.

    ``provenance`` (who called: source, session, tool call id) goes into the history.

    ``store`` of None (memory disabled or not set up) gives the "not available" error. Every
    failure, expected or not, comes back as ``{"success": false, "error": ..., "error_type":
    ...}``.
    """
    if store is None:
        return _error(_UNAVAILABLE, "ToolUnavailable")
    if not isinstance(args, Mapping):
        return _error(f"Arguments must be a JSON object, got {type(args).__name__}.")
    try:
        return _dispatch(store, args, provenance or Provenance(source="memory_tool"))
    except MemoryportError as exc:
        return _failed(exc.to_dict())
    except Exception as exc:
        log.exception("memory tool failed unexpectedly")
        return _error(f"Memory tool failed: {type(exc).__name__}: {exc}", type(exc).__name__)


def _dispatch(
    store: CuratedMemory, args: Mapping[str, Any], origin: Provenance
) -> ToolOutcome:
    target = args.get("target")
    if target is None or target == "":
        target = "memory"
    store.writable(target)
    operations = args.get("operations")
    if operations is not None:
        if not isinstance(operations, list):
            return _error(
                "'operations' must be a list of {action, content, old_text} objects, got "
                f"{type(operations).__name__} {_describe(operations)}."
            )
        return _success(store.apply_batch(target, operations, provenance=origin))
    action: Any = args.get("action")
    content: Any = args.get("content")
    old_text: Any = args.get("old_text")
    blank = old_text is None or (isinstance(old_text, str) and not old_text.strip())
    if action in ("replace", "remove") and blank:
        return _error(
            f"'{action}' needs old_text -- a short unique substring of the entry to "
            f"{action}. Current entries are listed below.",
            current_entries=store.display_entries(target),
            usage=str(store.usage(target)),
        )
    if action == "add":
        return _success(store.add(target, content, provenance=origin))
    if action == "replace":
        return _success(store.replace(target, old_text, content, provenance=origin))
    if action == "remove":
        return _success(store.remove(target, old_text, provenance=origin))
    if action is None:
        return _error("action is required: 'add', 'replace' or 'remove' (or pass 'operations').")
    if not isinstance(action, str):
        return _error(
            f"action must be a string ('add', 'replace' or 'remove'), got "
            f"{type(action).__name__} {_describe(action)}."
        )
    return _error(f"Unknown action {_describe(action)}. Use: add, replace, remove")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."
