"""OpenAI Agents SDK: a ``Session`` over memoryport's session store, a runner that keeps
the turn lifecycle, and the memory tools as function tools (``pip install
'memoryport[openai-agents]'``)::

    from agents import Agent
    from memoryport.adapters.openai_agents import MemoryportRunner

    runner = MemoryportRunner(memoryport.open())            # runner.session: the Session
    agent = Agent(name="assistant", instructions="Be brief.")
    result = await runner.run(agent, "What editor do I use?")

``MemoryportRunner.run`` wraps ``Runner.run``: ``begin_turn`` on the user input (recall,
once), the memory tools added to the agent, and a ``call_model_input_filter`` that gives
every model call the frozen memory system prompt (after the agent's instructions) and the
fenced recall appended to the current user message, on a copy of the input: the SDK saves
its session items before that filter, so the fence never reaches history.

``MemoryportSession`` is the SDK ``Session`` (``get_items``/``add_items``/``pop_item``/
``clear_session``), usable on its own with ``Runner.run(..., session=...)``. Its writes are
memoryport turns: a user item opens a turn (or takes the one the runner opened), function
calls, their outputs and intermediate messages are recorded in it, and the final assistant
message ends it (``end_turn``: stored in one transaction, providers synced). Items keep
their exact SDK form in the stored messages' metadata, so ``get_items`` gives back what
was added; sessions written by other shells are translated (user/assistant/tool messages).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from typing import Any, cast

from memoryport.adapters._common import (
    answer_text,
    fenced_block,
    missing_extra,
    sync_memory,
    tool_specs,
)

try:
    from agents import (
        Agent,
        FunctionTool,
        RunConfig,
        Runner,
        RunResult,
        RunResultStreaming,
        TResponseInputItem,
    )
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # the framework is an extra
    raise missing_extra("openai_agents", "openai-agents", exc) from exc

from memoryport.api import Memory
from memoryport.errors import SessionNotFound
from memoryport.turn import Turn
from memoryport.types import Message

__all__ = ["MemoryportRunner", "MemoryportSession", "memory_tools"]

Item = dict[str, Any]
RAW = "openai_agents_items"
"""Metadata key of a stored message holding the SDK items it came from."""


# ---------------------------------------------------------------------- items <-> messages
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _kind(item: Item) -> str:
    """``user``, ``assistant``, ``call``, ``output`` or ``other``."""
    kind = item.get("type")
    if kind == "function_call":
        return "call"
    if kind == "function_call_output":
        return "output"
    if kind in (None, "message") and item.get("role") in ("user", "assistant"):
        return str(item["role"])
    return "other"


def _call(item: Item) -> dict[str, Any]:
    return {"id": str(item.get("call_id", "")), "type": "function",
            "function": {"name": str(item.get("name", "")),
                         "arguments": str(item.get("arguments", ""))}}


def _output(item: Item) -> Message:
    output = item.get("output")
    text = output if isinstance(output, str) else _text(output) or json.dumps(output)
    return {"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": text,
            "metadata": {RAW: [item]}}


def messages_for(items: Sequence[Item]) -> list[Message]:
    """SDK items as chat messages (each carrying its items in ``metadata``): consecutive
    function calls join the assistant message before them; other items ride along."""
    out: list[Message] = []
    group: Message | None = None
    for item in items:
        kind = _kind(item)
        if kind == "output":
            group = None
            out.append(_output(item))
            continue
        if kind in ("assistant", "user") or group is None or group["role"] == "user" or (
                kind == "other" and group.get("tool_calls")):
            group = {"role": "user" if kind == "user" else "assistant",
                     "content": _text(item.get("content")) if kind != "other" else "",
                     "metadata": {RAW: []}}
            out.append(group)
        group["metadata"][RAW].append(item)
        if kind == "call":
            group["tool_calls"] = [*group.get("tool_calls", []), _call(item)]
    return out


def items_for(message: Message, metadata: dict[str, Any] | None = None) -> list[Item]:
    """A stored message as SDK items: its own items when it holds them, else translated."""
    raw = (metadata or message.get("metadata") or {}).get(RAW)
    if isinstance(raw, list) and raw:
        return [dict(item) for item in raw]
    role, content = message.get("role"), message.get("content") or ""
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message.get("tool_call_id", ""),
                 "output": content}]
    items: list[Item] = []
    if content or role != "assistant" or not message.get("tool_calls"):
        items.append({"role": role if role in ("user", "assistant", "system") else "user",
                      "content": content})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        items.append({"type": "function_call", "call_id": call.get("id", ""),
                      "name": function.get("name", ""),
                      "arguments": function.get("arguments", "")})
    return items


def _final_index(items: Sequence[Item]) -> int | None:
    """The index of the final answer: an assistant message no function call follows."""
    for index in range(len(items) - 1, -1, -1):
        kind = _kind(items[index])
        if kind == "assistant":
            return index
        if kind in ("call", "user"):
            return None
    return None


# ---------------------------------------------------------------------- tools
def memory_tools(memory: object) -> list[FunctionTool]:
    """The memory tools (``memory``, ``session_search``, providers') as SDK function tools;
    each call runs through ``Memory.call_tool`` in the memory's active session."""
    core = sync_memory(memory)
    tools = []
    for spec in tool_specs(core):

        def bind(name: str) -> Any:
            async def invoke(ctx: Any, arguments: str) -> str:
                return await asyncio.to_thread(core.call_tool, name, arguments or "{}")

            return invoke

        tools.append(FunctionTool(name=spec.name, description=spec.description,
                                  params_json_schema=spec.parameters,
                                  on_invoke_tool=bind(spec.name), strict_json_schema=False))
    return tools


# ---------------------------------------------------------------------- session
class MemoryportSession:
    """An OpenAI Agents SDK ``Session`` whose history is a memoryport session (module doc).

    ``session_id`` defaults to the memory's active session; another id is started (or
    resumed) on the memory at first use. One session per ``Memory``, one run at a time.
    """

    session_settings: Any = None

    def __init__(self, memory: object, session_id: str | None = None) -> None:
        self.memory: Memory = sync_memory(memory)
        if not session_id and not self.memory.session_id:
            self.memory.start_session()
        self.session_id: str = session_id or self.memory.session_id
        """The memoryport session id."""
        self._turn: Turn | None = None
        self._adoptable: Turn | None = None
        self._preamble: list[Item] = []
        self._lock = asyncio.Lock()

    async def _ensure(self) -> str:
        if self.session_id != self.memory.session_id:
            await asyncio.to_thread(self.memory.start_session, self.session_id)
        return self.session_id

    def _stored(self, session_id: str) -> list[tuple[int, list[Item]]]:
        try:
            records = self.memory.sessions.get_messages(session_id)
        except SessionNotFound:
            return []
        out = []
        for record in records:
            message: Message = {"role": record.role, "content": record.content}
            if record.tool_calls:
                message["tool_calls"] = record.tool_calls
            if record.tool_call_id:
                message["tool_call_id"] = record.tool_call_id
            out.append((record.id, items_for(message, record.metadata)))
        return out

    def _open_items(self) -> list[Item]:
        turn = self._turn
        if turn is None:
            return list(self._preamble)
        items = [{"role": "user", "content": turn.messages[0].get("content", "")}]
        return items + [i for m in turn.messages[1:] for i in items_for(m)]

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first (the latest ``limit`` when given)."""
        async with self._lock:
            session_id = await self._ensure()
            stored = await asyncio.to_thread(self._stored, session_id)
            items = [i for _, group in stored for i in group] + self._open_items()
        chosen = items if limit is None else items[-limit:] if limit > 0 else []
        return cast(list[TResponseInputItem], [dict(i) for i in chosen])

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record ``items`` in memoryport turns; a final answer stores and syncs its turn."""
        async with self._lock:
            await self._ensure()
            batch = [dict(cast(Item, i)) for i in items]
            while batch:
                batch = await self._add(batch)

    async def _add(self, batch: list[Item]) -> list[Item]:
        """Record ``batch`` up to its next user message; return what is left."""
        if _kind(batch[0]) == "user":
            await self._open(_text(batch[0].get("content")))
            batch = batch[1:]
        cut = next((i for i, item in enumerate(batch) if _kind(item) == "user"), len(batch))
        part, rest = batch[:cut], batch[cut:]
        turn = self._turn
        if turn is None:
            self._preamble.extend(part)
            return rest
        final = _final_index(part)
        body = part if final is None else part[:final] + part[final + 1 :]
        for message in messages_for(body):
            turn.add_message(message)
        if final is not None:
            answer = answer_text(_text(part[final].get("content")))
            await self._end(answer)
        return rest

    async def _open(self, text: str) -> None:
        await self._end(None)  # an open turn that never got its answer
        adoptable, self._adoptable = self._adoptable, None
        if adoptable is not None and not adoptable.closed and adoptable.query == text:
            self._turn = adoptable
        else:
            self._turn = await asyncio.to_thread(self.memory.begin_turn, text)
        for message in messages_for(self._preamble):
            self._turn.add_message(message)
        self._preamble.clear()

    async def _end(self, answer: str | None) -> None:
        turn, self._turn = self._turn, None
        if turn is not None and not turn.closed:
            await asyncio.to_thread(self.memory.end_turn, turn, answer,
                                    interrupted=answer is None)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (from the open turn first, then the store)."""
        async with self._lock:
            session_id = await self._ensure()
            item = await self._pop(session_id)
        return cast(TResponseInputItem | None, item)

    async def _pop(self, session_id: str) -> Item | None:
        turn = self._turn
        if turn is not None and len(turn.messages) > 1:
            return self._pop_message(turn.messages)
        if turn is not None:
            self._turn, self._adoptable = None, turn  # the run's input, taken back
            return {"role": "user", "content": turn.messages[0].get("content", "")}
        if self._preamble:
            return self._preamble.pop()
        return await asyncio.to_thread(self._pop_stored, session_id)

    @staticmethod
    def _pop_message(messages: list[Message]) -> Item:
        items = items_for(messages.pop())
        if len(items) > 1:
            messages.extend(messages_for(items[:-1]))
        return items[-1]

    def _pop_stored(self, session_id: str) -> Item | None:
        stored = self._stored(session_id)
        if not stored:
            return None
        message_id, items = stored[-1]
        self.memory.sessions.forget_message(message_id)
        if len(items) > 1:
            self.memory.sessions.append_messages(session_id, messages_for(items[:-1]))
        return items[-1]

    async def clear_session(self) -> None:
        """Forget every stored message of this session (and any open turn)."""
        async with self._lock:
            session_id = await self._ensure()
            self._turn = self._adoptable = None
            self._preamble.clear()
            try:
                await asyncio.to_thread(self.memory.sessions.forget_session, session_id)
            except SessionNotFound:
                return
            # the id stays this session's: a fresh draft, stored with its next message
            await asyncio.to_thread(self.memory.switch_session, session_id, reason="new")

    def adopt(self, turn: Turn) -> None:
        """Let the next user item with ``turn``'s text join ``turn`` (opened by the runner
        for recall) instead of opening another."""
        self._adoptable = turn

    async def finish(self, answer: str | None) -> None:
        """End the open turn now (``answer`` None: stored as interrupted, not synced)."""
        async with self._lock:
            self._adoptable = None
            await self._end(answer_text(answer))


# ---------------------------------------------------------------------- runner
def _user_text(input: str | list[TResponseInputItem]) -> str:
    if isinstance(input, str):
        return input
    for item in reversed(input):
        if isinstance(item, dict) and _kind(dict(item)) == "user":
            return _text(item.get("content"))
    return ""


def _fenced_input(items: list[TResponseInputItem], block: str) -> list[TResponseInputItem]:
    """A copy of ``items`` whose last user message carries ``block``."""
    out = [cast(Item, item) for item in items]
    for index in range(len(out) - 1, -1, -1):
        item = out[index]
        if isinstance(item, dict) and _kind(item) == "user":
            content = item.get("content")
            if isinstance(content, str):
                new: Any = f"{content}\n\n{block}"
            else:
                new = [*(content or []), {"type": "input_text", "text": block}]
            out[index] = {**item, "content": new}
            break
    return cast(list[TResponseInputItem], out)


class MemoryportRunner:
    """``Runner.run`` with memoryport's turn lifecycle around it (module doc)."""

    def __init__(self, memory: object, *, session: MemoryportSession | None = None,
                 session_id: str | None = None) -> None:
        self.memory: Memory = sync_memory(memory)
        self.session = session or MemoryportSession(self.memory, session_id)
        self.tools = memory_tools(self.memory)
        self._turn: Turn | None = None

    def _filter(self, user_filter: Any) -> Any:
        async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
            model_data = data.model_data
            if user_filter is not None:
                model_data = user_filter(data)
                if asyncio.iscoroutine(model_data):
                    model_data = await model_data
            block = fenced_block(self._turn)
            prompt = self.memory.system_prompt
            instructions = model_data.instructions
            if prompt:
                instructions = f"{instructions}\n\n{prompt}" if instructions else prompt
            items = _fenced_input(model_data.input, block) if block else model_data.input
            return ModelInputData(input=items, instructions=instructions)

        return call_model_input_filter

    def _agent(self, agent: Agent[Any]) -> Agent[Any]:
        have = {getattr(tool, "name", None) for tool in agent.tools}
        extra = [tool for tool in self.tools if tool.name not in have]
        return agent.clone(tools=[*agent.tools, *extra]) if extra else agent

    async def _begin(self, input: str | list[TResponseInputItem],
                     kwargs: dict[str, Any]) -> RunConfig:
        """Open the turn (recall) and build the run config with the fence filter."""
        await self.session.get_items(limit=0)  # start/resume the session
        text = _user_text(input)
        self._turn = await asyncio.to_thread(self.memory.begin_turn, text) if text else None
        if self._turn is not None:
            self.session.adopt(self._turn)
        config = kwargs.pop("run_config", None) or RunConfig()
        if isinstance(config, dict):
            config = RunConfig(**config)
        return dataclasses.replace(
            config, call_model_input_filter=self._filter(config.call_model_input_filter))

    async def run(self, agent: Agent[Any], input: str | list[TResponseInputItem],
                  **kwargs: Any) -> RunResult:
        """``Runner.run(agent, input, session=self.session, **kwargs)`` inside one
        memoryport turn: recall first, the turn stored and synced after (interrupted,
        and re-raised, when the run fails)."""
        config = await self._begin(input, kwargs)
        try:
            result = await Runner.run(self._agent(agent), input, session=self.session,
                                      run_config=config, **kwargs)
        except BaseException:
            await self.session.finish(None)
            raise
        finally:
            self._turn = None
        output = result.final_output
        await self.session.finish(output if isinstance(output, str) else json.dumps(
            output, default=str, ensure_ascii=False))
        return result

    async def run_streamed(self, agent: Agent[Any], input: str | list[TResponseInputItem],
                           **kwargs: Any) -> RunResultStreaming:
        """``Runner.run_streamed`` inside one memoryport turn: recall first; the session
        stores and syncs the turn when the final message arrives (a stream that ends
        another way leaves it open until the next run, which stores it as interrupted)."""
        config = await self._begin(input, kwargs)
        return Runner.run_streamed(self._agent(agent), input, session=self.session,
                                   run_config=config, **kwargs)
