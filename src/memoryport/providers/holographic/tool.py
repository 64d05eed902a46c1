"""The ``fact_store`` and ``fact_feedback`` tools: schemas (the reference shapes) and
the dispatcher. Results are JSON-ready dicts; every failure raises a ``MemoryportError``
(``ToolArgumentError`` for arguments that do not fit, ``UnsafeContent`` for refused
content) that the provider turns into the one tool-error shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport import safety
from memoryport.errors import ToolArgumentError
from memoryport.storage.facts.records import CATEGORIES, FactInput, Provenance, as_of_time
from memoryport.storage.facts.store import FactStore
from memoryport.types import ToolSchema

__all__ = ["ACTIONS", "FACT_FEEDBACK_SCHEMA", "FACT_STORE_SCHEMA", "ToolCall", "run_tool"]

ACTIONS = ("add", "search", "probe", "related", "reason", "contradict", "update", "remove",
           "list", "history", "why")

FACT_STORE_SCHEMA: ToolSchema = {
    "name": "fact_store",
    "description": (
        "Durable facts about the user, people, projects and tools. add: store one"
        " statement (a newer fact that changes a value, e.g. a new city or editor, retires"
        " the older one). search: ranked facts for a query. probe: facts about one entity."
        " related: entities sharing facts with an entity, and their facts. reason: facts"
        " linking several entities (those covering the most first). contradict: retired"
        " facts with the facts that replaced them. update/remove: change or retire a fact"
        " by fact_id. list: facts newest first. history: a fact's supersession chain (the"
        " facts it replaced and that replaced it) and its revisions. why: where a fact came"
        " from (session, message or tool call, when) and the text it was read from."
        " search with as_of (a date) answers what was believed then."
    ),
    "parameters": {
        "type": "object",
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "content": {"type": "string", "description": "The fact (add, update)."},
            "query": {"type": "string", "description": "Search text (search)."},
            "as_of": {"type": "string", "description": "A date (2024-03-01) or ISO"
                      " date-time: search what was believed then (search)."},
            "entity": {"type": "string", "description": "An entity name (probe, related)."},
            "entities": {"type": "array", "items": {"type": "string"},
                         "description": "Entity names (reason)."},
            "fact_id": {"type": "integer", "description": "The fact (update, remove,"
                        " history, why; contradict: only pairs involving it)."},
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "tags": {"type": "string", "description": "Comma-separated tags."},
            "trust_delta": {"type": "number", "description": "Trust change (update)."},
            "min_trust": {"type": "number", "description": "Trust floor (search)."},
            "limit": {"type": "integer", "description": "Most results (1-50)."},
        },
    },
}

FACT_FEEDBACK_SCHEMA: ToolSchema = {
    "name": "fact_feedback",
    "description": (
        "Rate a recalled fact: helpful raises its trust, unhelpful lowers it; facts under"
        " the trust floor are no longer recalled (they stay listed)."
    ),
    "parameters": {
        "type": "object",
        "required": ["action", "fact_id"],
        "properties": {
            "action": {"type": "string", "enum": ["helpful", "unhelpful"]},
            "fact_id": {"type": "integer"},
        },
    },
}


@dataclass(frozen=True)
class ToolCall:
    """One call: the store, the arguments and where it came from."""

    store: FactStore
    args: dict[str, Any]
    provenance: Provenance
    home: Path | None = None

    def text(self, key: str) -> str:
        """A required non-empty string argument."""
        value = self.args.get(key)
        if not isinstance(value, str) or not value.strip():
            action = self.args.get("action")
            raise ToolArgumentError(
                f"Missing required argument: {key!r} (a non-empty string; action {action!r}"
                " needs it)"
            )
        return value.strip()

    def fact_id(self) -> int:
        """The required integer ``fact_id``."""
        value = self.args.get("fact_id")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ToolArgumentError(
                f"Missing required argument: 'fact_id' (a positive integer; got {value!r});"
                " find ids with action='list' or 'search'"
            )
        return value

    def limit(self, default: int = 10) -> int:
        """``limit`` in 1-50 (default ``default``)."""
        value = self.args.get("limit", default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 50:
            raise ToolArgumentError(f"limit must be an integer from 1 to 50, got {value!r}")
        return value

    def number(self, key: str, low: float, high: float) -> float | None:
        """An optional number in [low, high]."""
        value = self.args.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                low <= value <= high):
            raise ToolArgumentError(f"{key} must be a number from {low} to {high}, got {value!r}")
        return float(value)


def _add(call: ToolCall) -> dict[str, Any]:
    content = call.text("content")
    safety.check(content, home=call.home)
    category = call.args.get("category") or "general"
    tags = call.args.get("tags") or ""
    if not isinstance(tags, str):
        raise ToolArgumentError("tags must be a string of comma-separated tags")
    result = call.store.add(FactInput(content, category, tags, None, None, call.provenance))
    return {"success": True, "fact_id": result.fact.id, "status": result.status,
            "superseded": result.superseded}


def _search(call: ToolCall) -> dict[str, Any]:
    query = call.text("query")
    raw = call.args.get("as_of")
    as_of = as_of_time(raw) if raw not in (None, "") else None
    facts = call.store.search(query, limit=call.limit(), min_trust=call.number("min_trust", 0, 1),
                              as_of=as_of)
    call.store.mark_retrieved([f.id for f in facts])
    result = {"results": [f.to_dict() for f in facts], "count": len(facts), "query": query}
    return result | ({"as_of": as_of} if as_of is not None else {})


def _history(call: ToolCall) -> dict[str, Any]:
    fact_id = call.fact_id()
    chain = call.store.chain(fact_id)
    return {"fact_id": fact_id, "chain": [f.to_dict() for f in chain], "count": len(chain),
            "revisions": [r.to_dict() for r in call.store.revisions(fact_id)]}


def _why(call: ToolCall) -> dict[str, Any]:
    return call.store.why(call.fact_id())


def _probe(call: ToolCall) -> dict[str, Any]:
    entity = call.text("entity")
    facts = call.store.probe(entity, limit=call.limit())
    return {"entity": entity, "results": [f.to_dict() for f in facts], "count": len(facts)}


def _related(call: ToolCall) -> dict[str, Any]:
    entity = call.text("entity")
    entities, facts = call.store.related(entity, limit=call.limit())
    return {"entity": entity, "entities": entities, "results": [f.to_dict() for f in facts],
            "count": len(facts)}


def _reason(call: ToolCall) -> dict[str, Any]:
    names = call.args.get("entities")
    if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and n.strip() for n in names):
        raise ToolArgumentError(
            "Missing required argument: 'entities' (a non-empty list of entity names)"
        )
    found = call.store.reason([n.strip() for n in names], limit=call.limit())
    results = [{**f.to_dict(), "covers": covers} for f, covers in found]
    return {"entities": names, "results": results, "count": len(results)}


def _contradict(call: ToolCall) -> dict[str, Any]:
    fact_id = call.fact_id() if call.args.get("fact_id") is not None else None
    pairs = call.store.contradictions(limit=call.limit(20), fact_id=fact_id)
    return {"contradictions": [p.to_dict() for p in pairs], "count": len(pairs)}


def _update(call: ToolCall) -> dict[str, Any]:
    fact_id = call.fact_id()
    content = call.args.get("content")
    if content is not None:
        content = call.text("content")
        safety.check(content, home=call.home)
    category, tags = call.args.get("category"), call.args.get("tags")
    delta = call.number("trust_delta", -1, 1)
    if content is None and category is None and tags is None and delta is None:
        raise ToolArgumentError(
            "update needs at least one of content, category, tags, trust_delta"
        )
    if tags is not None and not isinstance(tags, str):
        raise ToolArgumentError("tags must be a string of comma-separated tags")
    fact = call.store.update(fact_id, content=content, category=category, tags=tags,
                             trust_delta=delta, provenance=call.provenance)
    return {"updated": True, "fact_id": fact_id, "fact": fact.to_dict()}


def _remove(call: ToolCall) -> dict[str, Any]:
    fact_id = call.fact_id()
    return {"removed": call.store.remove(fact_id, provenance=call.provenance),
            "fact_id": fact_id}


def _list(call: ToolCall) -> dict[str, Any]:
    category = call.args.get("category") or ""
    if category and category not in CATEGORIES:
        raise ToolArgumentError(f"category {category!r} is not one of {', '.join(CATEGORIES)}")
    facts = call.store.list_facts(limit=call.limit(20), category=category)
    floor = call.store.min_trust
    rows = [{**f.to_dict(), "hidden_from_recall": f.trust_score < floor} for f in facts]
    return {"facts": rows, "count": len(rows)}


_ACTIONS: dict[str, Callable[[ToolCall], dict[str, Any]]] = {
    "add": _add, "search": _search, "probe": _probe, "related": _related, "reason": _reason,
    "contradict": _contradict, "update": _update, "remove": _remove, "list": _list,
    "history": _history, "why": _why,
}


def run_tool(name: str, call: ToolCall) -> dict[str, Any]:
    """Run ``fact_store`` or ``fact_feedback``; raise ``MemoryportError`` on bad calls."""
    action = call.args.get("action")
    if name == "fact_feedback":
        if action not in ("helpful", "unhelpful"):
            raise ToolArgumentError(
                f"Unknown action: {action!r} (fact_feedback takes 'helpful' or 'unhelpful')"
            )
        return call.store.feedback(call.fact_id(), action == "helpful",
                                   provenance=call.provenance)
    handler = _ACTIONS.get(action) if isinstance(action, str) else None
    if handler is None:
        raise ToolArgumentError(f"Unknown action: {action!r} (one of {', '.join(ACTIONS)})")
    return handler(call)
