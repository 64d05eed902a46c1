"""A thin wrapper over the ``openai`` client: one chat call, streamed or not.

Any OpenAI-compatible chat-completions endpoint works (OpenAI, vLLM, llama.cpp server,
Ollama, OpenRouter): pass its ``base_url``. Streamed text goes through a
``StreamingContextScrubber`` before anyone sees it, and the returned ``content`` is the
scrubbed text too, so a model that echoes ``<memory-context>`` never leaks it to the user
or into history.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openai import OpenAI

from memoryport.errors import ConfigError
from memoryport.fence import StreamingContextScrubber, scrub_text
from memoryport.types import Message

__all__ = ["AssistantReply", "ChatClient", "TextSink", "ToolCallRequest"]

TextSink = Callable[[str], None]
"""Receives visible (already scrubbed) text as it streams."""


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call the model asked for; ``arguments`` is the raw JSON string."""

    id: str
    name: str
    arguments: str

    def to_message_part(self) -> dict[str, Any]:
        """The ``tool_calls`` entry of the assistant message that carries this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON (``{}`` for an empty string)."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


@dataclass(frozen=True)
class AssistantReply:
    """One model answer: scrubbed text and any tool calls."""

    content: str
    tool_calls: list[ToolCallRequest] = field(default_factory=list)

    def to_message(self) -> Message:
        """The assistant message for history (with ``tool_calls`` when there are some)."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message_part() for call in self.tool_calls]
        return message


class ChatClient:
    """Chat completions against one endpoint and model.

    ``api_key`` defaults to the environment variable named ``api_key_env``. Without a key,
    a custom ``base_url`` (a local server that needs none) gets a placeholder, because
    the SDK insists on one; the default OpenAI endpoint raises ``ConfigError`` instead.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        client: OpenAI | None = None,
    ) -> None:
        self.model = model
        key = api_key or os.environ.get(api_key_env)
        if not key:
            if client is None and not (base_url or os.environ.get("OPENAI_BASE_URL")):
                raise ConfigError(
                    f"no API key for the OpenAI endpoint: set the environment variable "
                    f"{api_key_env} (named by agent.api_key_env; <home>/.env works too), or "
                    "use a local OpenAI-compatible server with `--base-url URL` "
                    "(agent.base_url), which needs no key"
                )
            key = "not-needed"  # local servers ignore the key; the SDK insists on one
        self._client = client or OpenAI(
            api_key=key, base_url=base_url or None, timeout=timeout, max_retries=1
        )
        self.base_url = str(self._client.base_url)
        """The endpoint in use (named in connection errors)."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] = (),
        on_text: TextSink | None = None,
    ) -> AssistantReply:
        """One chat call. With ``on_text`` the answer streams through the scrubber into it."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            kwargs["tools"] = list(tools)
        if on_text is None:
            response = self._client.chat.completions.create(**kwargs)
            return _from_completion(response)
        stream = self._client.chat.completions.create(stream=True, **kwargs)
        try:
            return _from_stream(stream, on_text)
        finally:
            stream.close()


def _from_completion(response: Any) -> AssistantReply:
    if not response.choices:
        return AssistantReply(content="")
    message = response.choices[0].message
    calls = [
        ToolCallRequest(
            id=call.id or f"call_{index}",
            name=call.function.name,
            arguments=call.function.arguments or "",
        )
        for index, call in enumerate(message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    return AssistantReply(content=scrub_text(message.content or ""), tool_calls=calls)


def _from_stream(stream: Any, on_text: TextSink) -> AssistantReply:
    scrubber = StreamingContextScrubber()
    visible: list[str] = []
    calls: dict[int, dict[str, str]] = {}

    def emit(text: str) -> None:
        if text:
            visible.append(text)
            on_text(text)

    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            emit(scrubber.feed(delta.content))
        for part in delta.tool_calls or []:
            slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            if part.id:
                slot["id"] = part.id
            if part.function is not None:
                slot["name"] += part.function.name or ""
                slot["arguments"] += part.function.arguments or ""
    emit(scrubber.flush())
    requests = [
        ToolCallRequest(id=slot["id"] or f"call_{index}", name=slot["name"],
                        arguments=slot["arguments"])
        for index, slot in sorted(calls.items())
    ]
    return AssistantReply(content="".join(visible), tool_calls=requests)
