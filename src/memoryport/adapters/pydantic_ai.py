"""Pydantic AI: memoryport as a capability (``pip install 'memoryport[pydantic-ai]'``).

::

    from pydantic_ai import Agent
    from memoryport.adapters.pydantic_ai import MemoryportCapability

    memory = memoryport.open()
    agent = Agent("openai:gpt-5", capabilities=[MemoryportCapability(memory)])
    result = await agent.run("What editor do I use?")

Per run (``for_run``): the run's ``conversation_id`` is the memoryport session, and
``begin_turn`` on the run's prompt recalls once. The capability
contributes the frozen memory system prompt as instructions (``get_instructions``), the
memory tools as a toolset (``get_toolset``, run inside the turn), and the fenced recall
appended to the run's user prompt in each model request only (``before_model_request``
works on a copy, so the fence never enters the run's message history). ``after_run``
stores the turn and syncs providers; ``on_run_error`` stores it as interrupted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
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
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import Tool
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # the framework is an extra
    raise missing_extra("pydantic_ai", "pydantic-ai", exc) from exc

from memoryport.api import Memory
from memoryport.types import flatten_content

__all__ = ["MemoryportCapability", "memory_toolset"]


def memory_toolset(runner: ToolRunner) -> FunctionToolset[Any]:
    """The memory tools (``memory``, ``session_search``, providers') as a toolset whose
    calls run through ``runner`` (inside its open turn, when there is one)."""
    tools: list[Tool[Any]] = []
    for spec in tool_specs(runner.memory):

        def bind(name: str) -> Callable[..., Any]:
            async def run(**kwargs: Any) -> str:
                return await runner.acall(name, kwargs)

            return run

        tools.append(Tool.from_schema(bind(spec.name), spec.name, spec.description,
                                      spec.parameters))
    return FunctionToolset(tools)


def _prompt_text(prompt: object) -> str:
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        return "\n".join(p for p in prompt if isinstance(p, str))
    return flatten_content(prompt)


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    try:
        from pydantic_core import to_json

        return to_json(output).decode("utf-8")
    except (TypeError, ValueError):
        return json.dumps(output, default=str, ensure_ascii=False)


def _fence_last_prompt(messages: list[ModelMessage], block: str) -> list[ModelMessage]:
    """A copy of ``messages`` whose last user prompt carries ``block`` (inputs untouched)."""
    out = list(messages)
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if not isinstance(message, ModelRequest):
            continue
        parts = list(message.parts)
        for at in range(len(parts) - 1, -1, -1):
            part = parts[at]
            if isinstance(part, UserPromptPart):
                if isinstance(part.content, str):
                    content: Any = f"{part.content}\n\n{block}"
                else:
                    content = [*part.content, block]
                parts[at] = dataclasses.replace(part, content=content)
                out[index] = dataclasses.replace(message, parts=parts)
                return out
    return out


class MemoryportCapability(AbstractCapability[Any]):
    """memoryport for a Pydantic AI ``Agent``: instructions, tools, recall, sync.

    Give it a ``Memory`` (or ``AsyncMemory``); one capability serves many runs (each run
    gets its own instance and turn from ``for_run``).
    """

    def __init__(self, memory: object, *, session_per_conversation: bool = True) -> None:
        self.memory: Memory = sync_memory(memory)
        self.session_per_conversation = session_per_conversation
        self.runner = ToolRunner(self.memory)

    async def for_run(self, ctx: RunContext[Any]) -> MemoryportCapability:
        """A fresh instance for this run, its turn begun (recall) on the run's prompt.

        The run's ``conversation_id`` (kept across ``message_history``) is the memoryport
        session, started when new and resumed when stored."""
        memory = self.memory
        run = MemoryportCapability(memory, session_per_conversation=self.session_per_conversation)
        text = _prompt_text(ctx.prompt)
        conversation = ctx.conversation_id if self.session_per_conversation else None
        if conversation and conversation != memory.session_id:
            await asyncio.to_thread(memory.start_session, conversation)
        elif not memory.session_id:
            await asyncio.to_thread(memory.start_session)
        if text.strip():
            run.runner.turn = await asyncio.to_thread(self.memory.begin_turn, text)
        return run

    def get_instructions(self) -> Callable[[RunContext[Any]], str]:
        """The frozen memory system prompt (curated memory, provider blocks)."""
        return lambda ctx: self.memory.system_prompt

    def get_toolset(self) -> FunctionToolset[Any]:
        """The memory tools, run inside this run's turn."""
        return memory_toolset(self.runner)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Append the fenced recall to the run's user prompt, in this request only."""
        block = fenced_block(self.runner.turn)
        if block:
            request_context.messages = _fence_last_prompt(request_context.messages, block)
        return request_context

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Store the turn (user prompt, memory tool calls, final output) and sync."""
        await self._end(_output_text(result.output), interrupted=False)
        return result

    async def on_run_error(
        self, ctx: RunContext[Any], *, error: BaseException
    ) -> AgentRunResult[Any]:
        """Store the failed turn as interrupted (never synced), then re-raise."""
        await self._end(None, interrupted=True)
        raise error

    async def _end(self, final: str | None, *, interrupted: bool) -> None:

        turn, self.runner.turn = self.runner.turn, None
        if turn is not None and not turn.closed:
            await asyncio.to_thread(
                self.memory.end_turn, turn, answer_text(final), interrupted=interrupted
            )
