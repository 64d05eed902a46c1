"""The memory nudge's background review: a quiet forked run that may save to memory.

Every ``memory.nudge_interval`` user turns, after the answer has been delivered, the agent
starts a review on a background thread. The review replays the conversation under the
same system prompt the turn used (so a provider's prompt-prefix cache still hits), adds
the review prompt, and lets the model call only the curated ``memory`` tool, through
``Memory.call_tool("memory", ...)``. External providers are never prefetched or synced
for it (Hermes' ``skip_memory``): the review harness is not conversation. A curated write
made by the review is mirrored to providers' ``on_memory_write`` like any curated write,
with ``source="background_review"`` in its metadata. No review starts while a provider's
``capabilities()`` suppresses local writes for both curated targets (the seed-01 proposal's
rule). The review never blocks the user, and its failures are logged, never raised.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from memoryport.agent.llm import ChatClient, ToolCallRequest
from memoryport.api import Memory
from memoryport.errors import tool_error_json
from memoryport.types import Message

__all__ = ["REVIEW_PROMPT", "REVIEW_SOURCE", "BackgroundReviewer", "run_review"]

log = logging.getLogger("memoryport.agent.review")

REVIEW_PROMPT = (
    "Review the conversation above and consider saving to memory if appropriate. "
    "Save durable facts only: the user's preferences, role, habits and corrections "
    "(target 'user'), and stable facts about their environment, projects and conventions "
    "(target 'memory'). Write declarative facts, not instructions to yourself. Replace or "
    "remove entries that are now wrong or duplicated. Do not save task progress or "
    "anything that will be stale tomorrow. If nothing is worth saving, just say "
    "'Nothing to save.'"
)
"""The prompt appended to the replayed conversation (Hermes' background review wording)."""

REVIEW_SOURCE = "background_review"
"""The ``source`` reported with curated writes made by a review."""

MAX_REVIEW_STEPS = 4


def run_review(
    memory: Memory,
    client: ChatClient,
    system_prompt: str,
    history: Sequence[Message],
    *,
    max_steps: int = MAX_REVIEW_STEPS,
) -> str:
    """Run one review synchronously; return the model's last text.

    Only the ``memory`` tool is offered; any other tool the model names gets an error
    result. Nothing here touches prefetch, sync or the session store.
    """
    tools = [t for t in memory.openai_tools() if t["function"].get("name") == "memory"]
    if not tools:
        return ""
    messages: list[Message] = [{"role": "system", "content": system_prompt}, *history]
    messages.append({"role": "user", "content": REVIEW_PROMPT})
    for _ in range(max_steps):
        reply = client.complete(messages, tools=tools)
        if not reply.tool_calls:
            return reply.content
        messages.append(reply.to_message())
        for call in reply.tool_calls:
            result = _review_tool(memory, call)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


def _review_tool(memory: Memory, call: ToolCallRequest) -> str:
    if call.name != "memory":
        return tool_error_json(
            f"Tool '{call.name}' is not available in a memory review", "ToolNotFound"
        )
    return memory.call_tool(
        "memory", call.arguments, tool_call_id=call.id, source=REVIEW_SOURCE
    )


class BackgroundReviewer:
    """Runs at most one review at a time on a daemon thread."""

    def __init__(self, memory: Memory, client: ChatClient) -> None:
        self._memory = memory
        self._client = client
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.completed = 0
        self.last_result: str | None = None

    @property
    def running(self) -> bool:
        """True while a review thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self, system_prompt: str, history: Sequence[Message]) -> bool:
        """Start a review of ``history``; False (and nothing started) if one is running or
        a provider suppresses both curated targets (``Memory.local_writes_suppressed``)."""
        if self._memory.local_writes_suppressed:
            log.info("memory review skipped: a provider handles both memory targets")
            return False
        with self._lock:
            if self.running:
                log.info("memory review skipped: the previous one is still running")
                return False
            snapshot = [dict(m) for m in history]
            self._thread = threading.Thread(
                target=self._run, args=(system_prompt, snapshot), name="memoryport-review",
                daemon=True,
            )
            self._thread.start()
            return True

    def _run(self, system_prompt: str, history: list[Message]) -> None:
        try:
            self.last_result = run_review(self._memory, self._client, system_prompt, history)
        except Exception as exc:  # a background task: log, never raise into the user's turn
            log.warning("background memory review failed: %s", exc, exc_info=True)
            self.last_result = None
        finally:
            self.completed += 1

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a running review; True when none is left running."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def summary(self) -> dict[str, Any]:
        """Counters for status output."""
        return {"completed": self.completed, "running": self.running}
