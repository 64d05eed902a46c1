"""``AsyncMemory``: the asyncio twin of ``Memory``.

It shares ``Memory``'s one implementation: every blocking step runs on a worker thread via
``asyncio.to_thread``, so an asyncio agent never blocks its event loop. Only compression
differs, because the summarizer may itself be a coroutine function.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from memoryport.api import CompressionResult, Memory, SwitchReason, open_memory
from memoryport.turn import Turn, UserContent
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["AsyncMemory", "open_async"]

AsyncSummarizer = Callable[[list[Message], list[str]], str | Awaitable[str]]


class AsyncMemory:
    """Async methods over a ``Memory``; see ``Memory`` for the semantics of each."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    @property
    def session_id(self) -> str:
        """The active session id."""
        return self.memory.session_id

    @property
    def context(self) -> SessionContext:
        """The active session context (``Memory.context``)."""
        return self.memory.context

    @property
    def system_prompt(self) -> str:
        """The frozen system prompt of the active session."""
        return self.memory.system_prompt

    def tool_schemas(self) -> list[ToolSchema]:
        """Every tool schema (cheap after the first call)."""
        return self.memory.tool_schemas()

    def openai_tools(self) -> list[dict[str, Any]]:
        """The schemas wrapped for the chat-completions ``tools`` parameter."""
        return self.memory.openai_tools()

    def reserve_tool_names(self, *names: str) -> None:
        """``Memory.reserve_tool_names``: tools the agent serves itself (no I/O)."""
        self.memory.reserve_tool_names(*names)

    async def start_session(self, session_id: str | None = None, **kwargs: Any) -> str:
        """Async ``Memory.start_session``."""
        return await asyncio.to_thread(self.memory.start_session, session_id, **kwargs)

    async def begin_turn(self, user_message: UserContent) -> Turn:
        """Async ``Memory.begin_turn`` (recall runs off the event loop)."""
        return await asyncio.to_thread(self.memory.begin_turn, user_message)

    async def handle_tool_call(
        self, turn: Turn, name: str, args: Any, *, tool_call_id: str = ""
    ) -> str:
        """Async ``Turn.handle_tool_call``."""
        return await asyncio.to_thread(turn.handle_tool_call, name, args, tool_call_id=tool_call_id)

    async def end_turn(
        self, turn: Turn, final_response: str | None, *, interrupted: bool = False
    ) -> None:
        """Async ``Memory.end_turn``."""
        await asyncio.to_thread(self.memory.end_turn, turn, final_response, interrupted=interrupted)

    async def call_tool(self, name: str, args: Any, *, tool_call_id: str = "") -> str:
        """Async ``Memory.call_tool``."""
        return await asyncio.to_thread(self.memory.call_tool, name, args, tool_call_id=tool_call_id)

    async def switch_session(
        self, session_id: str | None = None, *, reason: SwitchReason = "new", **kwargs: Any
    ) -> str:
        """Async ``Memory.switch_session``."""
        return await asyncio.to_thread(
            self.memory.switch_session, session_id, reason=reason, **kwargs
        )

    async def compress(
        self, messages: Sequence[Message], summarize: AsyncSummarizer
    ) -> CompressionResult:
        """Async ``Memory.compress``; ``summarize`` may be sync or ``async def``."""
        contributions = await asyncio.to_thread(self.memory.collect_compression_context, messages)
        summary = summarize(list(messages), [text for _, text in contributions])
        if inspect.isawaitable(summary):
            summary = await summary
        return await asyncio.to_thread(
            self.memory.rotate_after_compression, messages, str(summary), contributions
        )

    async def session_messages(self, session_id: str) -> list[Message]:
        """Async ``Memory.session_messages``."""
        return await asyncio.to_thread(self.memory.session_messages, session_id)

    async def flush(self, timeout: float | None = None) -> int:
        """Async ``Memory.flush``."""
        return await asyncio.to_thread(self.memory.flush, timeout)

    async def close(self, messages: Sequence[Message] | None = None) -> None:
        """Async ``Memory.close``."""
        await asyncio.to_thread(self.memory.close, messages)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def open_async(
    home: str | Path | None = None,
    profile: str | None = None,
    user_id: str | None = None,
    **kwargs: Any,
) -> AsyncMemory:
    """Async ``memoryport.open``: builds the ``Memory`` off the event loop."""
    memory = await asyncio.to_thread(open_memory, home, profile, user_id, **kwargs)
    return AsyncMemory(memory)
