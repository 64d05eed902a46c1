"""Context compression for the reference agent: when to compress and how to summarize.

The agent estimates the prompt size in characters before each user turn. Past
``agent.compression_threshold_chars`` it calls ``Memory.compress(history, summarize)``,
which runs the providers' ``on_pre_compress`` hooks, hands their contributions to the
summarizer below (one chat call), commits the old session and rotates to a new one linked
by ``parent_session_id``. The new history is the summary message plus the last few
messages, cut at a user message so no tool result loses its tool call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from memoryport.agent.llm import ChatClient
from memoryport.api import Memory
from memoryport.types import Message, flatten_content

__all__ = [
    "SUMMARY_PREFIX",
    "compress_history",
    "estimate_chars",
    "make_summarizer",
    "split_tail",
]

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
"""The first line of the summary message that replaces compressed history."""

SUMMARIZER_INSTRUCTIONS = (
    "You compress conversations. Summarize the conversation below so it can continue "
    "without it: keep decisions, facts about the user and the task, open questions, file "
    "names, commands and numbers; drop chit-chat. Write plain prose or short bullets, at "
    "most about 400 words. Output only the summary."
)

_MAX_TRANSCRIPT_CHARS = 200_000


def estimate_chars(system_prompt: str, messages: Sequence[Message], extra: str = "") -> int:
    """Approximate prompt size: the system prompt, every message as JSON, and ``extra``."""
    size = len(system_prompt) + len(extra)
    for message in messages:
        size += len(json.dumps(message, ensure_ascii=False, default=str))
    return size


def split_tail(history: Sequence[Message], keep: int) -> int:
    """Index where the kept tail starts: at most ``keep`` messages, starting at a user turn.

    Returns ``len(history)`` when no user message lies inside the tail window, so nothing
    is kept rather than an orphaned tool result.
    """
    start = max(0, len(history) - max(keep, 0))
    for index in range(start, len(history)):
        if history[index].get("role") == "user":
            return index
    return len(history)


def _transcript(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for message in messages:
        role = str(message.get("role", "?"))
        text = flatten_content(message.get("content"))
        calls = message.get("tool_calls") or []
        names = ", ".join(str(c.get("function", {}).get("name", "?")) for c in calls)
        if names:
            text = f"{text}\n(called tools: {names})".strip()
        lines.append(f"{role.upper()}: {text}")
    return "\n\n".join(lines)[-_MAX_TRANSCRIPT_CHARS:]


Summarizer = Callable[[list[Message], list[str]], str]


def make_summarizer(client: ChatClient, cut: int | None = None) -> Summarizer:
    """A ``Summarizer`` for ``Memory.compress`` that asks the model for a summary.

    Only ``messages[:cut]`` are summarized (the tail is kept verbatim by the agent); the
    providers' ``on_pre_compress`` contributions are given to the model as extra context.
    The result starts with ``SUMMARY_PREFIX`` (it is ``""`` if the model said nothing).
    """

    def summarize(messages: list[Message], contributions: list[str]) -> str:
        head = messages if cut is None else messages[:cut]
        parts = [f"Conversation:\n\n{_transcript(head)}"]
        notes = [text.strip() for text in contributions if text and text.strip()]
        if notes:
            parts.append("Notes from the memory providers:\n\n" + "\n\n".join(notes))
        reply = client.complete(
            [
                {"role": "system", "content": SUMMARIZER_INSTRUCTIONS},
                {"role": "user", "content": "\n\n".join(parts)},
            ]
        )
        text = reply.content.strip()
        return f"{SUMMARY_PREFIX}\n{text}" if text else ""

    return summarize


def compress_history(
    memory: Memory, client: ChatClient, history: list[Message], keep: int
) -> list[Message]:
    """Compress ``history`` through ``Memory.compress``; return the new history.

    The new history is ``[summary message] + tail``; the active session changes (the old
    one is committed, the new one is its child). An empty summary keeps only the tail.
    """
    cut = split_tail(history, keep)
    summarize = make_summarizer(client, cut)
    result = memory.compress(history, summarize)
    tail = [dict(m) for m in history[cut:]]
    if not result.summary:
        return tail
    return [{"role": "user", "content": result.summary}, *tail]
