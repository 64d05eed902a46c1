"""AutoGen (``autogen-core`` 0.7): memoryport as an ``autogen_core.memory.Memory``
(``pip install 'memoryport[autogen]'``)::

    from autogen_agentchat.agents import AssistantAgent
    from memoryport.adapters.autogen import MemoryportMemory

    memory = MemoryportMemory(memoryport.open())
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])

- ``update_context(model_context)``: the model context's trailing user message opens a
  turn (recall, once per user message); the frozen memory system prompt and the fenced
  recall go in as one ``SystemMessage``. The message from the previous call is taken out
  first (through ``save_state``/``load_state``, so no other message is lost), so the
  context holds only the current request's recall and the fence never accumulates in it;
  ``close()`` takes the last one out.
  The previous turn is stored and synced as soon as its answer shows in the context.
- ``query(text)``: the contexts recalled for that user message (the same turn).
- ``add(content)``: a curated-memory entry via the ``memory`` tool (``metadata["target"]``
  ``"memory"`` or ``"user"``); a refused write raises ``ValueError`` with the reason.
- ``clear()``: removes every curated entry (one all-or-nothing ``memory`` batch per
  target; curated history keeps them, ``memoryport memory restore`` brings them back).
- ``close()``: stores the open turn from the last context seen; the ``Memory`` itself
  stays open (its owner closes it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from memoryport.adapters._common import Said, TurnTracker, fenced_block, missing_extra, sync_memory

try:
    from autogen_core import CancellationToken
    from autogen_core.memory import (
        Memory,
        MemoryContent,
        MemoryMimeType,
        MemoryQueryResult,
        UpdateContextResult,
    )
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import SystemMessage
except ImportError as exc:  # the framework is an extra
    raise missing_extra("autogen", "autogen", exc) from exc

from memoryport.api import Memory as MemoryportMemoryCore
from memoryport.fence import sanitize_context

__all__ = ["MemoryportMemory"]

_OPEN_TAG = "<memory-context>"


def _said(message: dict[str, Any]) -> Said:
    """A saved model-context message (``save_state`` form) as the tracker sees it."""
    kind = message.get("type")
    content = message.get("content")
    if kind == "UserMessage":
        text = content if isinstance(content, str) else "\n".join(
            p for p in content or [] if isinstance(p, str))
        return ("user", text)
    if kind == "AssistantMessage":
        return ("assistant", content if isinstance(content, str) else "")
    if kind == "FunctionExecutionResultMessage":
        return ("tool", "")
    return ("system", content if isinstance(content, str) else "")


def _ours(message: Any) -> bool:
    return isinstance(message, dict) and message.get("type") == "SystemMessage" and (
        _OPEN_TAG in str(message.get("content", "")))


class MemoryportMemory(Memory):
    """memoryport behind AutoGen's ``Memory`` protocol (module doc)."""

    def __init__(self, memory: object) -> None:
        self.memory: MemoryportMemoryCore = sync_memory(memory)
        self._tracker = TurnTracker(self.memory)
        self._context: ChatCompletionContext | None = None

    async def _strip_previous(self, model_context: ChatCompletionContext) -> list[Said]:
        """Take this adapter's previous message out of the context; return every message
        the context holds (all of them, not only the window a buffered context shows)."""
        state = dict(await model_context.save_state())
        messages = list(state.get("messages") or [])
        kept = [m for m in messages if not _ours(m)]
        if len(kept) != len(messages):
            await model_context.load_state({**state, "messages": kept})
        return [_said(m) for m in kept if isinstance(m, dict)]

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recall for the trailing user message into the context (request only)."""
        messages = await self._strip_previous(model_context)
        self._context = model_context
        if not self.memory.session_id:
            await asyncio.to_thread(self.memory.start_session)
        turn = await self._tracker.observe(messages)
        block = fenced_block(turn)
        if block:
            parts = [self.memory.system_prompt.strip(), block]
            await model_context.add_message(
                SystemMessage(content="\n\n".join(p for p in parts if p)))
        return UpdateContextResult(memories=self._results())

    def _results(self) -> MemoryQueryResult:
        turn = self._tracker.turn
        contexts = turn.contexts if turn is not None else []
        return MemoryQueryResult(results=[
            MemoryContent(content=sanitize_context(text), mime_type=MemoryMimeType.TEXT,
                          metadata={"provider": label})
            for label, text in contexts if text.strip()
        ])

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """What memoryport recalls for ``query`` as a user message (one turn per message)."""
        text = query if isinstance(query, str) else str(query.content)
        turn = self._tracker.turn
        if turn is None or turn.query.strip() != text.strip():
            await self._tracker.observe([("user", text)])
        return self._results()

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Add ``content`` to curated memory (``metadata["target"]``, default ``memory``)."""
        value = content.content
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                               default=str)
        target = str((content.metadata or {}).get("target", "memory"))
        args = {"action": "add", "target": target, "content": text}
        result = json.loads(await asyncio.to_thread(
            self.memory.call_tool, "memory", args, source="autogen"))
        if not result.get("success"):
            raise ValueError(f"memoryport refused to add the entry: {result.get('error')}")

    async def clear(self) -> None:
        """Remove every curated entry (restorable from curated history)."""
        curated = self.memory.curated
        store = curated.store if curated is not None else None
        if store is None:
            return
        for target in ("memory", "user"):
            entries = store.entries(target) if store.is_enabled(target) else []
            if not entries:
                continue
            ops = [{"action": "remove", "old_text": entry} for entry in entries]
            args = {"target": target, "operations": ops}
            result = json.loads(await asyncio.to_thread(
                self.memory.call_tool, "memory", args, source="autogen"))
            if not result.get("success"):
                raise ValueError(f"memoryport could not clear {target}: {result.get('error')}")

    async def close(self) -> None:
        """Take the recall out of the last model context seen and store the open turn
        from it (with its answer, or as interrupted)."""
        if self._context is not None:
            await self._tracker.settle(await self._strip_previous(self._context))
        await self._tracker.finish(None)
