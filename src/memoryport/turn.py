"""``Turn``: one user turn, from the clean user message to the persisted history."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memoryport.fence import inject_memory_context
from memoryport.types import ContextPair, Message

__all__ = ["Turn", "UserContent"]

UserContent = str | list[dict[str, Any]]
"""A user message's content: a string or a list of OpenAI content parts."""


@dataclass
class Turn:
    """One user turn, created by ``Memory.begin_turn`` and closed by ``Memory.end_turn``.

    The recalled context is fetched once per turn and cached here for the whole tool loop.
    ``api_user_message()`` returns the content to send to the model (with the fenced
    ``<memory-context>`` block); ``messages`` is the clean history of the turn, which is
    what gets persisted: the fence never reaches history or the system prompt.

    Attributes:
        number: 1-based turn counter within the session.
        session_id: the session the turn belongs to.
        user_content: the user's message, with any leaked fence removed.
        query: the plain-text form of ``user_content`` used for recall.
        contexts: ``(provider, text)`` pairs recalled for this turn.
        messages: the turn's history so far (user message first).
    """

    number: int
    session_id: str
    user_content: UserContent
    query: str
    contexts: list[ContextPair]
    budget_chars: int
    call_tool: Callable[[str, Any, str], str]
    messages: list[Message] = field(default_factory=list)
    closed: bool = False

    def __post_init__(self) -> None:
        if not self.messages:
            self.messages.append({"role": "user", "content": self.user_content})

    def api_user_message(self, content: UserContent | None = None) -> UserContent:
        """The user content for the API payload: ``content`` (default: the turn's message)
        with the fenced memory block appended. Never mutates its input or the history."""
        base = self.user_content if content is None else content
        if not self.contexts:
            return base
        return inject_memory_context(base, self.contexts, budget_chars=self.budget_chars)

    def api_messages(self, history: list[Message]) -> list[Message]:
        """``history`` (which must end with this turn's user message and any tool traffic)
        with the user message's content replaced by ``api_user_message()`` — a new list."""
        out = [dict(m) for m in history]
        for index in range(len(out) - 1, -1, -1):
            if out[index].get("role") == "user":
                out[index]["content"] = self.api_user_message(out[index].get("content"))
                break
        return out

    def add_message(self, message: Message) -> None:
        """Record an intermediate message (an assistant message carrying tool calls)."""
        self.messages.append(dict(message))

    def handle_tool_call(self, name: str, args: Any, *, tool_call_id: str = "") -> str:
        """Run a memory, session_search or provider tool; record and return its JSON result."""
        result = self.call_tool(name, args, tool_call_id)
        self.messages.append(
            {"role": "tool", "tool_call_id": tool_call_id, "tool_name": name, "content": result}
        )
        return result
