"""Chat-completions rules for a message list: does a stored session replay as a request?

``request_problems(messages)`` returns what a real OpenAI endpoint would reject (empty when
the list is valid): roles, content types, every ``tool`` message answering a call of the
assistant message right before its run of tool messages, every call answered before the
next non-tool message, unique call ids per assistant message, JSON-string arguments.
``replayed(store, session_id)`` rebuilds a stored session the way the reference agent
loads it (``Agent.load_history``) and ``assert_replays`` checks it.
"""

from __future__ import annotations

from typing import Any

from memoryport.storage.sessions.base import SessionStore

ROLES = frozenset({"system", "user", "assistant", "tool"})


def _call_problems(index: int, calls: Any) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    ids: list[str] = []
    if not isinstance(calls, list) or not calls:
        return [f"#{index}: tool_calls must be a non-empty list"], ids
    for call in calls:
        if not isinstance(call, dict) or call.get("type") != "function":
            problems.append(f"#{index}: a tool call must be a dict with type 'function'")
            continue
        call_id, function = call.get("id"), call.get("function")
        if not isinstance(call_id, str) or not call_id:
            problems.append(f"#{index}: a tool call needs a non-empty string id")
        elif call_id in ids:
            problems.append(f"#{index}: duplicate tool call id {call_id!r}")
        else:
            ids.append(call_id)
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                or not function["name"] or not isinstance(function.get("arguments"), str):
            problems.append(f"#{index}: function needs a name and string arguments")
    return problems, ids


def _content_problem(index: int, message: dict[str, Any]) -> str:
    role, content = message["role"], message.get("content")
    if role == "user" and isinstance(content, list):
        return "" if all(isinstance(p, dict) for p in content) else f"#{index}: bad parts"
    if role == "assistant" and content is None and message.get("tool_calls"):
        return ""
    if not isinstance(content, str):
        return f"#{index}: {role} content must be a string, not {type(content).__name__}"
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        return f"#{index}: content is not valid UTF-8"
    return ""


def request_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Every chat-completions rule ``messages`` breaks (``[]`` when it is a valid request)."""
    problems: list[str] = []
    pending: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ROLES:
            problems.append(f"#{index}: unknown role {role!r}")
            continue
        problem = _content_problem(index, message)
        if problem:
            problems.append(problem)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                problems.append(f"#{index}: tool result {call_id!r} answers no open tool call")
            else:
                pending.remove(call_id)
            continue
        if pending:
            problems.append(f"#{index}: tool calls {pending} have no result before this {role}")
            pending = []
        if role == "assistant" and "tool_calls" in message:
            call_problems, pending = _call_problems(index, message["tool_calls"])
            problems.extend(call_problems)
    if pending:
        problems.append(f"end: tool calls {pending} have no result")
    return problems


def replayed(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """A stored session as the request the agent sends when resuming it."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for record in store.get_messages(session_id):
        message: dict[str, Any] = {"role": record.role, "content": record.content}
        if record.tool_calls:
            message["tool_calls"] = record.tool_calls
        if record.tool_call_id:
            message["tool_call_id"] = record.tool_call_id
        messages.append(message)
    return messages


def assert_replays(store: SessionStore, session_id: str) -> None:
    """Fail with the broken rules when ``session_id`` does not replay as a valid request."""
    messages = replayed(store, session_id)
    problems = request_problems(messages)
    assert not problems, f"session {session_id} does not replay: {problems}\n{messages}"
