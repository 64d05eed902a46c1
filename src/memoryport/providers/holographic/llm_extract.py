"""The optional LLM fact extractor (``holographic.extractor: llm``).

At compression and session end the messages being discarded are sent to any
OpenAI-compatible chat-completions endpoint (``llm_base_url``, ``llm_model``; the API key
is read from the environment variable ``llm_api_key_env`` names, or ``<home>/.env``),
which answers JSON facts::

    {"facts": [{"subject": "I", "relation": "lives_in", "value": "Lisbon",
                "content": "I live in Lisbon", "category": "general", "message": 0}]}

Each fact is checked (a one-line statement of 6-300 characters, not a question, a known
category, at most :data:`MAX_FACTS`) and passes the same safety scan as curated memory;
the survivors become :class:`FactInput` items with provenance ``(session, message id,
source kind, actor "llm")`` and go through the same ``FactStore`` path as the rules'
facts (dedupe, contradictions, revisions). Any failure — no answer within the timeout,
an HTTP error, an answer that is not the JSON asked for — raises :class:`LLMExtractError`
with a message that never contains the API key; the provider then keeps the rules'
facts only.

The HTTP call uses the standard library (``urllib``): nothing to install, and nothing is
imported until the extractor runs.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport import safety
from memoryport.config import read_env
from memoryport.errors import MemoryportError
from memoryport.providers.holographic.extract import event_of
from memoryport.storage.facts.records import CATEGORIES, FactInput, Provenance
from memoryport.types import Message, flatten_content

__all__ = ["MAX_FACTS", "SYSTEM_PROMPT", "LLMConfig", "LLMExtractError", "llm_facts"]

MAX_FACTS = 30
"""Most facts taken from one answer (the rest are ignored)."""

MAX_TRANSCRIPT_CHARS = 12000
"""Most characters of conversation sent (the newest messages are kept)."""

MAX_MESSAGE_CHARS = 2000
"""Each message is cut to this many characters in the transcript."""

SYSTEM_PROMPT = (
    "You extract durable facts about the user from a conversation that is about to be "
    "discarded. A durable fact stays true for weeks or more: names, where someone lives or "
    "works, preferences, favourites, likes and dislikes, tools they use, people, projects, "
    "dates. Skip chatter, questions, requests, the assistant's own statements and anything "
    "true only for this conversation. Write each fact as one short self-contained "
    "sentence; facts the user states about themself use the first person (\"I live in "
    "Lisbon\", \"My favorite color is teal\"), facts about others name them (\"Alice "
    "prefers vim\"). Answer with JSON only, no prose: {\"facts\": [{\"subject\": ..., "
    "\"relation\": ..., \"value\": ..., \"content\": the sentence, \"category\": one of "
    + ", ".join(CATEGORIES) + ", \"message\": the [number] of the message it comes "
    "from}]}. Answer {\"facts\": []} when there is none."
)
"""The instructions sent as the system message."""

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_CREDENTIALS = re.compile(r"//[^/@\s]*@")


class LLMExtractError(MemoryportError):
    """The LLM extractor failed; the message says why (never with the API key)."""


@dataclass(frozen=True)
class LLMConfig:
    """Where the extractor asks: ``base_url`` (``.../v1``), ``model``, the environment
    variable holding the API key (``""``: send none, e.g. a local server) and the
    seconds one request may take."""

    base_url: str
    model: str
    api_key_env: str = ""
    timeout_s: float = 20.0

    @property
    def endpoint(self) -> str:
        """The chat-completions URL."""
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def shown_url(self) -> str:
        """The endpoint for messages, with any ``user:password@`` removed."""
        return _CREDENTIALS.sub("//", self.endpoint)


@dataclass(frozen=True)
class _Line:
    number: int
    message_id: str
    role: str
    text: str


def llm_facts(
    messages: Iterable[Message],
    *,
    config: LLMConfig,
    session_id: str,
    source_kind: str,
    home: Path | None = None,
) -> list[FactInput]:
    """The durable facts the model finds in ``messages`` (checked and scanned), or
    :class:`LLMExtractError`. No request is made when there is no user text."""
    lines = _transcript(messages)
    if not any(line.role == "user" for line in lines):
        return []
    key = _api_key(config, home)
    try:
        answer = _complete(config, key, lines)
        raw = _parse(answer)
    except LLMExtractError as exc:
        raise LLMExtractError(_redact(str(exc), key)) from None
    return _facts(raw, lines, session_id, source_kind, home)


def _transcript(messages: Iterable[Message]) -> list[_Line]:
    """User and assistant text, numbered; the newest within the character budget."""
    lines: list[_Line] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        text = flatten_content(message.get("content")).strip()
        if text:
            message_id = str(message.get("id") or message.get("message_id") or index)
            lines.append(_Line(index, message_id, str(message["role"]),
                               text[:MAX_MESSAGE_CHARS]))
    kept: list[_Line] = []
    total = 0
    for line in reversed(lines):
        total += len(line.text) + 16
        if total > MAX_TRANSCRIPT_CHARS and kept:
            break
        kept.append(line)
    return kept[::-1]


def _api_key(config: LLMConfig, home: Path | None) -> str:
    name = config.api_key_env
    if not name:
        return ""
    key = os.environ.get(name, "")
    if not key and home is not None:
        try:
            key = read_env(home).get(name, "")
        except MemoryportError:
            key = ""
    if not key:
        raise LLMExtractError(
            f"the API key variable {name} (holographic.llm_api_key_env) is not set: export"
            " it or add it to <home>/.env"
        )
    return key


def _redact(text: str, key: str) -> str:
    return text.replace(key, "[redacted]") if key else text


def _complete(config: LLMConfig, key: str, lines: Sequence[_Line]) -> str:
    """POST one chat completion; return the answer's text."""
    import http.client
    import urllib.error
    import urllib.request

    transcript = "\n".join(f"[{line.number}] {line.role}: {line.text}" for line in lines)
    body = {"model": config.model, "temperature": 0, "messages": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Conversation:\n" + transcript},
    ]}
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(config.endpoint, data=json.dumps(body).encode(),
                                     headers=headers, method="POST")
    where = config.shown_url
    try:
        with urllib.request.urlopen(request, timeout=config.timeout_s) as response:
            data = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read(300).decode("utf-8", "replace").strip()
        raise LLMExtractError(f"{where} answered HTTP {exc.code}: {detail[:200]}") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
            raise LLMExtractError(
                f"{where} did not answer within {config.timeout_s:g} s"
                " (holographic.llm_timeout_s)") from None
        raise LLMExtractError(f"cannot reach {where}: {reason}") from None
    try:
        content = json.loads(data)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMExtractError(f"{where} did not answer a chat completion") from None
    if not isinstance(content, str):
        raise LLMExtractError(f"{where} answered no text")
    return content


