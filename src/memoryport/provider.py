"""The ``MemoryProvider`` contract.

Member names and semantics follow Hermes' ``agent/memory_provider.py`` so that providers
written for Hermes run here unchanged. Only ``name``, ``is_available``, ``initialize`` and
``get_tool_schemas`` are abstract; every other hook has a documented no-op default.

Any hook may be written as ``async def``; the manager runs coroutine hooks on its own
event-loop thread. The manager inspects a provider once, when it is registered (which hooks
it overrides, which are async, which signature variant each uses) and never per call; see
``memoryport.hooks``.

Threading contract (enforced by ``MemoryManager``, whatever the provider does):

=====================  ===========================  ==============================
hook                   where it runs                 deadline
=====================  ===========================  ==============================
initialize             caller's thread               none
prefetch               parallel worker threads       one per turn (5 s default)
queue_prefetch         the provider's ordered queue  never blocks the caller
sync_turn              the provider's ordered queue  never blocks the caller
on_memory_write        the provider's ordered queue  never blocks the caller
on_delegation          the provider's ordered queue  never blocks the caller
on_pre_compress        parallel worker threads       120 s default
shutdown               after the queue is drained    15 s default per provider
=====================  ===========================  ==============================
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypedDict, runtime_checkable

from memoryport.types import Message, ToolSchema

__all__ = [
    "ConfigField",
    "MemoryProvider",
    "MemoryWriteListener",
    "MemoryWriteSource",
    "validate_config",
]

MemoryWriteListener = Callable[[str, str, str, dict[str, Any]], None]
"""``listener(action, target, content, metadata)``: called after a successful curated write."""


@runtime_checkable
class MemoryWriteSource(Protocol):
    """Optional capability: a provider that owns curated memory and reports its writes.

    At registration the manager hands such a provider a listener; the provider calls it
    after every successful add/replace/remove, and the manager mirrors the write to every
    *other* provider's ``on_memory_write`` (never back to the writer).
    """

    def set_memory_write_listener(self, listener: MemoryWriteListener) -> None:
        """Receive the callback to call after each successful write."""


class ConfigField(TypedDict, total=False):
    """One field of ``get_config_schema()`` (the format of the Hermes setup wizard).

    Keys: ``key`` (required), ``description``, ``secret`` (goes to ``.env``), ``required``,
    ``env_var`` (explicit environment variable name), ``url`` (where to obtain the value),
    ``default``, ``choices``, and optionally ``type`` (``text``/``integer``/``number``/
    ``boolean``), ``minimum`` and ``maximum``.
    """

    key: str
    description: str
    secret: bool
    required: bool
    env_var: str
    url: str
    default: Any
    choices: list[Any]
    type: str
    minimum: float
    maximum: float


class MemoryProvider(ABC):
    """Base class for memory backends. Subclass it, or match its shape (duck typing works).

    Providers must never assume other providers exist, must keep their data under the
    ``home`` kwarg of ``initialize`` (profile isolation), and should make ``prefetch`` fast.
    """

    # ------------------------------------------------------------------ identity
    @property
    @abstractmethod
    def name(self) -> str:
        """Short unique identifier, e.g. ``"holographic"``. Used as config key and log label."""

    @abstractmethod
    def is_available(self) -> bool:
        """Return True when installed and configured. Cheap: no network I/O, no subprocess."""

    @abstractmethod
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Set up for a session. kwargs are documented by ``memoryport.types.InitContext``.

        Raising drops the provider (with a warning); the agent continues without it.
        """

    @abstractmethod
    def get_tool_schemas(self) -> list[ToolSchema]:
        """Return OpenAI function schemas for the tools this provider exposes (may be [])."""

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run one of this provider's tools and return a JSON string.

        Default: a JSON error saying the provider has no such tool.
        """
        return json.dumps({"error": f"Provider '{self.name}' has no tool '{tool_name}'"})

    # ------------------------------------------------------------------ per turn
    def system_prompt_block(self) -> str:
        """Static text for the system prompt (not recall). Default: ``""``."""
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Return recalled context for this turn; it is fenced into the user message.

        Called once per user turn with the clean user message. Default: ``""``.
        """
        return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Warm a cache for the next turn (runs on the provider's background queue). No-op."""

    def sync_turn(
        self, user_content: str, assistant_content: str, *, session_id: str = "", **kwargs: Any
    ) -> None:
        """Persist a completed turn (runs on the provider's background queue). No-op.

        Only completed turns are synced; interrupted ones never are.
        """

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """Called at the start of each user turn, before ``prefetch``. No-op."""

    # ------------------------------------------------------------------ boundaries
    def on_session_end(self, messages: list[Message]) -> None:
        """A session ended or was committed (exit, reset, compression). No-op."""

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        reason: str = "",
        **kwargs: Any,
    ) -> None:
        """The session id rotated (``resume``/``branch``/``new``/``reset``/``compression``).

        Providers with per-session caches should drop or re-key them here. No-op.
        """

    def on_pre_compress(self, messages: list[Message]) -> str:
        """Last look at messages about to be compressed away; return text for the summary.

        Default: ``""``.
        """
        return ""

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """Mirror of a built-in memory write (``add``/``replace``/``remove``). No-op.

        The older three-argument form ``on_memory_write(action, target, content)`` is
        also supported; the manager detects which one a provider uses at registration.
        """

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        """A subagent finished a delegated task (parent-side observation). No-op."""

    def shutdown(self) -> None:
        """Flush and close. Must be idempotent and must not raise. No-op."""

    # ------------------------------------------------------------------ setup
    def get_config_schema(self) -> list[ConfigField]:
        """Fields for ``memoryport setup`` (see ``ConfigField``). Default: ``[]``."""
        return []

    def save_config(self, values: dict[str, Any], home: str) -> None:
        """Write non-secret config to the provider's own location under ``home``. No-op."""

    def post_setup(self, home: str, config: dict[str, Any]) -> None:
        """A provider-owned setup flow; when overridden, ``setup`` delegates to it. No-op."""


