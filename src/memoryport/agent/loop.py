"""``Agent``: a small, readable agent loop over ``memoryport.api`` and one chat endpoint.

One user turn::

    turn = memory.begin_turn(text)            # on_turn_start + recall, once per turn
    loop:
        payload = [system] + turn.api_messages(history + turn.messages)
        reply = model(payload, tools)         # streamed through the context scrubber
        tool calls -> turn.add_message(assistant) + turn.handle_tool_call(...)
    memory.end_turn(turn, final)              # persist turn.messages, sync providers

Only the current user message of the API payload carries the fenced ``<memory-context>``
block; history and the system prompt never do. Ctrl+C (``KeyboardInterrupt``) during a
turn ends it as interrupted: persisted, never synced to external providers. A turn the
session store could not store (disk full) is kept in ``Agent.unsaved`` and stored before
the next one (or by ``save_unsaved()``); ``TurnOutcome.unsaved`` tells the caller. Before a turn
whose prompt would pass ``agent.compression_threshold_chars`` the history is compressed
(``Memory.compress``). Every ``memory.nudge_interval`` turns a background review may save
to curated memory after the answer is delivered.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from memoryport.agent.compression import compress_history, estimate_chars
from memoryport.agent.delegate import CHILD_BLOCKED_TOOLS, DELEGATE_TASK_SCHEMA, delegate_task
from memoryport.agent.llm import AssistantReply, ChatClient, TextSink, ToolCallRequest
from memoryport.agent.review import BackgroundReviewer
from memoryport.api import Memory
from memoryport.config import AgentSettings
from memoryport.errors import SessionNotFound, StoreError, tool_error_json
from memoryport.turn import Turn, api_message
from memoryport.types import Message

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent", "TurnOutcome", "UnsavedTurn"]

log = logging.getLogger("memoryport.agent")

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. Use the memory tool to save "
    "durable facts about the user and their environment when you learn them, and "
    "session_search to recall past conversations when the user refers to them. A "
    "memory-context block in a user message is recalled background, not something the "
    "user said; never repeat it."
)
"""The agent's instructions when ``agent.system_prompt`` is empty."""

KEEP_AFTER_COMPRESSION = 6
"""At most this many recent messages survive compression verbatim."""


@dataclass(frozen=True)
class TurnOutcome:
    """What one ``run_turn`` produced.

    Attributes:
        text: the scrubbed answer (partial when interrupted).
        interrupted: True when Ctrl+C ended the turn.
        session_id: the session the turn was stored in.
        tool_calls: how many tools the model called.
        compressed: True when history was compressed before the turn.
        unsaved: "" when the turn (and every earlier one) is stored; otherwise why not.
            The unsaved turns are kept in ``Agent.unsaved`` and retried.
    """

    text: str
    interrupted: bool
    session_id: str
    tool_calls: int = 0
    compressed: bool = False
    unsaved: str = ""


@dataclass(frozen=True)
class UnsavedTurn:
    """A finished turn that the session store could not store yet (kept for a retry)."""

    turn: Turn
    final: str | None
    interrupted: bool


