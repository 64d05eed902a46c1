"""LangGraph: a ``BaseStore`` over memoryport's curated memory (``pip install
'memoryport[langchain]'``), so LangGraph's long-term store API and ``langmem``'s memory
tools write the same MEMORY.md / USER.md the ``memory`` tool does::

    from langmem import create_manage_memory_tool, create_search_memory_tool
    from memoryport.adapters.langgraph import MemoryportStore

    store = MemoryportStore(memoryport.open())
    tools = [create_manage_memory_tool(("memories",), store=store),
             create_search_memory_tool(("memories",), store=store)]

Mapping (translation only; every write is a ``memory`` tool call through ``Memory``, so
safety scanning, budgets, history and providers' ``on_memory_write`` all apply):

- namespace: a namespace whose first label is ``"user"`` addresses the ``user`` target
  (USER.md), every other namespace the ``memory`` target (MEMORY.md). The user scope
  comes from the ``Memory``'s ``user_id``; ``list_namespaces`` gives ``("memory",)`` and
  ``("user",)``.
- item: one curated entry. A value ``{"content": "text"}`` is stored as the text; any
  other value as its compact JSON. The key is derived from the entry's text
  (:func:`entry_key`, a UUID), so an update gives the item a new key.
- put on an existing key replaces that entry, on an unknown key adds one; a put of
  ``None`` (delete) removes it. A write the ``memory`` tool refuses (budget, unsafe
  content, ambiguous match) raises ``ValueError`` with the tool's message; nothing changes.
- search ranks entries by the words they share with ``query``; ``filter`` compares value
  fields for equality. ``ttl`` and ``index`` are ignored (entries never expire; there is
  no vector index).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from memoryport.adapters._common import missing_extra, sync_memory

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # the framework is an extra
    raise missing_extra("langgraph", "langchain", exc) from exc

from memoryport.api import Memory

__all__ = ["MemoryportStore", "entry_key"]

_WORD = re.compile(r"\w+", re.UNICODE)
_NAMESPACES: tuple[tuple[str, ...], ...] = (("memory",), ("user",))


_KEYS = uuid.UUID("6d656d6f-7279-706f-7274-6c616e677261")


def entry_key(text: str) -> str:
    """The key of a curated entry: a UUID (v5) of its text, so tools that type keys as
    UUIDs (langmem's ``manage_memory``) accept it."""
    return str(uuid.uuid5(_KEYS, text))


def _target(namespace: tuple[str, ...]) -> str:
    return "user" if namespace and namespace[0] == "user" else "memory"


def _value(text: str) -> dict[str, Any]:
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"content": text}


def _text(value: dict[str, Any]) -> str:
    content = value.get("content")
    if set(value) == {"content"} and isinstance(content, str):
        return content
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True)) if path else True


class MemoryportStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are curated-memory entries (module doc)."""

    supports_ttl = False

    def __init__(self, memory: object) -> None:
        self.memory: Memory = sync_memory(memory)

    # ------------------------------------------------------------------ reads
    def _entries(self, target: str) -> list[str]:
        curated = self.memory.curated
        store = curated.store if curated is not None else None
        if store is None or not store.is_enabled(target):
            return []
        return store.entries(target)

    def _item(self, namespace: tuple[str, ...], text: str) -> Item:
        now = datetime.now(UTC)
        return Item(value=_value(text), key=entry_key(text), namespace=namespace,
                    created_at=now, updated_at=now)

    def _search_item(self, namespace: tuple[str, ...], text: str, score: float) -> SearchItem:
        now = datetime.now(UTC)
        return SearchItem(namespace, entry_key(text), _value(text), now, now, score)

    def _get(self, op: GetOp) -> Item | None:
        for text in self._entries(_target(op.namespace)):
            if entry_key(text) == op.key:
                return self._item(op.namespace, text)
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = _words(op.query or "")
        scored: list[tuple[float, int, str]] = []
        for order, text in enumerate(self._entries(_target(op.namespace_prefix))):
            value = _value(text)
            if op.filter and any(value.get(k) != v for k, v in op.filter.items()):
                continue
            score = len(wanted & _words(text)) / len(wanted) if wanted else 0.0
            scored.append((score, order, text))
        if wanted:
            scored.sort(key=lambda row: (-row[0], row[1]))
        page = scored[op.offset : op.offset + op.limit]
        return [self._search_item(op.namespace_prefix, text, score) for score, _, text in page]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = [ns for ns in _NAMESPACES
                 if all(_matches(ns, c) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        return found[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ writes
    def _put(self, op: PutOp) -> None:
        target = _target(op.namespace)
        current = next((t for t in self._entries(target) if entry_key(t) == op.key), None)
        if op.value is None:
            if current is None:
                return
            args: dict[str, Any] = {"action": "remove", "target": target, "old_text": current}
        elif current is not None:
            args = {"action": "replace", "target": target, "old_text": current,
                    "content": _text(dict(op.value))}
        else:
            args = {"action": "add", "target": target, "content": _text(dict(op.value))}
        result = json.loads(self.memory.call_tool("memory", args, source="langgraph_store"))
        if not result.get("success"):
            raise ValueError(
                f"memoryport refused to {args['action']} the {target} entry: "
                f"{result.get('error', result)}"
            )

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (puts through the ``memory`` tool); one result per op."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                raise TypeError(f"MemoryportStore: unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` off the event loop."""
        return await asyncio.to_thread(self.batch, list(ops))
