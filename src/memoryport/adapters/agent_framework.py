"""Microsoft Agent Framework: memoryport as a ``ContextProvider`` (``pip install
'memoryport[agent-framework]'``)::

    from agent_framework import Agent
    from memoryport.adapters.agent_framework import MemoryportContextProvider

    memory = memoryport.open()
    agent = Agent(client, instructions="...", context_providers=[MemoryportContextProvider(memory)])
    session = agent.create_session()
    await agent.run("What editor do I use?", session=session)

- ``before_run``: the agent session is the memoryport session; the run's last user message
  opens a turn (recall, once). The provider adds the frozen memory system prompt as
  instructions, the fenced recall as one context message of this invocation only (history
  providers do not store other providers' context messages by default), and the memory
  tools (run inside the turn).
- ``after_run``: the turn is stored (user message, memory tool calls, the response text)
  and synced; a run without a response is stored as interrupted.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memoryport.adapters._common import (
    ToolRunner,
    answer_text,
    fenced_block,
    missing_extra,
    sync_memory,
    tool_specs,
)

try:
    from agent_framework import AgentSession, ContextProvider, FunctionTool, Message, SessionContext
except ImportError as exc:  # the framework is an extra
    raise missing_extra("agent_framework", "agent-framework", exc) from exc

from memoryport.api import Memory

__all__ = ["MemoryportContextProvider", "memory_tools"]


def memory_tools(runner: ToolRunner) -> list[FunctionTool]:
    """The memory tools as Agent Framework ``FunctionTool`` objects run through ``runner``."""
    tools = []
    for spec in tool_specs(runner.memory):

        def bind(name: str) -> Any:
            async def run(**kwargs: Any) -> str:
                return await runner.acall(name, kwargs)

            return run

        tools.append(FunctionTool(name=spec.name, description=spec.description,
                                  func=bind(spec.name), input_model=spec.parameters))
    return tools


def _last_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if str(getattr(message.role, "value", message.role)) == "user":
            return message.text or ""
    return ""


class MemoryportContextProvider(ContextProvider):
    """memoryport for Microsoft Agent Framework agents: instructions, recall, tools, sync.

    One provider serves one ``Memory``, one run at a time (like the ``Memory``).
    """

    def __init__(self, memory: object, *, source_id: str = "memoryport") -> None:
        super().__init__(source_id)
        self.memory: Memory = sync_memory(memory)
        self.runner = ToolRunner(self.memory)
        self.tools = memory_tools(self.runner)

    async def _end(self, final: str | None) -> None:
        turn, self.runner.turn = self.runner.turn, None
        if turn is not None and not turn.closed:
            final = answer_text(final)
            await asyncio.to_thread(self.memory.end_turn, turn, final,
                                    interrupted=final is None)

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Open the turn (recall) and add instructions, the fenced recall and the tools."""
        await self._end(None)  # a run that never reached after_run
        memory = self.memory
        session_id = getattr(session, "session_id", None) or context.session_id
        if session_id and session_id != memory.session_id:
            await asyncio.to_thread(memory.start_session, session_id)
        elif not memory.session_id:
            await asyncio.to_thread(memory.start_session)
        text = _last_user_text(list(context.input_messages))
        if text.strip():
            self.runner.turn = await asyncio.to_thread(memory.begin_turn, text)
        if memory.system_prompt:
            context.extend_instructions(self.source_id, memory.system_prompt)
        block = fenced_block(self.runner.turn)
        if block:
            context.extend_messages(self, [Message(role="user", contents=[block])])
        context.extend_tools(self.source_id, self.tools)

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Store the turn with the response text and sync providers."""
        response = context.response
        text = response.text if response is not None else ""
        await self._end(text or None)
