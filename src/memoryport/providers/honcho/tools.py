"""The five Honcho tools: schemas and what each one does. Every tool takes an optional
``peer`` (``"user"``, the default, or ``"ai"``) naming whose memory it reads or writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryport.errors import tool_error
from memoryport.providers.honcho.client import Link
from memoryport.providers.honcho.config import LEVELS, HonchoConfig
from memoryport.providers.honcho.text import truncate_to_budget
from memoryport.types import ToolSchema

__all__ = ["SCHEMAS", "SEARCH_DEFAULT_TOKENS", "SEARCH_MAX_TOKENS", "Scope", "run_tool"]

SEARCH_DEFAULT_TOKENS = 800
SEARCH_MAX_TOKENS = 2000

_PEER = {"type": "string", "enum": ["user", "ai"],
         "description": "Whose memory: the user's (default) or the AI's own"}


def _schema(name: str, description: str, properties: dict[str, Any],
            required: list[str]) -> ToolSchema:
    return {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {**properties, "peer": _PEER}, "required": required}}


SCHEMAS: list[ToolSchema] = [
    _schema("honcho_profile", "The peer card: a short list of key facts about the user (or"
            " the AI). No LLM call.", {}, []),
    _schema("honcho_search", "Semantic search over what Honcho knows about the user (or the"
            " AI). No LLM call.", {
                "query": {"type": "string", "description": "What to look for"},
                "max_tokens": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_TOKENS,
                               "description": "Budget of the answer (default 800, max 2000)"},
            }, ["query"]),
    _schema("honcho_context", "The full session context: summary, representation, peer card"
            " and recent messages. No LLM call.", {}, []),
    _schema("honcho_reasoning", "Ask Honcho a question about the user (or the AI); answered"
            " by Honcho's reasoning model (an LLM call: use sparingly).", {
                "query": {"type": "string", "description": "The question"},
                "reasoning_level": {"type": "string", "enum": list(LEVELS),
                                    "description": "How hard to think (if allowed)"},
            }, ["query"]),
    _schema("honcho_conclude", "Store a persistent fact or conclusion about the user (or the"
            " AI). No LLM call.", {
                "conclusion": {"type": "string", "description": "The fact, one sentence"},
            }, ["conclusion"]),
]
"""The tool schemas (shown unless ``recallMode`` is ``context``)."""


@dataclass(frozen=True)
class Scope:
    """Who and where a tool call is about."""

    link: Link
    config: HonchoConfig
    user: str
    ai: str
    session: str


def _bad(message: str) -> dict[str, Any]:
    return tool_error(message, "ToolArgumentError")


def _text(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def run_tool(name: str, args: dict[str, Any], scope: Scope) -> dict[str, Any]:
    """Run tool ``name``; bad arguments give the tool-error shape, backend failures raise
    ``ProviderError`` (the caller turns it into the same shape)."""
    peer = args.get("peer", "user")
    if peer not in ("user", "ai"):
        return _bad(f"peer must be 'user' or 'ai', got {peer!r}")
    target = scope.user if peer == "user" else scope.ai
    # The AI peer observes the user; about itself it asks with no target.
    about = target if peer == "user" else None
    link = scope.link
    if name == "honcho_profile":
        return {"success": True, "peer": peer, "card": link.card(scope.ai, about)}
    if name == "honcho_context":
        data = link.session_context(scope.session, scope.user, scope.ai, target,
                                    scope.config.context_tokens)
        return {"success": True, "peer": peer, "session": scope.session, **data}
    if name == "honcho_search":
        return _search(args, scope, peer, about)
    if name == "honcho_reasoning":
        return _reasoning(args, scope, peer, about)
    conclusion = _text(args, "conclusion")
    if conclusion is None:
        return _bad("conclusion must be a non-empty string")
    link.conclude(scope.ai, target, conclusion, scope.session)
    return {"success": True, "peer": peer, "stored": conclusion}


def _search(args: dict[str, Any], scope: Scope, peer: str, about: str | None) -> dict[str, Any]:
    query, tokens = _text(args, "query"), args.get("max_tokens", SEARCH_DEFAULT_TOKENS)
    if query is None:
        return _bad("query must be a non-empty string")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        return _bad(f"max_tokens must be a positive integer, got {tokens!r}")
    tokens = min(tokens, SEARCH_MAX_TOKENS)
    found = scope.link.representation(scope.ai, about, query)
    return {"success": True, "peer": peer, "result": truncate_to_budget(found, tokens),
            "max_tokens": tokens}


def _reasoning(args: dict[str, Any], scope: Scope, peer: str,
               about: str | None) -> dict[str, Any]:
    query = _text(args, "query")
    if query is None:
        return _bad("query must be a non-empty string")
    level = scope.config.dialectic_reasoning_level
    asked = args.get("reasoning_level")
    if asked is not None:
        if asked not in LEVELS:
            return _bad(f"reasoning_level must be one of {', '.join(LEVELS)}, got {asked!r}")
        if scope.config.dialectic_dynamic:
            level = asked
    level = scope.config.cap(level)
    query = query[: scope.config.dialectic_max_input_chars]
    answer = scope.link.chat(scope.ai, about, query, scope.session, level)
    return {"success": True, "peer": peer, "reasoning_level": level, "answer": answer}
