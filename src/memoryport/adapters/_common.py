"""What every adapter shares: the memory behind it, the fenced block, the memory tools,
and a turn tracker for frameworks that show the conversation instead of calling hooks.

Nothing here knows a framework; each ``memoryport.adapters.<framework>`` module translates
these into its framework's types.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memoryport.aio import AsyncMemory
from memoryport.api import Memory
from memoryport.fence import scrub_text
from memoryport.turn import Turn

__all__ = [
    "ToolRunner",
    "ToolSpec",
    "TurnTracker",
    "answer_text",
    "fenced_block",
    "missing_extra",
    "sync_memory",
    "tool_specs",
]

MemoryLike = Memory | AsyncMemory
"""What an adapter accepts: ``memoryport.open()`` or ``await memoryport.open_async()``."""


def missing_extra(adapter: str, extra: str, error: ImportError) -> ImportError:
    """The error for an adapter imported without its framework: what is missing and the
    install command that brings it."""
    return ImportError(
        f"memoryport.adapters.{adapter} needs the {extra!r} extra ({error.name or error} "
        f"is not installed): pip install 'memoryport[{extra}]'"
    )


def sync_memory(memory: object) -> Memory:
    """The ``Memory`` behind ``memory`` (a ``Memory`` or an ``AsyncMemory``).

    ``TypeError`` for anything else, naming what was given and what to pass.
    """
    if isinstance(memory, AsyncMemory):
        return memory.memory
    if isinstance(memory, Memory):
        return memory
    raise TypeError(
        "a memoryport adapter needs a memoryport.Memory (memoryport.open()) or an "
        f"AsyncMemory (await memoryport.open_async()), not {type(memory).__name__}"
    )


def fenced_block(turn: Turn | None) -> str:
    """The turn's fenced ``<memory-context>`` block on its own ("" when nothing was
    recalled). It belongs in the current request to the model only, never in history."""
    if turn is None:
        return ""
    content = turn.api_user_message("")
    return content.lstrip("\n") if isinstance(content, str) else ""


def answer_text(text: str | None) -> str | None:
    """The model's answer as it is stored: any ``<memory-context>`` span the model echoed
    removed (``fence.scrub_text``), so recalled memory never reaches history."""
    return None if text is None else scrub_text(text)


def request_text(turn: Turn | None, text: str) -> str:
    """``text`` (the current user message) with the turn's fenced block appended."""
    if turn is None:
        return text
    content = turn.api_user_message(text)
    return content if isinstance(content, str) else text


@dataclass(frozen=True)
class ToolSpec:
    """One memory tool in neutral form: name, description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


def tool_specs(memory: Memory) -> list[ToolSpec]:
    """Every memory tool the memory offers (``memory``, ``session_search``, providers')."""
    specs = []
    for schema in memory.tool_schemas():
        parameters = schema.get("parameters") or {"type": "object", "properties": {}}
        specs.append(
            ToolSpec(str(schema["name"]), str(schema.get("description") or ""), dict(parameters))
        )
    return specs


class ToolRunner:
    """Runs memory tools: inside the open turn (recorded in the turn's stored history,
    ``Turn.handle_tool_call``) or, with no turn open, through ``Memory.call_tool``.

    Results are always JSON text; failures come back in the one tool-error shape. Calls
    are serialized (frameworks run tool calls in parallel; a turn records one at a time).
    """

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.turn: Turn | None = None
        self._lock = threading.Lock()

    def call(self, name: str, args: Any) -> str:
        """Run ``name`` with ``args`` (a dict or its JSON text); return the JSON result."""
        with self._lock:
            turn = self.turn
            if turn is not None and not turn.closed:
                return turn.handle_tool_call(name, args)
            return self.memory.call_tool(name, args)

    async def acall(self, name: str, args: Any) -> str:
        """``call`` off the event loop."""
        return await asyncio.to_thread(self.call, name, args)


Said = tuple[str, str]
"""A message as the tracker sees it: ``(role, text)``. Roles: ``user``, ``assistant`` (text
that may be the answer), ``assistant_call`` (an assistant message calling tools),
``tool`` (a tool result), anything else (ignored)."""


class TurnTracker:
    """Turns for frameworks that show the conversation rather than call lifecycle hooks
    (LlamaIndex memory blocks, AutoGen ``Memory``).

    ``observe(messages)`` first settles the open turn when the messages hold its answer
    (``end_turn``: stored and synced) or show that the user moved on without one (stored as
    interrupted, not synced), then opens a turn (recall) for a trailing user message. A turn
    is never stored twice: the tracker ends each turn it opened exactly once.
    """

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.tools = ToolRunner(memory)
        self._lock = asyncio.Lock()

    @property
    def turn(self) -> Turn | None:
        """The open turn (recalled for, not stored yet), or None."""
        return self.tools.turn

    async def observe(self, messages: Sequence[Said]) -> Turn | None:
        """Settle the open turn from ``messages``, then open one for a trailing user
        message; returns the open turn (None when the last message is not the user's)."""
        async with self._lock:
            last = messages[-1] if messages else None
            trailing_user = last is not None and last[0] == "user" and bool(last[1].strip())
            turn = self.turn
            if turn is not None and trailing_user and _same(turn, last) and not _answered(
                turn, messages[:-1]
            ):
                return turn  # the same question seen again: one recall per turn
            await self._settle(messages[:-1] if trailing_user else messages)
            if trailing_user and last is not None:
                await self._end(None)  # still open: the user moved on without an answer
                self.tools.turn = await asyncio.to_thread(self.memory.begin_turn, last[1])
            return self.turn

    async def settle(self, messages: Sequence[Said]) -> None:
        """End the open turn if ``messages`` hold its answer (or show the user moved on)."""
        async with self._lock:
            await self._settle(messages)

    async def finish(self, final_response: str | None) -> None:
        """End the open turn now with ``final_response`` (None: stored as interrupted)."""
        async with self._lock:
            await self._end(final_response)

    async def _settle(self, messages: Sequence[Said]) -> None:
        turn = self.turn
        if turn is None:
            return
        start = _user_index(turn, messages)
        if start is None:
            return
        answer: str | None = None
        for role, text in messages[start + 1 :]:
            if role == "user":
                break
            if role == "assistant" and text.strip():
                answer = text
            elif role in ("tool", "assistant_call"):
                answer = None  # the tool loop went on: that text was not the answer
        moved_on = any(role == "user" for role, _ in messages[start + 1 :])
        if answer is not None or moved_on:
            await self._end(answer)

    async def _end(self, final_response: str | None) -> None:
        turn = self.turn
        self.tools.turn = None
        if turn is None or turn.closed:
            return
        final = answer_text(final_response)
        await asyncio.to_thread(self.memory.end_turn, turn, final, interrupted=final is None)


def _same(turn: Turn, said: Said | None) -> bool:
    return said is not None and said[1].strip() == turn.query.strip()


def _user_index(turn: Turn, messages: Sequence[Said]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index][0] == "user" and _same(turn, messages[index]):
            return index
    return None


def _answered(turn: Turn, messages: Sequence[Said]) -> bool:
    index = _user_index(turn, messages)
    return index is not None and any(
        role == "assistant" and text.strip() for role, text in messages[index + 1 :]
    )
