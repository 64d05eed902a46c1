"""The ``retaindb_*`` tool schemas and their calls on the API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryport.errors import ToolArgumentError
from memoryport.providers.retaindb.client import RetainDBClient
from memoryport.providers.retaindb.settings import MEMORY_TYPES
from memoryport.types import ToolSchema

__all__ = ["SCHEMAS", "Scope", "run_tool"]


def _schema(name: str, description: str, properties: dict[str, Any],
            required: list[str]) -> ToolSchema:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}


SCHEMAS: list[ToolSchema] = [
    _schema("retaindb_profile", "The user's stable profile in RetainDB (preferences, facts,"
            " goals).", {}, []),
    _schema("retaindb_search", "Hybrid (semantic + keyword) search of the user's RetainDB"
            " memories.", {
                "query": {"type": "string", "description": "What to look for."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 20,
                          "description": "Most results (default 8)."},
                "memory_types": {"type": "array", "items": {"type": "string",
                                                            "enum": list(MEMORY_TYPES)},
                                 "description": "Only these memory types."}}, ["query"]),
    _schema("retaindb_context", "A packed context block for a task: the most relevant"
            " memories and the profile.", {
                "query": {"type": "string", "description": "The task or question."}},
            ["query"]),
    _schema("retaindb_remember", "Store one memory in RetainDB with its type and"
            " importance.", {
                "content": {"type": "string", "description": "The memory, one fact."},
                "memory_type": {"type": "string", "enum": list(MEMORY_TYPES),
                                "description": "Its type (default factual)."},
                "importance": {"type": "number", "minimum": 0, "maximum": 1,
                               "description": "0-1 (default 0.5)."}}, ["content"]),
    _schema("retaindb_forget", "Delete one RetainDB memory by id (ids come from"
            " retaindb_search).", {
                "memory_id": {"type": "string", "description": "The memory's id."}},
            ["memory_id"]),
]
"""The five tools, in the order they are offered."""


@dataclass(frozen=True)
class Scope:
    """Who a call is for: the project (per profile), the user and the session."""

    project: str
    user_id: str
    session_id: str


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"'{key}' must be a non-empty string")
    return value.strip()


def _profile(client: RetainDBClient, scope: Scope, args: dict[str, Any]) -> Any:
    return {"success": True, "profile": client.profile(scope.user_id, scope.project)}


def _search(client: RetainDBClient, scope: Scope, args: dict[str, Any]) -> Any:
    top_k = args.get("top_k", 8)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 20:
        raise ToolArgumentError("'top_k' must be an integer from 1 to 20")
    body: dict[str, Any] = {"project": scope.project, "user_id": scope.user_id,
                            "query": _text(args, "query"), "top_k": top_k}
    types = args.get("memory_types")
    if types is not None:
        if not isinstance(types, list) or not set(types) <= set(MEMORY_TYPES):
            raise ToolArgumentError(f"'memory_types' must be a list of {', '.join(MEMORY_TYPES)}")
        body["memory_types"] = types
    return {"success": True, **_as_dict(client.search(body), "results")}


def _context(client: RetainDBClient, scope: Scope, args: dict[str, Any]) -> Any:
    body = {"project": scope.project, "user_id": scope.user_id,
            "session_id": scope.session_id, "query": _text(args, "query"), "top_k": 8}
    return {"success": True, **_as_dict(client.context(body), "context")}


def _remember(client: RetainDBClient, scope: Scope, args: dict[str, Any]) -> Any:
    memory_type = args.get("memory_type", "factual")
    if memory_type not in MEMORY_TYPES:
        raise ToolArgumentError(f"'memory_type' must be one of {', '.join(MEMORY_TYPES)}")
    importance = args.get("importance", 0.5)
    if not isinstance(importance, int | float) or isinstance(importance, bool) or not (
            0 <= importance <= 1):
        raise ToolArgumentError("'importance' must be a number from 0 to 1")
    body = {"project": scope.project, "user_id": scope.user_id, "session_id": scope.session_id,
            "content": _text(args, "content"), "memory_type": memory_type,
            "importance": float(importance)}
    return {"success": True, **_as_dict(client.add_memory(body), "memory")}


def _forget(client: RetainDBClient, scope: Scope, args: dict[str, Any]) -> Any:
    memory_id = _text(args, "memory_id")
    return {"success": True, "memory_id": memory_id, **_as_dict(client.forget(memory_id),
                                                                 "result")}


def _as_dict(answer: Any, key: str) -> dict[str, Any]:
    return answer if isinstance(answer, dict) else {key: answer}


TOOLS: dict[str, Callable[[RetainDBClient, Scope, dict[str, Any]], Any]] = {
    "retaindb_profile": _profile, "retaindb_search": _search, "retaindb_context": _context,
    "retaindb_remember": _remember, "retaindb_forget": _forget,
}


def run_tool(name: str, client: RetainDBClient, scope: Scope, args: dict[str, Any]) -> Any:
    """Run tool ``name``; ``ToolArgumentError`` for bad arguments, ``BackendError`` when
    RetainDB fails."""
    return TOOLS[name](client, scope, args)
