"""``BuiltinMemoryProvider``: curated memory (``MEMORY.md``/``USER.md``) as a provider.

It exposes the ``memory`` tool, returns the frozen snapshot from ``system_prompt_block()``
and reports every successful write to the listener the manager installs (the
``MemoryWriteSource`` capability), so other providers can mirror it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Unpack

from memoryport.config import AGENT_NOTES_MODES, DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT
from memoryport.config.schema import ConfigField
from memoryport.errors import ConfigError
from memoryport.provider import MemoryProvider, MemoryWriteListener, mark_builtin
from memoryport.providers.curated.store import (
    Change,
    CuratedMemory,
    CuratedOptions,
    Provenance,
    WriteResult,
)
from memoryport.providers.curated.suppressed import suppressed_target, suppressed_write
from memoryport.providers.curated.tool import (
    MEMORY_TOOL_NAME,
    memory_tool_schema,
    run_memory_tool,
)
from memoryport.storage.history import DEFAULT_MAX_AGE_DAYS, DEFAULT_MAX_REVISIONS
from memoryport.types import SessionContext, ToolSchema

__all__ = ["BuiltinMemoryProvider", "create_builtin_provider"]

log = logging.getLogger(__name__)

_CONFIG_SCHEMA: list[ConfigField] = [
    {"key": "memory_enabled", "description": "Keep agent notes (MEMORY.md).",
     "type": "boolean", "default": True},
    {"key": "user_profile_enabled", "description": "Keep a user profile (USER.md).",
     "type": "boolean", "default": True},
    {"key": "memory_char_limit", "description": "Character budget of MEMORY.md.",
     "type": "integer", "default": DEFAULT_MEMORY_CHAR_LIMIT, "minimum": 1},
    {"key": "user_char_limit", "description": "Character budget of USER.md.",
     "type": "integer", "default": DEFAULT_USER_CHAR_LIMIT, "minimum": 1},
    {"key": "agent_notes", "description": "One MEMORY.md for all users, or one per user.",
     "type": "text", "default": AGENT_NOTES_MODES[0], "choices": list(AGENT_NOTES_MODES)},
]  # fmt: skip


class BuiltinMemoryProvider(MemoryProvider):
    """The compact always-on memory: agent notes and user profile, curated by the model.

    Use :func:`create_builtin_provider` to get one; the manager recognises the objects that
    factory creates as built-in (by identity, not by the name ``"builtin"``).
    """

    def __init__(
        self,
        home: Path | str | None = None,
        *,
        memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT,
        user_char_limit: int = DEFAULT_USER_CHAR_LIMIT,
        memory_enabled: bool = True,
        user_profile_enabled: bool = True,
        lock_timeout: float = 10.0,
        agent_notes: str = AGENT_NOTES_MODES[0],
        user_id: str = "",
        history_enabled: bool = True,
        history_max_age_days: int = DEFAULT_MAX_AGE_DAYS,
        history_max_revisions: int = DEFAULT_MAX_REVISIONS,
    ) -> None:
        self._default_home = Path(home).expanduser() if home is not None else None
        self._default_user = user_id
        self._options = CuratedOptions(
            memory_char_limit=memory_char_limit,
            user_char_limit=user_char_limit,
            memory_enabled=memory_enabled,
            user_profile_enabled=user_profile_enabled,
            agent_notes=agent_notes,
            history_enabled=history_enabled,
            history_max_age_days=history_max_age_days,
            history_max_revisions=history_max_revisions,
        )
        self._any_enabled = memory_enabled or user_profile_enabled
        self._lock_timeout = lock_timeout
        self._store: CuratedMemory | None = None
        self._initial = SessionContext()
        self._listener: MemoryWriteListener | None = None
        self._suppressed: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """Always ``"builtin"``."""
        return "builtin"

    def is_available(self) -> bool:
        """Always True: curated memory needs nothing but a writable home directory."""
        return True

    def initialize(
        self, session_id: str, *, context: SessionContext | None = None, **kwargs: Any
    ) -> None:
        """Open the store under the context's home and freeze the snapshot.

        Without a ``context``, one is read from the Hermes keywords (``home`` or
        ``hermes_home``, ``user_id``). The user id selects that user's own profile file.
        Raises ``ConfigError`` when no home directory is known.
        """
        context = context or SessionContext.from_kwargs(session_id, **kwargs)
        self._initial = context
        home = context.home or self._default_home
        if not home:
            raise ConfigError("The builtin memory provider needs a home directory (home=...).")
        self._store = self._open(home, context.user_id or self._default_user)
        self._store.load()

    def get_tool_schemas(self) -> list[ToolSchema]:
        """``[memory tool schema]``, or ``[]`` when both targets are disabled."""
        return [memory_tool_schema()] if self._any_enabled else []

    # ------------------------------------------------------------------ use
    @property
    def store(self) -> CuratedMemory | None:
        """The open store (None before ``initialize`` when no home was given)."""
        if self._store is None and self._default_home is not None:
            self._store = self._open(self._default_home, self._default_user)
        return self._store

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run the ``memory`` tool; always returns a JSON string, never raises.

        ``kwargs`` may carry ``tool_call_id``, ``source`` and the session (``context``, or a
        ``session_id``; else the session it was initialized for); they are passed to the
        write listener in the metadata.
        """
        if tool_name != MEMORY_TOOL_NAME:
            return super().handle_tool_call(tool_name, args, **kwargs)
        store = self.store if self._any_enabled else None
        target = suppressed_target(args, self._suppressed)
        if target:  # another provider owns this target: report the write, skip the file
            text, changes = suppressed_write(target, args, store.home if store else None)
            for change in changes:
                self._notify(change, kwargs)
            return text
        outcome = run_memory_tool(store, args, self._provenance(kwargs))
        if outcome.result is not None:
            for change in outcome.result.changes:
                self._notify(change, kwargs)
        return outcome.text

    def rewrite(
        self, target: str, entries: list[str], *, expected_raw: str, source: str = "memory_edit"
    ) -> WriteResult:
        """Save a whole-file edit (``memoryport memory edit``) and report it like a tool write.

        ``entries`` were reviewed against ``expected_raw`` (``CuratedMemory.review``); see
        ``CuratedMemory.rewrite`` for the checks. Each removed entry reaches the write
        listener as a ``remove`` and each new one as an ``add`` (``source`` in the metadata).
        ``ConfigError`` when no home is known; ``MemoryStoreError`` (nothing written) when
        the target is disabled or the file changed meanwhile.
        """
        store = self._require_store()
        origin = self._provenance({"source": source})
        result = store.rewrite(target, entries, expected_raw=expected_raw, provenance=origin)
        self._notify_all(result, source)
        return result

    def restore(
        self, target: str, rev: int, *, before: bool = False, source: str = "cli"
    ) -> WriteResult:
        """Restore revision ``rev`` of ``target`` (``CuratedMemory.restore``) and report
        each removed and re-added entry to the write listener like an edit."""
        store = self._require_store()
        origin = self._provenance({"source": source})
        result = store.restore(target, rev, before=before, provenance=origin)
        self._notify_all(result, source)
        return result

    def _require_store(self) -> CuratedMemory:
        store = self.store
        if store is None:
            raise ConfigError("The builtin memory provider needs a home directory (home=...).")
        return store

    def _notify_all(self, result: WriteResult, source: str) -> None:
        for change in result.changes:
            removed = change.content if change.action == "remove" else ""
            # A removed entry was matched whole: it is its own old_text and previous text.
            full = Change(change.action, change.target, change.content, removed, removed)
            self._notify(full, {"source": source})

    def _provenance(self, call_kwargs: dict[str, Any]) -> Provenance:
        context = call_kwargs.get("context")
        user = context.user_id if isinstance(context, SessionContext) else ""
        return Provenance(
            source=str(call_kwargs.get("source") or "memory_tool"),
            session_id=_session_of(call_kwargs) or self._initial.session_id,
            tool_call_id=str(call_kwargs.get("tool_call_id") or ""),
            user_id=user or self._initial.user_id or self._default_user,
        )

    def system_prompt_block(self) -> str:
        """The snapshot frozen at ``initialize`` (or the last ``rebuild_snapshot``)."""
        return self._store.snapshot.text if self._store is not None else ""

    def rebuild_snapshot(self) -> str:
        """Re-read the files and freeze a new snapshot now; returns its text."""
        store = self.store
        return store.load().text if store is not None else ""

    def set_memory_write_listener(self, listener: MemoryWriteListener) -> None:
        """Install the callback called after every successful add/replace/remove."""
        self._listener = listener

    def set_suppressed_targets(self, targets: frozenset[str]) -> None:
        """Targets whose local write other providers suppress (``capabilities()``): their
        writes are checked and reported to the listener, the file is left unchanged."""
        self._suppressed = frozenset(targets)

    def get_config_schema(self) -> list[ConfigField]:
        """Enable switches and character budgets of the two targets."""
        return [dict(field) for field in _CONFIG_SCHEMA]  # type: ignore[misc]

    # ------------------------------------------------------------------ internals
    def _open(self, home: Path, user_id: str) -> CuratedMemory:
        options = self._options
        return CuratedMemory(home, user_id=user_id, lock_timeout=self._lock_timeout, **options)

    def _notify(self, change: Change, call_kwargs: dict[str, Any]) -> None:
        if self._listener is None:
            return
        metadata: dict[str, Any] = {
            "session_id": _session_of(call_kwargs) or self._initial.session_id,
            "tool_call_id": str(call_kwargs.get("tool_call_id") or ""),
            "source": str(call_kwargs.get("source") or "memory_tool"),
        }
        if change.action != "add":
            metadata["old_text"] = change.old_text
        if change.action == "replace":
            metadata["previous"] = change.previous
        if change.action == "remove":
            metadata["removed"] = change.previous
        try:
            self._listener(change.action, change.target, change.content, metadata)
        except Exception:
            log.warning("memory write listener failed", exc_info=True)


def _session_of(call_kwargs: dict[str, Any]) -> str:
    """The session a tool call belongs to: its ``context``'s, else its ``session_id``."""
    context = call_kwargs.get("context")
    if isinstance(context, SessionContext) and context.session_id:
        return context.session_id
    return str(call_kwargs.get("session_id") or "")


def create_builtin_provider(
    home: Path | None = None, *, user_id: str = "", **options: Unpack[CuratedOptions]
) -> BuiltinMemoryProvider:
    """Create the built-in curated-memory provider and mark it as memoryport's own.

    ``options`` are :class:`BuiltinMemoryProvider`'s (``memory_char_limit``,
    ``user_char_limit``, ``memory_enabled``, ``user_profile_enabled``, ``agent_notes``:
    ``"shared"``, one ``MEMORY.md`` for every user, or ``"per_user"``); ``user_id`` is the
    user whose files are used until ``initialize`` names one.
    """
    provider = BuiltinMemoryProvider(home, user_id=user_id, **options)
    mark_builtin(provider)
    return provider
