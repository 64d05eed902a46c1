"""LangChain 1.x agents: memoryport as an ``AgentMiddleware`` (``pip install
'memoryport[langchain]'``)::

    from langchain.agents import create_agent
    from memoryport.adapters.langchain import MemoryportMiddleware

    memory = memoryport.open()
    agent = create_agent(model, tools=[...], middleware=[MemoryportMiddleware(memory)])
    agent.invoke({"messages": [{"role": "user", "content": "What editor do I use?"}]},
                 {"configurable": {"thread_id": "t1"}})

- ``before_agent``: the invocation's last human message opens a turn (recall, once). With
  a LangGraph ``thread_id`` the memoryport session is that thread (resumed when it
  exists), so one memory follows several threads.
- ``wrap_model_call``: each model request gets the frozen memory system prompt after the
  agent's own, and the fenced recall appended to the last human message, on a copy
  (``ModelRequest.override``): the graph state and any checkpointer never see the fence.
- ``tools``: the memory tools (``memory``, ``session_search``, providers'), run inside the
  turn, so the stored turn holds their calls and results.
- ``after_agent``: the turn is stored (user message, memory tool calls, final answer) and
  synced; an invocation that ends without an answer is stored as interrupted.

For LangGraph's long-term store (and ``langmem``'s tools) see
``memoryport.adapters.langgraph``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
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
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.runtime import Runtime
except ImportError as exc:  # the framework is an extra
    raise missing_extra("langchain", "langchain", exc) from exc

from memoryport.api import Memory

__all__ = ["MemoryportMiddleware", "memory_tools"]


def memory_tools(runner: ToolRunner) -> list[BaseTool]:
    """The memory tools as LangChain tools whose calls run through ``runner``."""
    tools: list[BaseTool] = []
    for spec in tool_specs(runner.memory):

        def bind(name: str) -> tuple[Callable[..., str], Callable[..., Awaitable[str]]]:
            def run(**kwargs: Any) -> str:
                return runner.call(name, kwargs)

            async def arun(**kwargs: Any) -> str:
                return await runner.acall(name, kwargs)

            return run, arun

        func, coroutine = bind(spec.name)
        tools.append(StructuredTool.from_function(
            func=func, coroutine=coroutine, name=spec.name, description=spec.description,
            args_schema=spec.parameters,
        ))
    return tools


def _thread_id() -> str:
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a graph run
        return ""
    thread = configurable.get("thread_id")
    return str(thread) if thread else ""


def _last_human(messages: Sequence[AnyMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return None


def _with_block(message: AnyMessage, block: str) -> AnyMessage:
    content = message.content
    if isinstance(content, str):
        return message.model_copy(update={"content": f"{content}\n\n{block}"})
    return message.model_copy(update={"content": [*content, {"type": "text", "text": block}]})


class MemoryportMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """memoryport for ``langchain.agents.create_agent``: recall, memory tools, sync.

    One middleware serves one ``Memory``, one invocation at a time (like the ``Memory``).
    """

    def __init__(self, memory: object, *, session_per_thread: bool = True) -> None:
        super().__init__()
        self.memory: Memory = sync_memory(memory)
        self.runner = ToolRunner(self.memory)
        self.tools = memory_tools(self.runner)
        self.session_per_thread = session_per_thread
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ turn
    def _begin(self, messages: Sequence[AnyMessage], thread: str) -> None:
        with self._lock:
            self._end_open(None)
            if self.session_per_thread and thread and thread != self.memory.session_id:
                self.memory.start_session(thread)
            index = _last_human(messages)
            if index is None:
                return
            text = messages[index].text
            if text.strip():
                self.runner.turn = self.memory.begin_turn(text)

    def _finish(self, messages: Sequence[AnyMessage]) -> None:
        with self._lock:
            start = _last_human(messages)
            final: str | None = None
            for message in messages[(start or 0) + 1 :]:
                if isinstance(message, AIMessage) and not message.tool_calls:
                    final = message.text or final
            self._end_open(final)

    def _end_open(self, final: str | None) -> None:
        turn, self.runner.turn = self.runner.turn, None
        if turn is not None and not turn.closed:
            self.memory.end_turn(turn, answer_text(final), interrupted=final is None)

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        messages = list(request.messages)
        block = fenced_block(self.runner.turn)
        index = _last_human(messages)
        if block and index is not None:
            messages[index] = _with_block(messages[index], block)
        prompt = self.memory.system_prompt
        system = request.system_message
        if prompt:
            text = f"{system.text}\n\n{prompt}" if system is not None and system.text else prompt
            system = SystemMessage(content=text)
        return request.override(messages=messages, system_message=system)

    # ------------------------------------------------------------------ hooks
    def before_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Open the turn for the invocation's last human message (recall)."""
        self._begin(state["messages"], _thread_id())
        return None

    async def abefore_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """``before_agent`` off the event loop."""
        await asyncio.to_thread(self._begin, state["messages"], _thread_id())
        return None

    def wrap_model_call(self, request: ModelRequest[Any], handler: Callable[..., Any]) -> Any:
        """Send the request with the memory system prompt and the fenced recall."""
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[..., Awaitable[Any]]
    ) -> Any:
        """Async ``wrap_model_call``."""
        return await handler(self._request(request))

    def after_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Store the turn and sync providers."""
        self._finish(state["messages"])
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """``after_agent`` off the event loop."""
        await asyncio.to_thread(self._finish, state["messages"])
        return None
