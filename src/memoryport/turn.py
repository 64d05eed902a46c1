"""``Turn``: one user turn, from the clean user message to the persisted history.

Everything that enters a turn (the user message, intermediate messages, tool arguments
and results, the final answer) is made valid UTF-8 here: lone surrogates become U+FFFD,
split surrogate pairs are joined. A turn is never dropped for its text.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memoryport.errors import tool_error_json
from memoryport.fence import inject_memory_context, sanitize_context
from memoryport.types import ContextPair, Message, SessionContext, valid_text, valid_utf8

__all__ = [
    "API_KEYS",
    "Turn",
    "UserContent",
    "api_message",
    "chat_messages",
    "clean_user_content",
    "close_tool_chain",
]

UserContent = str | list[dict[str, Any]]
"""A user message's content: a string or a list of OpenAI content parts."""

API_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
"""The message keys the chat-completions API accepts (``tool_name`` etc. are dropped)."""

NO_RESULT = tool_error_json("no result was recorded for this tool call", "ToolUnavailable")
"""The content given to a tool call that the turn ended without answering."""


def api_message(message: Message) -> Message:
    """``message`` with only the keys the chat-completions API accepts (:data:`API_KEYS`)."""
    return {k: v for k, v in message.items() if k in API_KEYS}


def new_call_id() -> str:
    """A fresh tool-call id in the OpenAI style (``call_`` + 24 hex digits)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def _arguments_json(args: Any) -> str:
    if isinstance(args, str):
        return args
    return json.dumps(args, ensure_ascii=False, default=str)


def _call_part(call_id: str, name: str, args: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": _arguments_json(args)}}


def _call_ids(message: Message) -> list[str]:
    calls = message.get("tool_calls") or []
    ids = (c.get("id") for c in calls if isinstance(c, dict))
    return [i for i in ids if isinstance(i, str)]


def chat_messages(records: Iterable[Any]) -> list[Message]:
    """Stored messages (``role``, ``content``, ``tool_calls``, ``tool_call_id`` attributes) as
    chat messages, tool calls and their ids kept: the one conversion every reader uses."""
    out: list[Message] = []
    for record in records:
        message: Message = {"role": record.role, "content": record.content}
        if record.tool_calls:
            message["tool_calls"] = record.tool_calls
        if record.tool_call_id:
            message["tool_call_id"] = record.tool_call_id
        out.append(message)
    return out


def close_tool_chain(messages: list[Message]) -> list[Message]:
    """``messages`` as a valid chat-completions sequence (a new list; inputs not mutated).

    Every tool call gets a result before the next non-tool message (``NO_RESULT`` when
    none was recorded), and a tool result without a matching call gets an assistant
    message carrying that call, so a stored session always replays.
    """
    out: list[Message] = []
    pending: list[str] = []

    def close() -> None:
        out.extend({"role": "tool", "tool_call_id": i, "content": NO_RESULT} for i in pending)
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
                out.append(message)
                continue
            close()
            call_id = call_id if isinstance(call_id, str) and call_id else new_call_id()
            name = str(message.get("tool_name") or "tool")
            out.append({"role": "assistant", "content": "",
                        "tool_calls": [_call_part(call_id, name, {})]})
            out.append({**message, "tool_call_id": call_id})
            continue
        close()
        out.append(message)
        if role == "assistant":
            pending = _call_ids(message)
    close()
    return out


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
        closed: True once ``end_turn`` has stored the turn.
        context: the session context the turn runs in (its hooks get this one, even when
            the memory switches session before the turn ends).
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
    context: SessionContext | None = None

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
        with the user message's content replaced by ``api_user_message()`` and only the
        keys the chat-completions API accepts — a new list, ready to send."""
        out = [api_message(m) for m in history]
        for index in range(len(out) - 1, -1, -1):
            if out[index].get("role") == "user":
                out[index]["content"] = self.api_user_message(out[index].get("content"))
                break
        return out

    def add_message(self, message: Message) -> None:
        """Record an intermediate message (an assistant message carrying tool calls)."""
        self.messages.append(valid_utf8(dict(message)))

    def handle_tool_call(self, name: str, args: Any, *, tool_call_id: str = "") -> str:
        """Run a memory, session_search or provider tool; record and return its JSON result.

        If no assistant message recorded with ``add_message`` carries this call, the call
        is recorded first (an assistant message with ``tool_calls``), so the turn's history
        is always a valid chat-completions sequence. An empty ``tool_call_id`` gets a
        generated one. A blank ``name`` gets a JSON error and is recorded only as the
        answer to a call already recorded with that id.
        """
        name = valid_text(str(name))
        args = valid_utf8(args)
        call_id = valid_text(str(tool_call_id)) if tool_call_id else new_call_id()
        if not name.strip():
            result = tool_error_json(
                "a tool call needs a tool name: call one of the tools offered",
                "ToolArgumentError",
            )
            if not self._record_call(call_id, name, args, add=False):
                return result
        else:
            self._record_call(call_id, name, args)
            result = valid_text(self.call_tool(name, args, call_id))
        self.messages.append(
            {"role": "tool", "tool_call_id": call_id, "tool_name": name, "content": result}
        )
        return result

    def _record_call(self, call_id: str, name: str, args: Any, *, add: bool = True) -> bool:
        """Make sure an assistant message whose tool calls are being answered has
        ``call_id`` (recording the call when ``add``); False when it has not."""
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.get("role") == "tool":
                continue
            if message.get("role") == "assistant" and message.get("tool_calls"):
                answered = {m.get("tool_call_id") for m in self.messages[index + 1 :]}
                pending = set(_call_ids(message)) - answered
                if call_id in pending:
                    return True
                if pending and add:  # still answering this message: the call joins it
                    calls = [*message["tool_calls"], _call_part(call_id, name, args)]
                    self.messages[index] = {**message, "tool_calls": calls}
                    return True
            break
        if add:
            part = _call_part(call_id, name, args)
            self.messages.append({"role": "assistant", "content": "", "tool_calls": [part]})
        return add

    def closing_messages(self, final_response: str | None) -> list[Message]:
        """What ``end_turn`` stores: the turn's messages with every tool call answered,
        then the final answer (if any). Does not change the turn."""
        messages = close_tool_chain(self.messages)
        if final_response is not None:
            messages.append({"role": "assistant", "content": valid_text(final_response)})
        return messages


def clean_user_content(content: UserContent) -> UserContent:
    """The user's message made valid UTF-8, with any leaked ``<memory-context>`` removed.

    ``TypeError`` when ``content`` is neither a string nor a list of content-part dicts.
    """
    if isinstance(content, str):
        return sanitize_context(valid_text(content))
    if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
        raise TypeError(
            "begin_turn: user_message must be a str or a list of OpenAI content-part dicts "
            f"(e.g. [{{'type': 'text', 'text': '...'}}]), not {type(content).__name__}"
        )
    cleaned: list[dict[str, Any]] = []
    for part in valid_utf8(content):
        if isinstance(part.get("text"), str):
            part["text"] = sanitize_context(part["text"])
        cleaned.append(part)
    return cleaned
