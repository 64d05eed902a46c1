"""The ``supermemory_*`` tool schemas and their calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryport.errors import ToolArgumentError
from memoryport.providers.supermemory.client import SupermemoryClient
from memoryport.types import ToolSchema

__all__ = ["TOOLS", "ToolScope", "run_tool", "schemas"]


@dataclass(frozen=True)
class ToolScope:
    """The namespaces a call may use: the user's own and the custom containers'."""

    namespace: str
    containers: tuple[str, ...]
    search_mode: str
    metadata: dict[str, Any]

    def pick(self, args: dict[str, Any]) -> str:
        """The namespace named by ``args["container"]`` (the user's own when absent)."""
        name = args.get("container")
        if name in (None, ""):
            return self.namespace
        if name not in self.containers:
            allowed = ", ".join(self.containers) or "none configured"
            raise ToolArgumentError(f"'container' must be one of: {allowed}")
        return f"{self.namespace}__{name}"


def schemas(containers: tuple[str, ...]) -> list[ToolSchema]:
    """The four tools; with custom containers each takes an optional ``container``."""
    extra: dict[str, Any] = {}
    if containers:
        extra = {"container": {"type": "string", "enum": list(containers),
                               "description": "A custom container (default: the user's"
                               " own memory)."}}

    def schema(name: str, description: str, props: dict[str, Any],
               required: list[str]) -> ToolSchema:
        return {"name": name, "description": description, "parameters": {
            "type": "object", "properties": {**props, **extra}, "required": required}}

    return [
        schema("supermemory_store", "Save one durable memory to Supermemory.",
               {"content": {"type": "string", "description": "What to remember."}},
               ["content"]),
        schema("supermemory_search", "Semantic search of the user's Supermemory memories.",
               {"query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                          "description": "Most results (default 10)."}}, ["query"]),
        schema("supermemory_forget", "Forget memories: by id (from supermemory_search) or"
               " every memory matching a query.",
               {"id": {"type": "string", "description": "A memory id."},
                "query": {"type": "string", "description": "Forget what matches this."}},
               []),
        schema("supermemory_profile", "The user's profile: stable facts and recent"
               " context.", {}, []),
    ]


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"'{key}' must be a non-empty string")
    return value.strip()


def _store(client: SupermemoryClient, scope: ToolScope, args: dict[str, Any]) -> Any:
    ref = client.add(scope.pick(args), _text(args, "content"),
                     metadata={**scope.metadata, "kind": "tool"})
    return {"success": True, **(ref if isinstance(ref, dict) else {"result": ref})}


def _search(client: SupermemoryClient, scope: ToolScope, args: dict[str, Any]) -> Any:
    limit = args.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
        raise ToolArgumentError("'limit' must be an integer from 1 to 50")
    found = client.search(scope.pick(args), _text(args, "query"), limit=limit,
                          mode=scope.search_mode)
    rows = found.get("results", []) if isinstance(found, dict) else []
    results = [{"id": r.get("id"), "memory": r.get("memory") or r.get("chunk"),
                "similarity": r.get("similarity")} for r in rows if isinstance(r, dict)]
    return {"success": True, "results": results, "count": len(results)}


def _forget(client: SupermemoryClient, scope: ToolScope, args: dict[str, Any]) -> Any:
    namespace = scope.pick(args)
    if args.get("id"):
        result = client.forget(namespace, [_text(args, "id")])
    elif args.get("query"):
        result = client.forget_matching(namespace, _text(args, "query"))
    else:
        raise ToolArgumentError("give 'id' (from supermemory_search) or 'query'")
    return {"success": True, **(result if isinstance(result, dict) else {"result": result})}


def _profile(client: SupermemoryClient, scope: ToolScope, args: dict[str, Any]) -> Any:
    answer = client.profile(scope.pick(args))
    return {"success": True, **(answer if isinstance(answer, dict) else {"profile": answer})}


TOOLS: dict[str, Callable[[SupermemoryClient, ToolScope, dict[str, Any]], Any]] = {
    "supermemory_store": _store, "supermemory_search": _search,
    "supermemory_forget": _forget, "supermemory_profile": _profile,
}


def run_tool(name: str, client: SupermemoryClient, scope: ToolScope,
             args: dict[str, Any]) -> Any:
    """Run tool ``name``; ``ToolArgumentError`` or ``BackendError`` on failure."""
    return TOOLS[name](client, scope, args)
