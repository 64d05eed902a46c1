"""``memoryport.open()`` and ``Memory``: the one API every shell uses.

The CLI, the MCP server, the framework adapters and the reference agent all go through
``Memory`` (and ``memoryport.admin`` for administration); none of them touches the manager
or storage directly. ``Memory`` owns the turn lifecycle so no agent has to re-learn it::

    memory = memoryport.open()
    system_prompt = memory.start_session(source="cli")
    turn = memory.begin_turn("What editor do I use?")
    payload_content = turn.api_user_message()        # fenced recall appended
    ...                                               # call the model, run tools:
    result = turn.handle_tool_call("memory", {...}, tool_call_id="call_1")
    memory.end_turn(turn, "You use Helix.")           # persist + sync providers
    memory.close()
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from memoryport._shutdown import close_at_exit, close_on_sigterm
from memoryport._wiring import open_session_store, wire
from memoryport.admin import audit as _audit
from memoryport.admin import pause as _pause
from memoryport.config import (
    Config,
    ensure_home,
    load_config,
    load_env_into_environ,
    resolve_home,
)
from memoryport.errors import MemoryportError, SessionNotFound, StoreError
from memoryport.manager import ManagerSettings, MemoryManager
from memoryport.providers.curated import BuiltinMemoryProvider
from memoryport.storage.sessions.base import SessionStore, new_session_id
from memoryport.turn import Turn, UserContent, chat_messages, clean_user_content
from memoryport.types import ContextPair, Message, SessionContext, ToolSchema, flatten_content

__all__ = [
    "CompressionResult",
    "Memory",
    "SwitchReason",
    "open_memory",
    "open_session_store",
]

log = logging.getLogger(__name__)

SwitchReason = Literal["new", "reset", "resume", "branch"]
Summarizer = Callable[[list[Message], list[str]], str]
"""``summarize(messages, provider_contributions) -> summary text``."""


@dataclass(frozen=True)
class _Draft:
    """A session not stored yet: its record is created with its first message."""

    source: str
    title: str
    parent: str | None
    model: str


@dataclass(frozen=True)
class CompressionResult:
    """What ``Memory.compress`` did: the new session, the summary and the new prompt."""

    old_session_id: str
    new_session_id: str
    summary: str
    contributions: list[ContextPair]
    system_prompt: str


def open_memory(
    home: str | Path | None = None,
    profile: str | None = None,
    user_id: str | None = None,
    *,
    platform: str = "api",
    providers: Sequence[Any] = (),
    config: Config | None = None,
    manager_settings: ManagerSettings | None = None,
    load_provider: bool = True,
    handle_sigterm: bool = False,
) -> Memory:
    """Build a ``Memory`` from ``<home>/config.yaml``: curated memory, sessions, providers.

    ``home``/``profile`` resolve like the CLI's (``MEMORYPORT_HOME``, ``--profile``).
    ``providers`` adds provider objects directly (for agents that construct their own);
    ``load_provider=False`` skips the configured ``memory.provider`` plugin. The memory is
    closed at interpreter exit; ``handle_sigterm=True`` also closes it on SIGTERM (see
    ``Memory.close_on_sigterm``; a library installs no signal handler by default).
    """
    resolved = resolve_home(home, profile)
    ensure_home(resolved)
    cfg = config or load_config(resolved)
    load_env_into_environ(resolved)
    parts = wire(
        resolved,
        cfg,
        user_id,
        providers=providers,
        manager_settings=manager_settings,
        load_provider=load_provider,
    )
    memory = Memory(
        home=resolved,
        config=cfg,
        manager=parts.manager,
        store=parts.store,
        curated=parts.curated,
        user_id=user_id,
        platform=platform,
    )
    if handle_sigterm:
        memory.close_on_sigterm()
    return memory


class Memory:
    """The turn lifecycle over one manager, one session store and curated memory."""

    def __init__(
        self,
        *,
        home: Path,
        config: Config,
        manager: MemoryManager,
        store: SessionStore,
        curated: BuiltinMemoryProvider | None,
        user_id: str | None = None,
        platform: str = "api",
    ) -> None:
        self.home = home
        self.config = config
        self.user_id = user_id
        self.platform = platform
        self._manager = manager
        self._store = store
        self._curated = curated
        self._context = SessionContext(home=home, platform=platform, user_id=user_id or "")
        self._turn_number = 0
        self._system_prompt = ""
        self._initialized = False
        self.provider_kwargs: dict[str, Any] = {}
        """Extra ``initialize`` keywords for providers (``user_name``, ``chat_name``, the
        CLI's ``warning_callback`` / ``status_callback``); set before ``start_session``."""
        self._closed = False
        self._lock = threading.RLock()
        self._drafts: dict[str, _Draft] = {}
        close_at_exit(self)

    # ------------------------------------------------------------------ state
    @property
    def session_id(self) -> str:
        """The active session id ("" before ``start_session``)."""
        return self._context.session_id

    @property
    def context(self) -> SessionContext:
        """The active session context (frozen; a new one is made at every switch). The
        manager passes it with every hook to providers that declare a ``context`` parameter."""
        return self._context

    @property
    def system_prompt(self) -> str:
        """The frozen system prompt text of the active session."""
        return self._system_prompt

    @property
    def sessions(self) -> SessionStore:
        """The session store (read-only use: search, browse, export)."""
        return self._store

    @property
    def curated(self) -> BuiltinMemoryProvider | None:
        """The built-in curated-memory provider, or None when both files are disabled."""
        return self._curated

    @property
    def providers(self) -> list[Any]:
        """Every active provider, built-in ones first."""
        return self._manager.providers

    @property
    def suppressed_targets(self) -> frozenset[str]:
        """Curated targets (``"memory"``, ``"user"``) whose local write a provider's
        ``capabilities()`` suppresses; frozen once providers are initialized."""
        return self._manager.suppressed_targets

    @property
    def local_writes_suppressed(self) -> bool:
        """True when both curated targets are suppressed: a background memory review
        would write nothing locally, so agents skip it."""
        return {"memory", "user"} <= self._manager.suppressed_targets

    def health(self) -> dict[str, dict[str, Any]]:
        """Live per-provider health from the manager."""
        return self._manager.health()

    # ------------------------------------------------------------------ sessions
    def start_session(
        self,
        session_id: str | None = None,
        *,
        source: str | None = None,
        title: str | None = None,
        parent_session_id: str | None = None,
        model: str = "",
    ) -> str:
        """Open (or resume, if it exists) a session; return the system prompt text.

        The first call initializes every provider; later calls switch sessions
        (``reason="new"``, or ``"resume"`` for an existing id).
        """
        with self._lock:
            if self._initialized:
                reason: SwitchReason = (
                    "resume" if session_id and self._exists(session_id) else "new"
                )
                return self.switch_session(session_id, reason=reason, title=title)
            base = SessionContext(
                home=self.home,
                platform=source or self.platform,
                user_id=self.user_id or "",
                parent_session_id=parent_session_id or "",
                session_title=title or "",
            )
            self._context = base
            record = self._open_record(session_id, title, parent_session_id, model)
            from memoryport.plugins.hermes_compat import initialize_kwargs

            kwargs = initialize_kwargs(self.home, base.to_kwargs(), self.provider_kwargs)
            self._context = SessionContext.from_kwargs(record, **kwargs)
            self._manager.initialize_all(
                self._context, provider_config=self.config.provider_section
            )
            self._initialized = True
            self._turn_number = 0
            self._system_prompt = self._manager.build_system_prompt()
            return self._system_prompt

    def set_title(self, title: str) -> None:
        """Set the active session's title (starting a session first if needed)."""
        if not self._initialized:
            self.start_session()
        self._ensure_row(self.session_id)
        self._store.set_title(self.session_id, title)

    def open_child(self, *, source: str = "subagent", title: str | None = None) -> Memory:
        """A second ``Memory`` on the same home for a subagent, its session already started.

        The child session's ``parent_session_id`` is the active session and its source is
        ``source`` (hidden from search by default). The child loads no external provider
        (``load_provider=False``): a subagent's scratch work is not the user's conversation;
        report its result to this memory's providers with ``delegated()``. The caller closes
        the child.
        """
        if not self._initialized:
            self.start_session()
        self._ensure_row(self.session_id)  # the child's parent link needs the record
        child = open_memory(
            self.home, "default", self.user_id, platform=source, config=self.config,
            load_provider=False,
        )
        child.start_session(source=source, title=title, parent_session_id=self.session_id)
        return child

    def _exists(self, session_id: str) -> bool:
        try:
            self._store.get_session(session_id, user_id=self.user_id)
        except SessionNotFound:
            return False
        return True

    def _open_record(
        self, session_id: str | None, title: str | None, parent: str | None, model: str = ""
    ) -> str:
        """The id of an existing session, or of a new draft (stored with its first message)."""
        if session_id and self._exists(session_id):
            return session_id
        if parent and parent not in self._drafts and not self._exists(parent):
            raise SessionNotFound(f"unknown parent session {parent!r}")
        new = session_id or new_session_id()
        self._drafts[new] = _Draft(self._context.platform, title or "", parent or None, model)
        return new

    def _ensure_row(self, session_id: str) -> None:
        """Create the stored record of a drafted session (its draft parents first)."""
        if session_id not in self._drafts:
            return
        with self._lock:
            draft = self._drafts.get(session_id)
            if draft is None:
                return
            if draft.parent:
                self._ensure_row(draft.parent)
            self._store.create_session(
                session_id,
                source=draft.source,
                user_id=self.user_id,
                model=draft.model,
                title=draft.title,
                parent_session_id=draft.parent,
            )
            del self._drafts[session_id]

    def switch_session(
        self,
        session_id: str | None = None,
        *,
        reason: SwitchReason = "new",
        title: str | None = None,
        messages: Sequence[Message] | None = None,
    ) -> str:
        """Rotate to another session: ``new``/``reset`` (fresh), ``resume`` (existing id),
        ``branch`` (a child of the current session). Returns the new system prompt.

        The old session is committed first (``on_session_end``), then providers get
        ``on_session_switch(new, parent_session_id=..., reset=..., reason=...)`` with the new
        ``context``.
        """
        with self._lock:
            old = self.session_id
            if reason == "resume":
                if not session_id or not self._exists(session_id):
                    raise SessionNotFound(f"cannot resume: no session {session_id!r}")
                new = session_id
            else:
                parent = old if reason == "branch" else None
                new = self._open_record(None if reason != "new" else session_id, title, parent)
                if reason == "branch":
                    self._ensure_row(new)  # lineage is visible at once (session_search)
            self._commit(old, messages, end_reason=reason)
            switched = self._context.switched(new, old if reason == "branch" else "")
            self._context = replace(switched, session_title=title or "")
            self._turn_number = 0
            self._manager.on_session_switch(
                self._context, reset=reason in ("new", "reset"), reason=reason
            )
            return self._rebuild_prompt()

    def _commit(self, session_id: str, messages: Sequence[Message] | None, end_reason: str) -> None:
        if not session_id:
            return
        drafted = session_id in self._drafts
        if messages is not None:
            history = list(messages)
        else:
            history = [] if drafted else self._history(session_id)
        self._manager.on_session_end(history)
        if drafted:
            return  # never stored: nothing to mark ended
        try:
            self._store.end_session(session_id, end_reason=end_reason)
        except MemoryportError as exc:
            log.warning("could not mark session %s ended: %s", session_id, exc)

    def session_messages(self, session_id: str) -> list[Message]:
        """A stored session's messages as chat messages (``tool_calls`` and ``tool_call_id``
        kept), oldest first. ``SessionNotFound`` for an unknown (or not yet stored) id."""
        return chat_messages(self._store.get_messages(session_id))

    def _history(self, session_id: str) -> list[Message]:
        if session_id in self._drafts:
            return []  # not stored yet: no messages
        try:
            return self.session_messages(session_id)
        except MemoryportError as exc:
            log.warning("could not read session %s: %s", session_id, exc)
            return []

    def _rebuild_prompt(self) -> str:
        if self._curated is not None:
            self._curated.rebuild_snapshot()
        self._system_prompt = self._manager.build_system_prompt()
        return self._system_prompt

    # ------------------------------------------------------------------ turns
    def begin_turn(self, user_message: UserContent) -> Turn:
        """Start a user turn: count it, ``on_turn_start``, recall once for the whole turn.

        Any ``<memory-context>`` leaked into the user's text is stripped first, so recall
        is queried with (and history keeps) the clean message; text is made valid UTF-8.
        ``TypeError`` (nothing counted) when ``user_message`` is neither a string nor a
        list of content-part dicts.
        """
        clean = clean_user_content(user_message)
        if not self._initialized:
            self.start_session()
        query = flatten_content(clean)
        with self._lock:
            self._turn_number += 1
            number = self._turn_number
            context = self._context
        self._manager.on_turn_start(
            number, query, session_id=context.session_id, platform=context.platform,
            context=context,
        )
        history = functools.partial(self._history, context.session_id)
        contexts = [] if _pause.pause_state(self.home).recall else self._manager.prefetch_all(
            query, context=context, history=history)
        _audit.log_recall(self.home, self.platform, context, number, contexts)
        return Turn(
            number=number,
            session_id=context.session_id,
            user_content=clean,
            query=query,
            contexts=contexts,
            budget_chars=self.config.memory.context_budget_chars,
            call_tool=functools.partial(self._call_tool, context=context),
            context=context,
        )

    def end_turn(
        self,
        turn: Turn,
        final_response: str | None,
        *,
        interrupted: bool = False,
    ) -> None:
        """Persist the turn's messages; on a completed turn sync providers and queue recall.

        An interrupted or failed turn is persisted (what happened happened) but never
        synced to external providers: partial tool chains are not conversational truth.
        Every tool call stored gets a result, so the session replays as a valid request.

        ``StoreError`` when the session store could not store the turn: nothing of it was
        written, no provider was told, and the turn stays open; call ``end_turn`` again
        with the same arguments to retry.
        """
        if turn.closed:
            return
        if final_response is not None and not isinstance(final_response, str):
            raise TypeError(
                f"end_turn: final_response must be a str or None, not "
                f"{type(final_response).__name__}"
            )
        messages = turn.closing_messages(final_response)
        try:
            self._ensure_row(turn.session_id)
            self._store.append_messages(turn.session_id, messages)
        except StoreError as exc:
            raise StoreError(
                f"turn {turn.number} of session {turn.session_id} was not stored: {exc}. "
                "Nothing of it was written and it is still open; call end_turn again to retry."
            ) from exc
        turn.messages[:] = messages
        turn.closed = True
        final_response = messages[-1]["content"] if final_response is not None else None
        if interrupted or not final_response or not turn.query.strip():
            return
        _pause.sync_or_hold(
            self.home, self._manager.sync_all, turn.query, final_response,
            session_id=turn.session_id, context=turn.context, messages=turn.messages,
        )
        self._manager.queue_prefetch_all(
            turn.query, session_id=turn.session_id, context=turn.context
        )

    # ------------------------------------------------------------------ tools
    def tool_schemas(self) -> list[ToolSchema]:
        """Every tool schema (memory, session_search, provider tools), OpenAI function form."""
        return self._manager.get_all_tool_schemas()

    def openai_tools(self) -> list[dict[str, Any]]:
        """The schemas wrapped for the chat-completions ``tools`` parameter."""
        return [{"type": "function", "function": schema} for schema in self.tool_schemas()]

    def reserve_tool_names(self, *names: str) -> None:
        """Reserve names of tools the agent serves itself (e.g. ``delegate_task``).

        A provider tool with a reserved name is then ignored with a warning, so the model
        never sees two tools with one name. ``memory`` and ``session_search`` are always
        reserved. Raises ValueError (changing nothing) for an empty or non-string name.
        """
        self._manager.reserve_tool_names(*names)

    def call_tool(
        self,
        name: str,
        args: Any,
        *,
        tool_call_id: str = "",
        session_id: str = "",
        source: str = "",
    ) -> str:
        """Run a memory tool and return its JSON result (errors are JSON too).

        ``source`` labels who called (e.g. ``"background_review"``); curated writes report
        it in the ``on_memory_write`` metadata.
        """
        context = self._context
        if session_id and session_id != context.session_id:
            context = context.switched(session_id)
        return self._call_tool(name, args, tool_call_id, context=context, source=source)

    def _call_tool(
        self, name: str, args: Any, tool_call_id: str, *, context: SessionContext, source: str = ""
    ) -> str:
        extra = {"source": source} if source else {}
        result = _pause.refuse_tool(self.home, name, args) or self._manager.handle_tool_call(
            name, args, tool_call_id=tool_call_id, session_id=context.session_id,
            context=context, **extra,
        )
        _audit.log_tool_call(self.home, self.platform, context, name, args, result, self._curated)
        return result

    def delegated(self, task: str, result: str, *, child_session_id: str = "") -> None:
        """Report a finished subagent task to providers (``on_delegation``)."""
        self._manager.on_delegation(task, result, child_session_id=child_session_id)

    # ------------------------------------------------------------------ compression
    def compress(self, messages: Sequence[Message], summarize: Summarizer) -> CompressionResult:
        """Compress the context: pre-compress hooks, summary, commit, rotate, switch.

        Order: ``on_pre_compress`` (blocking) -> contributions handed to ``summarize`` ->
        ``on_session_end`` for the old session (commit without shutdown) -> a new session
        linked by ``parent_session_id`` -> system prompt rebuilt -> ``on_session_switch(
        new, parent_session_id=old, reset=False, reason="compression")``.
        """
        contributions = self.collect_compression_context(messages)
        summary = summarize(list(messages), [text for _, text in contributions])
        return self.rotate_after_compression(messages, summary, contributions)

    def collect_compression_context(self, messages: Sequence[Message]) -> list[ContextPair]:
        """Step 1 of ``compress``: the providers' ``on_pre_compress`` contributions."""
        return self._manager.on_pre_compress(messages)

    def rotate_after_compression(
        self, messages: Sequence[Message], summary: str, contributions: list[ContextPair]
    ) -> CompressionResult:
        """Step 2 of ``compress``: commit the old session and rotate to a linked new one."""
        with self._lock:
            old = self.session_id
            self._commit(old, messages, end_reason="compression")
            new = self._open_record(None, None, old)
            self._context = self._context.switched(new, old)
            if summary:
                self._ensure_row(new)
                self._store.append_message(
                    new, {"role": "user", "content": summary, "metadata": {"kind": "summary"}}
                )
            prompt = self._rebuild_prompt()
            self._manager.on_session_switch(self._context, reset=False, reason="compression")
            return CompressionResult(old, new, summary, list(contributions), prompt)

    # ------------------------------------------------------------------ shutdown
    def flush(self, timeout: float | None = None) -> int:
        """Wait for queued provider work (syncs, mirrors); returns items still pending."""
        return self._manager.flush(timeout)

    def close_on_sigterm(self) -> bool:
        """Opt in: close this memory on SIGTERM (queued syncs delivered, ``on_session_end``,
        providers shut down), then run the previous handler or exit with status 143.

        For programs that own their process (``memoryport chat``, the reference agent); a
        library embedding memoryport should leave signals to its host. Returns False when
        called off the main thread before any handler was installed (Python allows signal
        handlers only there); the memory is still closed at interpreter exit.
        """
        return close_on_sigterm(self)

    def close(self, messages: Sequence[Message] | None = None) -> None:
        """End the session (``on_session_end``) and shut providers down. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._initialized:
                self._commit(self.session_id, messages, end_reason="close")
        self._manager.shutdown_all()
        self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