_TYPE_CHECKS: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def validate_config(schema: Sequence[Mapping[str, Any]], values: Mapping[str, Any]) -> list[str]:
    """Check ``values`` against a ``get_config_schema()`` list; return every problem at once.

    An empty list means the values are valid. Each problem names the key, the value and
    what was expected, e.g. ``"region: 'mars' is not one of 'us-east', 'eu-west'"``.
    """
    problems: list[str] = []
    known = {str(f.get("key")) for f in schema if f.get("key")}
    for index, field in enumerate(schema):
        key = field.get("key")
        if not isinstance(key, str) or not key:
            problems.append(f"schema field #{index} has no 'key'; every field needs a name")
            continue
        present = key in values and values[key] not in (None, "")
        if not present:
            if field.get("required") and field.get("default") in (None, ""):
                hint = f" (set it, or export {field['env_var']})" if field.get("env_var") else ""
                problems.append(f"{key}: required but missing{hint}")
            continue
        value = values[key]
        choices = field.get("choices")
        if choices and value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            problems.append(f"{key}: {value!r} is not one of {allowed}")
        kind = field.get("type")
        if isinstance(kind, str) and kind in _TYPE_CHECKS:
            expected = _TYPE_CHECKS[kind]
            bad_bool = isinstance(value, bool) and kind in ("integer", "number")
            if not isinstance(value, expected) or bad_bool:
                problems.append(f"{key}: {value!r} should be {kind}")
                continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            minimum, maximum = field.get("minimum"), field.get("maximum")
            if minimum is not None and value < minimum:
                problems.append(f"{key}: {value!r} is below the minimum {minimum!r}")
            if maximum is not None and value > maximum:
                problems.append(f"{key}: {value!r} is above the maximum {maximum!r}")
    for key in values:
        if key not in known:
            problems.append(f"{key}: unknown setting (known: {', '.join(sorted(known)) or 'none'})")
    return problems