class Agent:
    """The reference agent. It uses only the ``Memory`` API; it owns no storage.

    ``delegation`` offers the ``delegate_task`` tool; ``review`` enables the memory nudge
    (every ``memory.config.memory.nudge_interval`` turns, 0 disables it).
    ``handle_sigterm`` (default True) closes the memory on SIGTERM (``Memory.close_on_sigterm``).
    """

    def __init__(
        self,
        memory: Memory,
        client: ChatClient,
        settings: AgentSettings | None = None,
        *,
        source: str = "cli",
        delegation: bool = True,
        review: bool = True,
        blocked_tools: frozenset[str] = frozenset(),
        handle_sigterm: bool = True,
    ) -> None:
        self.memory = memory
        memory.reserve_tool_names(DELEGATE_TASK_SCHEMA["name"])
        if handle_sigterm:  # the reference agent owns its process: close memory on SIGTERM
            memory.close_on_sigterm()
        self.client = client
        self.settings = settings or memory.config.agent
        self.source = source
        self.history: list[Message] = []
        self.delegation = delegation
        self.blocked_tools = blocked_tools
        self.nudge_interval = memory.config.memory.nudge_interval if review else 0
        self.reviewer = BackgroundReviewer(memory, client)
        self.turns_since_review = 0
        self.keep_after_compression = KEEP_AFTER_COMPRESSION
        self.unsaved: list[UnsavedTurn] = []
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ sessions
    def start(
        self, session_id: str | None = None, *, title: str | None = None,
        parent_session_id: str | None = None,
    ) -> str:
        """Open (or resume) the first session; returns its id. Idempotent."""
        if not self._started:
            self._started = True
            if not self.memory.session_id:
                self.memory.start_session(
                    session_id, source=self.source, title=title,
                    parent_session_id=parent_session_id, model=self.client.model,
                )
            if session_id:
                self.history = self.load_history(self.memory.session_id)
        return self.memory.session_id

    @property
    def system_prompt(self) -> str:
        """The full system prompt: the agent's instructions, then the memory prompt."""
        base = self.settings.system_prompt or DEFAULT_SYSTEM_PROMPT
        frozen = self.memory.system_prompt
        return f"{base}\n\n{frozen}" if frozen else base

    def load_history(self, session_id: str) -> list[Message]:
        """A stored session's messages as chat messages (``Memory.session_messages``)."""
        try:
            return self.memory.session_messages(session_id)
        except SessionNotFound:
            return []  # a new session: stored with its first message

    def new_session(self) -> str:
        """``/new``: commit this session and start an empty one."""
        self.start()
        self.memory.switch_session(reason="new", messages=self.history)
        self.history = []
        return self.memory.session_id

    def resume(self, session_id: str) -> str:
        """``/resume``: switch to a stored session and load its history."""
        self.start()
        self.memory.switch_session(session_id, reason="resume", messages=self.history)
        self.history = self.load_history(session_id)
        return session_id

    def branch(self) -> str:
        """``/branch``: continue in a child session; the conversation so far is kept."""
        self.start()
        self.memory.switch_session(reason="branch", messages=self.history)
        return self.memory.session_id

    def set_title(self, title: str) -> None:
        """``/title``: name the active session."""
        self.start()
        self.memory.set_title(title)

    # ------------------------------------------------------------------ tools
    def tools(self) -> list[dict[str, Any]]:
        """The ``tools`` parameter: memory tools, provider tools, and ``delegate_task``."""
        tools = [
            t for t in self.memory.openai_tools()
            if t["function"].get("name") not in self.blocked_tools
        ]
        if self.delegation and "delegate_task" not in self.blocked_tools:
            tools.append({"type": "function", "function": DELEGATE_TASK_SCHEMA})
        return tools

    def _run_tool(self, turn: Turn, call: ToolCallRequest) -> None:
        if call.name == "delegate_task" and self.delegation:
            try:
                args = call.parsed_arguments()
            except json.JSONDecodeError as exc:
                args = None
                log.info("delegate_task arguments are not JSON: %s", exc)
            result = delegate_task(self, args)
            turn.add_message({"role": "tool", "tool_call_id": call.id,
                              "tool_name": call.name, "content": result})
            return
        if call.name in self.blocked_tools:
            result = tool_error_json(f"Tool '{call.name}' is not available here", "ToolNotFound")
            turn.add_message({"role": "tool", "tool_call_id": call.id,
                              "tool_name": call.name, "content": result})
            return
        turn.handle_tool_call(call.name, call.arguments, tool_call_id=call.id)

    def spawn_child(self, memory: Memory) -> Agent:
        """A subagent over ``memory``: no curated writes, no delegation, no review."""
        child = Agent(
            memory, self.client, self.settings, source="subagent", delegation=False,
            review=False, blocked_tools=CHILD_BLOCKED_TOOLS,
        )
        child.start()
        return child

    # ------------------------------------------------------------------ turns
    def run_turn(self, text: str, on_text: TextSink | None = None) -> TurnOutcome:
        """Answer one user message. ``on_text`` receives the scrubbed answer as it streams.

        Ctrl+C during the turn returns an outcome with ``interrupted=True``; the turn is
        persisted but not synced to providers.
        """
        self.start()
        compressed = self._maybe_compress(text)
        turn = self.memory.begin_turn(text)
        shown: list[str] = []
        sink = _collecting(shown, on_text)
        try:
            final, calls = self._tool_loop(turn, sink)
        except KeyboardInterrupt:
            partial = "".join(shown)
            unsaved = self._finish(turn, partial or None, interrupted=True)
            return TurnOutcome(partial, True, turn.session_id, 0, compressed, unsaved)
        except BaseException:
            self._finish(turn, None, interrupted=True)
            raise
        unsaved = self._finish(turn, final, interrupted=False)
        self._after_turn()
        return TurnOutcome(final, False, turn.session_id, calls, compressed, unsaved)

    def _tool_loop(self, turn: Turn, sink: TextSink | None) -> tuple[str, int]:
        tools = self.tools()
        calls = 0
        for _ in range(self.settings.max_tool_iterations):
            reply = self._call_model(turn, tools, sink)
            if not reply.tool_calls:
                return reply.content, calls
            turn.add_message(reply.to_message())
            for call in reply.tool_calls:
                calls += 1
                self._run_tool(turn, call)
        log.info("tool loop hit max_tool_iterations; asking for a final answer without tools")
        return self._call_model(turn, [], sink).content, calls

    def _call_model(
        self, turn: Turn, tools: list[dict[str, Any]], sink: TextSink | None
    ) -> AssistantReply:
        system: Message = {"role": "system", "content": self.system_prompt}
        messages = turn.api_messages([*self.history, *turn.messages])
        payload = [system, *(api_message(m) for m in messages)]
        return self.client.complete(payload, tools=tools, on_text=sink)

    def _finish(self, turn: Turn, final: str | None, *, interrupted: bool) -> str:
        """Store the turn (after any earlier unsaved ones); "" or why it is not stored."""
        if interrupted:
            _close_open_tool_calls(turn)
        self.unsaved.append(UnsavedTurn(turn, final, interrupted))
        error = self.save_unsaved()
        done = turn.messages if turn.closed else turn.closing_messages(final)
        self.history.extend(dict(m) for m in done)
        return error

    def save_unsaved(self) -> str:
        """Store the turns the session store refused earlier, oldest first.

        Returns "" when every turn is stored, otherwise the store's error (the turns that
        are still not stored stay in ``unsaved``).
        """
        while self.unsaved:
            item = self.unsaved[0]
            try:
                self.memory.end_turn(item.turn, item.final, interrupted=item.interrupted)
            except StoreError as exc:
                log.warning("%d turn(s) not stored yet: %s", len(self.unsaved), exc)
                return str(exc)
            self.unsaved.pop(0)
        return ""

    def _after_turn(self) -> None:
        """The memory nudge: count the turn; start a background review when due."""
        if self.nudge_interval <= 0 or self.memory.curated is None:
            return
        self.turns_since_review += 1
        if self.turns_since_review < self.nudge_interval:
            return
        self.turns_since_review = 0
        self.reviewer.start(self.system_prompt, [api_message(m) for m in self.history])

    # ------------------------------------------------------------------ compression
    def _maybe_compress(self, text: str) -> bool:
        size = estimate_chars(self.system_prompt, self.history, text)
        if size <= self.settings.compression_threshold_chars:
            return False
        if len(self.history) <= self.keep_after_compression + 1:
            return False  # only a summary and the tail would be left: nothing to gain
        return self.compress()

    def compress(self) -> bool:
        """Compress the history now (``Memory.compress`` with an LLM summary)."""
        self.start()
        if not self.history:
            return False
        self.history = compress_history(
            self.memory, self.client, self.history, self.keep_after_compression
        )
        return True

    # ------------------------------------------------------------------ shutdown
    def close(self, *, close_memory: bool = True, review_timeout: float = 30.0) -> None:
        """Let a running review finish (bounded), then close the memory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self.reviewer.wait(review_timeout):
            log.warning("background memory review still running at exit; abandoning it")
        if self.save_unsaved():
            log.error("%d turn(s) could not be stored and are lost", len(self.unsaved))
        if close_memory:
            self.memory.close(self.history if self._started else None)


def _collecting(shown: list[str], on_text: TextSink | None) -> TextSink | None:
    if on_text is None:
        return None

    def sink(text: str) -> None:
        on_text(text)
        shown.append(text)

    return sink


def _close_open_tool_calls(turn: Turn) -> None:
    """Give every tool call without a result an "interrupted" result (valid history)."""
    answered = {m.get("tool_call_id") for m in turn.messages if m.get("role") == "tool"}
    for message in list(turn.messages):
        for call in message.get("tool_calls") or []:
            if call.get("id") not in answered:
                turn.add_message({"role": "tool", "tool_call_id": call.get("id"),
                                  "content": tool_error_json("interrupted", "ToolUnavailable")})

