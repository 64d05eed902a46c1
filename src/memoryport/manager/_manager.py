"""``MemoryManager``: runs the provider lifecycle under an enforced threading contract.

The manager knows ``provider.py``, ``_hooks.py`` and the worker threads; it never knows a
concrete provider or any storage. Whatever a provider does (hang, sleep, raise, return
junk), the caller gets its answer within the hook's deadline and never sees an exception:

- ``prefetch_all``: providers in parallel, one deadline per turn; a late result is
  discarded; after ``breaker_threshold`` consecutive misses a provider is skipped for a
  cool-down instead of costing every turn the deadline.
- ``sync_all``, ``queue_prefetch_all``, ``on_memory_write``, ``on_delegation``,
  ``on_session_end``, ``on_session_switch``: never block; each provider has an ordered,
  bounded background queue, drained by ``shutdown_all`` so a normal exit loses nothing.
- ``on_pre_compress``: blocking, parallel, joined with its own deadline.
- ``shutdown_all``: drain, then ``shutdown()`` in reverse registration order with a
  per-provider deadline; idempotent; registered with ``atexit`` through a weakref.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import Any, TypeVar

from memoryport.manager._capabilities import CapabilityTable
from memoryport.manager._health import CircuitBreaker, ProviderHealth
from memoryport.manager._hooks import inspect_provider
from memoryport.manager._results import context_pairs
from memoryport.manager._settings import ManagerSettings
from memoryport.manager._slot import ProviderSlot, registration_problem, shutdown_slots
from memoryport.manager._tools import (
    CORE_TOOL_NAMES,
    build_tool_table,
    check_tool_names,
    error_json,
    normalize_schemas,
    parse_tool_args,
    result_to_json,
)
from memoryport.manager._workers import (
    BackgroundQueue,
    Lane,
    LoopThread,
    resolve,
    run_with_deadline,
    timed,
)
from memoryport.provider import MemoryWriteSource, is_builtin
from memoryport.types import ContextPair, Message, SessionContext, ToolSchema, alias_home

__all__ = ["ManagerSettings", "MemoryManager"]

log = logging.getLogger("memoryport.manager")

R = TypeVar("R")


def _shutdown_at_exit(ref: weakref.ref[MemoryManager]) -> None:
    manager = ref()
    if manager is not None:
        manager.shutdown_all()


class MemoryManager:
    """Registers providers and dispatches lifecycle hooks to them (Hermes' method names)."""

    def __init__(self, settings: ManagerSettings | None = None) -> None:
        self.settings = settings or ManagerSettings()
        self._slots: list[ProviderSlot] = []
        self._lock = threading.RLock()
        self._loop: LoopThread | None = None
        self._loop_lock = threading.Lock()
        self._tools: dict[str, ProviderSlot] | None = None
        self._schemas: list[ToolSchema] = []
        self._context = SessionContext()
        self._reserved_tools = CORE_TOOL_NAMES
        self._shutdown = False
        self._turn_marks: dict[str, float] = {}
        self._queued_for: dict[str, str] = {}
        self._caps = CapabilityTable()  # frozen per provider after its initialize
        self._compressions = 0
        self._get_loop = self._loop_getter()
        atexit.register(_shutdown_at_exit, weakref.ref(self))

    # ------------------------------------------------------------------ registration
    @property
    def providers(self) -> list[Any]:
        """The registered providers, in registration order."""
        return [slot.provider for slot in self._slots]

    @property
    def session_id(self) -> str:
        """The current session id (from ``initialize_all`` / ``on_session_switch``)."""
        return self._context.session_id

    @property
    def context(self) -> SessionContext:
        """The current session context (from ``initialize_all`` / ``on_session_switch``)."""
        return self._context

    def _ctx(self, context: SessionContext | None, session_id: str = "") -> SessionContext:
        """The context a call is about: the one passed, else the current one (for another
        ``session_id`` when one is named)."""
        if context is not None:
            return context
        if session_id and session_id != self._context.session_id:
            return self._context.switched(session_id, self._context.parent_session_id)
        return self._context

    def get_provider(self, name: str) -> Any | None:
        """The registered provider called ``name``, or None."""
        return next((s.provider for s in self._slots if s.name == name), None)

    def add_provider(self, provider: Any) -> bool:
        """Register ``provider``; returns False (with a warning) when it is rejected.

        Rejected: a name that is empty or already taken, a reserved name used by an object
        memoryport did not create, more than ``max_external_providers`` external providers,
        or a provider whose ``is_available()`` is False or raises. Never raises.
        """
        try:
            name = provider.name
        except Exception as exc:
            log.warning("rejected provider %r: reading .name raised %s", provider, exc)
            return False
        if not isinstance(name, str) or not name.strip():
            log.warning("rejected provider %r: name must be a non-empty string", provider)
            return False
        builtin = is_builtin(provider)
        with self._lock:
            problem = self._registration_problem(name, builtin)
            if problem:
                log.warning("rejected memory provider %r: %s", name, problem)
                return False
            if not self._check_available(provider, name):
                return False
            self._slots.append(self._make_slot(provider, name, builtin))
            self._tools = None
        if isinstance(provider, MemoryWriteSource):
            provider.set_memory_write_listener(functools.partial(self._mirror_write, provider))
        return True

    def _registration_problem(self, name: str, builtin: bool) -> str:
        if self._shutdown:
            return "the manager has been shut down"
        return registration_problem(
            self._slots, name, builtin, self.settings.max_external_providers
        )

    def _check_available(self, provider: Any, name: str) -> bool:
        try:
            available = self._run_with_deadline(
                provider.is_available, self.settings.init_deadline_s
            )
        except Exception as exc:
            log.warning("provider %r dropped: is_available() failed: %s", name, exc)
            return False
        if not available:
            log.warning("provider %r is not available (missing config or dependency)", name)
            return False
        return True

    def _make_slot(self, provider: Any, name: str, builtin: bool) -> ProviderSlot:
        """Inspect ``provider`` once and give it a lane, a background queue and counters."""
        profile = inspect_provider(provider, name)
        health = ProviderHealth(
            CircuitBreaker(self.settings.breaker_threshold, self.settings.breaker_cooldown_s)
        )
        loop_getter = self._loop_getter()
        background = BackgroundQueue(
            name, self.settings.queue_maxsize, loop_getter, health.error_logged(name), health.ok
        )
        return ProviderSlot(
            provider, name, builtin, profile, Lane(name, loop_getter), background, health
        )

    def _loop_getter(self) -> Callable[[], LoopThread | None]:
        ref = weakref.ref(self)

        def get() -> LoopThread | None:
            manager = ref()
            if manager is None:
                return None
            with manager._loop_lock:
                if manager._loop is None and not manager._shutdown:
                    manager._loop = LoopThread()
                return manager._loop

        return get

    def _run_with_deadline(self, fn: Callable[[], R], deadline: float) -> R:
        """Run a registration-time call on a one-off thread, bounded by ``deadline``."""
        result: R = run_with_deadline(fn, deadline, self._get_loop)
        return result

    # ------------------------------------------------------------------ initialize
    def initialize_all(self, session: str | SessionContext, **kwargs: Any) -> None:
        """Initialize every provider; drop (with a warning) those that raise or time out.

        ``session`` is the ``SessionContext`` (its ``to_kwargs()`` are the keywords, plus
        ``kwargs``) or a session id with the keywords. ``home`` and ``hermes_home`` are
        aliases: whichever is given is passed as both.
        """
        if isinstance(session, SessionContext):
            context, kwargs = session, {**session.to_kwargs(), **kwargs}
        else:
            kwargs = alias_home(kwargs)
            context = SessionContext.from_kwargs(session, **kwargs)
        self._context = context
        for slot in list(self._slots):
            hook = slot.profile.hooks["initialize"]
            started = time.perf_counter()
            try:
                self._run_with_deadline(
                    functools.partial(hook.call, context.session_id, context=context, **kwargs),
                    self.settings.init_deadline_s,
                )
            except Exception as exc:
                log.warning("provider %r dropped: initialize failed: %r", slot.name, exc)
                slot.health.error("initialize", exc, time.perf_counter() - started)
                self._remove(slot)
                continue
            slot.health.ok("initialize", time.perf_counter() - started)
            slot.initialized = True
        run = functools.partial(self._run_with_deadline, deadline=self.settings.init_deadline_s)
        self._caps.freeze(self._slots, run)
        with self._lock:
            self._tools = None

    def _remove(self, slot: ProviderSlot) -> None:
        with self._lock:
            if slot in self._slots:
                self._slots.remove(slot)
            self._tools = None
        slot.queue.close()
        slot.lane.stop()

    # ------------------------------------------------------------------ blocking fan-out
    def _fan_out(
        self,
        hook: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        deadline: float,
        *,
        use_breaker: bool = False,
    ) -> list[tuple[ProviderSlot, Any]]:
        """Call ``hook`` on every provider that overrides it, in parallel, within ``deadline``.

        Returns ``(slot, result)`` for the calls that finished in time without raising.
        """
        started = time.monotonic()
        pending: dict[Future[Any], ProviderSlot] = {}
        for slot in list(self._slots):
            bound = slot.profile.hooks[hook]
            if not bound.overridden:
                continue
            if use_breaker and not slot.health.breaker.allow(started):
                slot.health.skip(hook)
                continue
            if self._lane_stuck(slot, started):
                slot.health.skip(hook)
                slot.record_miss(hook, "still busy with an earlier call")
                continue
            call = self._warming_prefetch(slot, kwargs) if hook == "prefetch" else bound.call
            task = functools.partial(timed, self._get_loop, call, *args, **kwargs)
            pending[slot.lane.submit(task)] = slot
        if not pending:
            return []
        done, _ = wait_futures(pending, timeout=deadline)
        elapsed = time.monotonic() - started
        results: list[tuple[ProviderSlot, Any]] = []
        for future, slot in pending.items():
            if future not in done:
                slot.health.timeout(hook)
                slot.record_miss(hook, f"missed the {deadline:g}s deadline")
                continue
            exc = future.exception()
            if exc is not None:
                slot.health.error(hook, exc, elapsed)
                log.warning("provider %r: %s raised %r", slot.name, hook, exc)
                continue
            value, seconds = future.result()
            slot.health.ok(hook, seconds)
            slot.record_success()
            results.append((slot, value))
        return results

    def _lane_stuck(self, slot: ProviderSlot, now: float) -> bool:
        return slot.stuck_before(self._turn_marks.get(slot.name, now))

    def build_system_prompt(self) -> str:
        """Join the providers' non-empty ``system_prompt_block()`` texts with a blank line."""
        results = self._fan_out("system_prompt_block", (), {}, self.settings.prefetch_deadline_s)
        pairs = context_pairs("system_prompt_block", results)
        return "\n\n".join(text.strip() for _, text in pairs)

    def _warming_prefetch(self, slot: ProviderSlot, kwargs: dict[str, Any]) -> Callable[..., Any]:
        """The prefetch call for ``slot``; on a cold session it warms the provider first.

        Providers that serve ``prefetch`` from a cache filled by ``queue_prefetch`` have
        nothing on the first turn of a session (context lags a turn). When no
        ``queue_prefetch`` was queued for this session, the manager runs it synchronously
        on the provider's lane just before ``prefetch``, inside the same deadline.
        """
        prefetch = slot.profile.hooks["prefetch"]
        warm = slot.profile.hooks["queue_prefetch"]
        session_id = kwargs.get("session_id", "")
        if not warm.overridden or self._queued_for.get(slot.name) == session_id:
            return prefetch.call
        get_loop = self._get_loop

        def warm_then_prefetch(query: str, **call_kwargs: Any) -> Any:
            resolve(warm.call(query, **call_kwargs), get_loop)
            return prefetch.call(query, **call_kwargs)

        return warm_then_prefetch

    def prefetch_all(
        self,
        query: str,
        *,
        session_id: str = "",
        context: SessionContext | None = None,
        history: Callable[[], Sequence[Message]] | None = None,
    ) -> list[ContextPair]:
        """Recall context for this turn: ``[(provider name, text), ...]`` in registration order.

        Returns within the prefetch deadline (plus scheduling noise) whatever providers do.
        A provider whose background prefetch was not queued for this session is warmed
        synchronously first (see ``_warming_prefetch``), so the first turn is not empty.
        ``history`` reads the session's messages for seed-01 ``enrich_turn`` providers only.
        """
        ctx = self._ctx(context, session_id)
        kwargs = {"session_id": ctx.session_id, "context": ctx, "history": history}
        try:
            results = self._fan_out(
                "prefetch", (query,), kwargs, self.settings.prefetch_deadline_s, use_breaker=True
            )
        finally:
            self._turn_marks = {}
        return context_pairs("prefetch", results)

    def on_pre_compress(self, messages: Sequence[Message]) -> list[ContextPair]:
        """Blocking: every provider's contribution for the compression summary."""
        snapshot = [dict(m) for m in messages]
        self._compressions += 1
        results = self._fan_out(
            "on_pre_compress",
            (snapshot,),
            {"context": self._context, "compression_count": self._compressions},
            self.settings.pre_compress_deadline_s,
        )
        return context_pairs("on_pre_compress", results)

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """Tell providers a user turn starts (queued on each provider's lane, before prefetch)."""
        kwargs.setdefault("context", self._context)
        now = time.monotonic()
        for slot in list(self._slots):
            self._turn_marks[slot.name] = now
            bound = slot.profile.hooks["on_turn_start"]
            if not bound.overridden or not slot.health.breaker.allow(now):
                continue
            if self._lane_stuck(slot, now):
                slot.health.skip("on_turn_start")
                continue
            future = slot.lane.submit(functools.partial(bound.call, turn_number, message, **kwargs))
            future.add_done_callback(slot.lane_callback("on_turn_start", time.perf_counter()))

    # ------------------------------------------------------------------ fire and forget
    def _enqueue(
        self, hook: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, skip: Any = None
    ) -> None:
        for slot in self._slots:
            if slot.provider is skip:
                continue
            bound = slot.profile.hooks[hook]
            if bound.overridden:
                slot.queue.put(hook, functools.partial(bound.call, *args, **kwargs))

    def sync_all(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        context: SessionContext | None = None,
        **kwargs: Any,
    ) -> None:
        """Queue a completed turn for every provider; returns at once."""
        if "messages" in kwargs and kwargs["messages"] is not None:
            kwargs["messages"] = [dict(m) for m in kwargs["messages"]]
        ctx = self._ctx(context, session_id)
        kwargs.update(session_id=ctx.session_id, context=ctx)
        self._enqueue("sync_turn", (user_content, assistant_content), kwargs)

    def queue_prefetch_all(
        self, query: str, *, session_id: str = "", context: SessionContext | None = None
    ) -> None:
        """Queue a background prefetch for the next turn; returns at once."""
        ctx = self._ctx(context, session_id)
        for slot in self._slots:
            self._queued_for[slot.name] = ctx.session_id
        self._enqueue("queue_prefetch", (query,), {"session_id": ctx.session_id, "context": ctx})

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        *,
        origin: Any = None,
    ) -> None:
        """Mirror a curated-memory write to every provider except ``origin``; returns at once."""
        self._enqueue(
            "on_memory_write",
            (action, target, content, dict(metadata or {})),
            {"context": self._context},
            skip=origin,
        )

    def _mirror_write(
        self, origin: Any, action: str, target: str, content: str, metadata: dict[str, Any]
    ) -> None:
        self.on_memory_write(action, target, content, metadata, origin=origin)

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        """Tell providers a subagent finished; returns at once."""
        kwargs.update(child_session_id=child_session_id, context=self._context)
        self._enqueue("on_delegation", (task, result), kwargs)

    def on_session_end(self, messages: Sequence[Message]) -> None:
        """Queue the session-end commit (ordered after pending syncs); returns at once."""
        self._enqueue("on_session_end", ([dict(m) for m in messages],), {"context": self._context})

    def on_session_switch(
        self,
        new_session: str | SessionContext,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        reason: str = "",
        **kwargs: Any,
    ) -> None:
        """Make ``new_session`` current and queue the switch for every provider.

        ``new_session`` is the new ``SessionContext`` (``Memory`` passes it; its
        ``parent_session_id`` wins) or a session id (the current context, switched). An
        empty or ``None`` id is ignored (logged): nothing is delivered and the current
        session is kept.
        """
        if isinstance(new_session, SessionContext):
            ctx = new_session
        elif isinstance(new_session, str) and new_session.strip():
            ctx = self._context.switched(new_session, parent_session_id)
        else:
            ctx = SessionContext()
        if not ctx.session_id.strip():
            log.warning("ignored on_session_switch to an empty session id %r", new_session)
            return
        self._context = ctx
        kwargs.update(
            parent_session_id=ctx.parent_session_id, reset=reset, reason=reason, context=ctx
        )
        self._enqueue("on_session_switch", (ctx.session_id,), kwargs)

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every background queue is empty; returns how many items remain."""
        limit = self.settings.shutdown_deadline_s if timeout is None else timeout
        deadline = time.monotonic() + limit
        return sum(
            slot.queue.drain(max(0.0, deadline - time.monotonic())) for slot in list(self._slots)
        )

    # ------------------------------------------------------------------ tools
    @property
    def reserved_tool_names(self) -> frozenset[str]:
        """Tool names no external provider may register (core names plus reserved ones)."""
        return self._reserved_tools

    @property
    def suppressed_targets(self) -> frozenset[str]:
        """Curated targets whose local write a provider's ``capabilities()`` suppresses."""
        return self._caps.suppressed_targets

    def reserve_tool_names(self, *names: str) -> None:
        """Reserve tool names the caller serves itself (e.g. an agent's ``delegate_task``).

        An external provider's tool with a reserved name is ignored (with a warning), so the
        model never sees two tools with one name. Raises ValueError, changing nothing, when
        a name is not a non-empty string.
        """
        extra = check_tool_names(names)
        with self._lock:
            if not extra <= self._reserved_tools:
                self._reserved_tools = self._reserved_tools | extra
                self._tools = None

    def _tool_table(self) -> dict[str, ProviderSlot]:
        with self._lock:
            if self._tools is None:
                entries = [(s, s.name, s.builtin, self._load_schemas(s)) for s in self._slots]
                self._tools, self._schemas = build_tool_table(entries, self._reserved_tools)
            return self._tools

    def _load_schemas(self, slot: ProviderSlot) -> list[ToolSchema]:
        try:
            raw = self._run_with_deadline(
                slot.profile.hooks["get_tool_schemas"].call, self.settings.init_deadline_s
            )
        except Exception as exc:
            slot.health.error("get_tool_schemas", exc, 0.0)
            log.warning("provider %r: get_tool_schemas failed: %r", slot.name, exc)
            return []
        return self._caps.get(slot.name).offered(normalize_schemas(raw, slot.name))

    def get_all_tool_schemas(self) -> list[ToolSchema]:
        """Every provider's tool schemas, registration order, duplicate names skipped."""
        self._tool_table()
        return [dict(schema) for schema in self._schemas]

    def has_tool(self, name: str) -> bool:
        """True when some provider handles the tool ``name``."""
        return name in self._tool_table()

    def handle_tool_call(self, tool_name: str, args: Any, **kwargs: Any) -> str:
        """Route a tool call to its provider; always returns a JSON string, never raises."""
        slot = self._tool_table().get(tool_name)
        if slot is None:
            return error_json(f"No memory provider handles tool '{tool_name}'", "ToolNotFound")
        parsed = parse_tool_args(tool_name, args)
        if isinstance(parsed, str):
            return parsed
        kwargs["context"] = self._ctx(kwargs.get("context"), kwargs.get("session_id") or "")
        bound = slot.profile.hooks["handle_tool_call"]
        started = time.perf_counter()
        future = slot.lane.submit(functools.partial(bound.call, tool_name, parsed, **kwargs))
        try:
            result = future.result(timeout=self.settings.tool_deadline_s)
        except TimeoutError:
            slot.health.timeout("handle_tool_call")
            return error_json(
                f"Memory tool '{tool_name}' timed out after {self.settings.tool_deadline_s:g}s",
                "TimeoutError",
            )
        except Exception as exc:
            slot.health.error("handle_tool_call", exc, time.perf_counter() - started)
            return error_json(f"Memory tool '{tool_name}' failed: {exc}", type(exc).__name__)
        slot.health.ok("handle_tool_call", time.perf_counter() - started)
        return result_to_json(tool_name, result)

    # ------------------------------------------------------------------ health & shutdown
    def health(self) -> dict[str, dict[str, Any]]:
        """Per provider: per-hook calls/errors/timeouts/skipped/p50/p95, breaker, queue."""
        report: dict[str, dict[str, Any]] = {}
        for slot in list(self._slots):
            view = slot.health.snapshot()
            view["builtin"] = slot.builtin
            view["queue"] = {"pending": slot.queue.pending, "dropped": slot.queue.dropped}
            report[slot.name] = view
        return report

    def shutdown_all(self) -> dict[str, Any]:
        """Drain every queue, then ``shutdown()`` providers in reverse order. Idempotent.

        Returns ``{"abandoned": {provider: items not delivered}, "timed_out": [names]}``.
        """
        with self._lock:
            if self._shutdown:
                return {"abandoned": {}, "timed_out": [], "already": True}
            self._shutdown = True
        report = shutdown_slots(
            self._slots, self.settings.shutdown_deadline_s, self._run_with_deadline
        )
        if self._loop is not None:
            self._loop.stop()
        return report
