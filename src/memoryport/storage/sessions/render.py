"""Stored messages as a person reads them: tool calls as ``name(args)``, not raw JSON.

A model's tool calls are stored as the OpenAI JSON list
(``[{"id": "call_1", "type": "function", "function": {"name": "memory", "arguments":
"{\\"action\\": \\"add\\", ...}"}}]``). :func:`render_tool_calls` shows them as
``memory(add, content: "…")``; :func:`readable_snippet` rebuilds a search snippet that was
cut from that JSON, with the match still marked ``>>>…<<<``. Used by ``memoryport
sessions show`` / ``search`` and the ``session_search`` tool result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memoryport.storage.sessions.query import iter_terms, make_snippet, parse_query
from memoryport.storage.sessions.records import MessageRecord

__all__ = ["message_text", "readable_snippet", "render_tool_call", "render_tool_calls"]

_JSON_MARKS = ('"type":', '"function"', '"arguments"', '[{"id"', "call_")


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_tool_call(call: Any) -> str:
    """One tool call as ``name(action, key: "value", ...)``.

    Accepts the OpenAI shape (``{"function": {"name", "arguments"}}``, arguments as a JSON
    string or object) or a bare ``{"name", "arguments"}``; anything else is shown as JSON.
    """
    if not isinstance(call, Mapping):
        return _value(call)
    inner = call.get("function")
    function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return _value(dict(call))
    arguments: Any = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return f"{name}({arguments})"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return f"{name}({_value(arguments)})"
    parts: list[str] = []
    action = arguments.get("action")
    if isinstance(action, str) and action:
        parts.append(action)
    parts.extend(f"{key}: {_value(v)}" for key, v in arguments.items() if key != "action")
    return f"{name}({', '.join(parts)})"


def render_tool_calls(tool_calls: Any) -> str:
    """Every tool call of a message, one per line (empty for none)."""
    if not tool_calls:
        return ""
    calls = tool_calls if isinstance(tool_calls, list) else [tool_calls]
    return "\n".join(render_tool_call(call) for call in calls)


def message_text(message: MessageRecord) -> str:
    """A message's content followed by its rendered tool calls (``→ memory(add, …)``)."""
    calls = render_tool_calls(message.tool_calls)
    lines = [message.content] if message.content else []
    lines.extend(f"→ {line}" for line in calls.splitlines())
    return "\n".join(lines)


def _looks_like_tool_json(snippet: str) -> bool:
    return any(mark in snippet for mark in _JSON_MARKS)


def readable_snippet(message: MessageRecord, snippet: str, query: str) -> str:
    """``snippet`` unless it was cut from the tool-call JSON (or is empty while the message
    has tool calls): then a snippet of :func:`message_text`, matches marked ``>>>…<<<``."""
    if not message.tool_calls or (snippet and not _looks_like_tool_json(snippet)):
        return snippet
    text = " ".join(message_text(message).split())
    parsed = parse_query(query, combine="any")
    needles = [t.text for t in iter_terms(parsed.root, negated=False)] if parsed.root else []
    # a short call is shown whole (name included); a long one around its first match
    return make_snippet(text, needles, width=3 * len(text) if len(text) <= 200 else 120)
