"""LlamaIndex: memoryport as a memory block (``pip install 'memoryport[llamaindex]'``)::

    from llama_index.core.memory import Memory
    from memoryport.adapters.llamaindex import MemoryportBlock

    block = MemoryportBlock(memoryport.open())
    memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])
    agent.run(user_msg, memory=memory)        # any LlamaIndex agent or chat engine

- ``_aget(messages)``: the LlamaIndex session is the memoryport session. A trailing user
  message opens a turn (recall, once per user message) and the block returns the frozen
  memory system prompt plus the fenced recall; LlamaIndex renders it into the request it
  builds (``insert_method`` SYSTEM or USER) and never stores it in its chat store.
- The turn is stored and synced as soon as its answer is seen: by the next ``_aget``
  (the history then holds the answer) or by ``_aput`` (messages flushed from short-term
  memory), whichever comes first, exactly once. A user message followed by another user
  message without an answer is stored as interrupted (never synced).
- ``acommit(messages)`` stores the last turn at the end of a conversation
  (``await block.acommit(await memory.aget_all())``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from memoryport.adapters._common import Said, TurnTracker, fenced_block, missing_extra, sync_memory

try:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import BaseMemoryBlock
    from pydantic import PrivateAttr
except ImportError as exc:  # the framework is an extra
    raise missing_extra("llamaindex", "llamaindex", exc) from exc

from memoryport.api import Memory

__all__ = ["MemoryportBlock"]


def _calls_tools(message: ChatMessage) -> bool:
    if message.additional_kwargs.get("tool_calls"):
        return True
    return any(getattr(block, "block_type", "") == "tool_call" for block in message.blocks)


def _said(messages: list[ChatMessage] | None) -> list[Said]:
    out: list[Said] = []
    for message in messages or []:
        role = str(getattr(message.role, "value", message.role))
        if role == "assistant" and _calls_tools(message):
            role = "assistant_call"
        out.append((role, message.content or ""))
    return out


class MemoryportBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block: recall in, completed turns out (module doc)."""

    name: str = "memoryport"
    description: str | None = "Long-term memory recalled by memoryport for this message."
    priority: int = 0  # never truncated: the fenced block is budgeted by memoryport

    _tracker: TurnTracker = PrivateAttr()

    def __init__(self, memory: object, **data: Any) -> None:
        super().__init__(**data)
        self._tracker = TurnTracker(sync_memory(memory))

    @property
    def memory(self) -> Memory:
        """The ``Memory`` behind the block."""
        return self._tracker.memory

    async def _session(self, session_id: str | None) -> None:
        memory = self.memory
        if session_id and session_id != memory.session_id:
            await self._tracker.finish(None)  # a turn left open in the old session
            await asyncio.to_thread(memory.start_session, session_id)
        elif not memory.session_id:
            await asyncio.to_thread(memory.start_session)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memory system prompt plus the fenced recall for the trailing user message."""
        session_id = block_kwargs.get("session_id")
        await self._session(session_id if isinstance(session_id, str) else None)
        turn = await self._tracker.observe(_said(messages))
        parts = [self.memory.system_prompt.strip(), fenced_block(turn)]
        return "\n\n".join(p for p in parts if p)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store and sync the open turn if ``messages`` hold its answer."""
        await self._tracker.settle(_said(messages))

    async def acommit(self, messages: list[ChatMessage]) -> None:
        """Store the open turn from the conversation's messages (its answer, or as
        interrupted when there is none); call at the end of a conversation."""
        said = _said(messages)
        await self._tracker.settle(said)
        await self._tracker.finish(None)
