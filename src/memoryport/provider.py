"""The ``MemoryProvider`` contract.

Member names and semantics follow Hermes' ``agent/memory_provider.py`` so that providers
written for Hermes run here unchanged. Only ``name``, ``is_available``, ``initialize`` and
``get_tool_schemas`` are abstract; every other hook has a documented no-op default.

Any hook may be written as ``async def``; the manager runs coroutine hooks on its own
event-loop thread. The manager inspects a provider once, when it is registered (which hooks
it overrides, which are async, which signature variant each uses) and never per call; see
``memoryport.manager._hooks``. Settings schemas (``ConfigField``, ``validate_config``) live
in ``memoryport.config.schema``.

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

import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memoryport.config.schema import ConfigField
from memoryport.errors import tool_error_json
from memoryport.types import Message, ToolSchema

__all__ = [
    "MemoryProvider",
    "MemoryWriteListener",
    "MemoryWriteSource",
    "PortableProvider",
    "is_builtin",
    "mark_builtin",
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


@runtime_checkable
class PortableProvider(Protocol):
    """Optional capability: a provider whose data travels in ``memoryport export`` and
    ``memoryport import`` (one archive of a whole home; see docs/migration.md).

    ``export`` writes the provider's data as files under ``directory`` (JSONL by
    convention) and returns a small JSON-ready dict for the archive manifest (``format``,
    ``version``, ``counts``). ``import_`` reads those files back into ``home``: exactly
    into an empty store, merging into one that holds data (what is there already is
    skipped, so importing twice adds nothing), recording ``source`` (e.g.
    ``"import:backup.zip"``) in its provenance; it returns counts. Both run in the
    caller's thread, outside any session, whether or not the provider was initialized.
    """

    def export(self, directory: Path, *, home: Path) -> dict[str, Any]:
        """Write this provider's data under ``directory``; return manifest details."""

    def import_(self, directory: Path, *, home: Path, source: str) -> dict[str, Any]:
        """Restore what ``export`` wrote under ``directory`` into ``home``; return counts."""

_BUILTIN_OBJECTS: weakref.WeakSet[Any] = weakref.WeakSet()


def mark_builtin(provider: Any) -> Any:
    """Record ``provider`` as created by memoryport itself; returns it for chaining.

    The manager recognises built-in providers by the object, never by its ``name``: the
    library's own factories call this on what they create. A third-party provider that
    merely calls itself ``builtin`` is not built-in.
    """
    _BUILTIN_OBJECTS.add(provider)
    return provider


def is_builtin(provider: Any) -> bool:
    """True when ``provider`` is an object memoryport's own factories marked built-in."""
    try:
        return provider in _BUILTIN_OBJECTS
    except TypeError:
        return False


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

        Default: a JSON error (``memoryport.errors.tool_error``) saying it has no such tool.
        """
        return tool_error_json(f"Provider '{self.name}' has no tool '{tool_name}'", "ToolNotFound")

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

    def check_config(self, values: dict[str, Any]) -> list[str]:
        """Problems with a proposed config section beyond what the schema checks (rules
        across fields, formats); ``memoryport setup`` refuses to save while any remain.
        Default: ``[]``."""
        return []

    def save_config(self, values: dict[str, Any], home: str) -> None:
        """Write non-secret config to the provider's own location under ``home``. No-op."""

    def post_setup(self, home: str, config: dict[str, Any]) -> None:
        """A provider-owned setup flow; when overridden, ``setup`` delegates to it. No-op."""