def _parse(answer: str) -> list[Any]:
    """The fact objects of the answer: ``{"facts": [...]}`` or a bare list."""
    text = _FENCE.sub("", answer.strip())
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise LLMExtractError(f"the model did not answer JSON (began {answer[:60]!r})")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as exc:
        raise LLMExtractError(f"the model's JSON is malformed: {exc}") from None
    facts = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(facts, list):
        raise LLMExtractError('the model\'s JSON has no "facts" list')
    return facts[:MAX_FACTS]


def _content_of(item: Any) -> str:
    """The fact's sentence: ``content``, else ``subject relation value``; "" if neither."""
    if not isinstance(item, dict):
        return ""
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        parts = [item.get(k) for k in ("subject", "relation", "value")]
        if not all(isinstance(p, str) and p.strip() for p in parts):
            return ""
        content = " ".join(str(p).strip().replace("_", " ") for p in parts)
    return " ".join(content.split()).rstrip(".!")


def _facts(raw: Sequence[Any], lines: Sequence[_Line], session_id: str, source_kind: str,
           home: Path | None) -> list[FactInput]:
    by_number = {line.number: line for line in lines}
    found: list[FactInput] = []
    for item in raw:
        content = _content_of(item)
        if not 6 <= len(content) <= 300 or content.endswith("?"):
            continue
        if safety.scan(content, home=home):
            continue  # the same scan as curated memory: a hostile "fact" is not stored
        category = item.get("category")
        if category not in CATEGORIES:
            category = "general"
        number = item.get("message")
        line = by_number.get(number) if isinstance(number, int) else None
        source = line if line is not None and line.role == "user" else None
        provenance = Provenance(session_id, source.message_id if source else "",
                                source_kind, "llm")
        event = event_of(content, None)
        valid_from = event.start if event is not None and event.start <= time.time() else None
        found.append(FactInput(content, str(category), "", None, valid_from, provenance,
                               "user", source.text[:1000] if source else "", event))
    return found
