"""Run a Hermes *general* plugin (``hermes_agent.plugins``) as a memory participant.

A general plugin's ``register(ctx)`` calls ``ctx.register_tool(...)`` and
``ctx.register_hook(name, callback)`` instead of registering a memory provider.
``HermesPluginContext`` records those calls; ``HermesPluginProvider`` is the one adapter
that turns what was recorded into a provider the manager runs like any other, so the
manager's deadlines, queues, circuit breaker and failure isolation apply unchanged:

====================  =====================================================================
Hermes                memoryport
====================  =====================================================================
registered tools      ``get_tool_schemas`` / ``handle_tool_call`` (async handlers awaited)
``pre_llm_call``      ``prefetch``: the ``context`` it returns goes into the
                      ``<memory-context>`` fence of the current user message
``post_llm_call``     ``sync_turn``, on the provider's background queue after the turn
``on_session_start``  ``initialize`` and ``on_session_switch`` (new session id)
``on_session_reset``  ``on_session_switch(reset=True)``
``on_session_end``    ``on_session_end``
====================  =====================================================================

Other hooks (``pre_tool_call``, ``transform_llm_output`` ...) are recorded and reported,
never fired: memoryport does not run the agent's model or its non-memory tools. Any other
``ctx`` call a plugin makes is accepted, recorded and answered with ``None``.

Every call into the plugin runs on one ``PluginRunner`` thread that owns one persistent
asyncio event loop: SDK clients bind their HTTP sessions to the loop they first ran on
(``hindsight-client`` does), so the sync hooks and the async tool handlers must share
one loop, as they do inside Hermes. The manager's deadlines are enforced above it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from memoryport.config import profile_name
from memoryport.config.secrets import looks_secret
from memoryport.errors import PluginError, tool_error_json
from memoryport.plugins.ctx_tools import RegisteredTool
from memoryport.plugins.manifest import PluginManifest
from memoryport.provider import MemoryProvider
from memoryport.types import Message, ToolSchema

__all__ = [
    "FIRED_HOOKS",
    "HermesPluginContext",
    "HermesPluginProvider",
    "PluginRunner",
    "guard_plugin_logs",
    "redact_secrets",
]

logger = logging.getLogger(__name__)

FIRED_HOOKS = frozenset(
    {"pre_llm_call", "post_llm_call", "on_session_start", "on_session_end", "on_session_reset"}
)
"""Hermes hooks memoryport fires (see the module docstring for where)."""

_Job = tuple[Callable[[], Any], Future[Any]]


class PluginRunner:
    """One daemon thread with one persistent event loop; runs a plugin's calls in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on the runner (awaiting an awaitable result) and
        wait at most ``timeout`` seconds; ``TimeoutError`` when it takes longer."""
        future: Future[Any] = Future()
        with self._lock:
            if self._stopped:
                raise PluginError(f"plugin {self.name!r} has been shut down", plugin=self.name)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"mp-plugin-{self.name}", daemon=True
                )
                self._thread.start()
        self._jobs.put((lambda: fn(*args, **kwargs), future))
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()  # not started yet (queued behind a stuck call): never run it
            raise

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(self._loop_exception)
        asyncio.set_event_loop(loop)
        try:
            while (job := self._jobs.get()) is not None:
                fn, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    result = fn()
                    if inspect.isawaitable(result):
                        result = loop.run_until_complete(_awaited(result))
                    future.set_result(result)
                except BaseException as exc:
                    future.set_exception(exc)
        finally:
            loop.close()

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Plugins rarely close their HTTP sessions (there is no shutdown hook for general
        plugins): "Unclosed ..." reports go to the debug log, named; the rest as usual."""
        message = str(context.get("message", ""))
        if message.startswith("Unclosed"):
            logger.debug("plugin %r left a resource open at exit: %s", self.name, message)
            return
        loop.default_exception_handler(context)

    @property
    def stopped(self) -> bool:
        """True after ``stop()``: no further calls are accepted."""
        with self._lock:
            return self._stopped

    def stop(self) -> None:
        """Let the thread finish the calls already queued, then end."""
        with self._lock:
            self._stopped = True
            if self._thread is not None:
                self._jobs.put(None)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


class HermesPluginContext:
    """The ``ctx`` a general plugin's ``register(ctx)`` receives.

    Records ``register_tool`` and ``register_hook``; ``register_memory_provider`` and every
    other call (``register_command``, ``register_cli_command``, ``inject_message`` ...) are
    recorded in ``ignored`` and return ``None``, so an unknown call never fails a plugin.
    """

    def __init__(
        self, home: Path, manifest: PluginManifest, settings: dict[str, Any] | None = None
    ) -> None:
        self.home = home
        self.settings: dict[str, Any] = dict(settings or {})
        self.hermes_home = str(home)
        self.manifest = manifest
        self.profile_name = profile_name(home)
        self.tools: list[RegisteredTool] = []
        self.hooks: dict[str, list[Callable[..., Any]]] = {}
        self.ignored: list[str] = []

    @property
    def plugin_id(self) -> str:
        """The plugin's name (Hermes' registry key)."""
        return self.manifest.name

    def register_tool(self, *args: Any, **kwargs: Any) -> None:
        """Record a tool (Hermes' signature: name, toolset, schema, handler, check_fn, ...)."""
        self.tools.append(RegisteredTool.from_call(*args, **kwargs))

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Record a lifecycle callback; hooks memoryport never fires are reported later."""
        if not callable(callback):
            raise TypeError(f"register_hook({hook_name!r}): callback is not callable")
        self.hooks.setdefault(str(hook_name), []).append(callback)

    def has_plugin(self, plugin_id: str) -> bool:
        """Hermes' probe for another loaded plugin; memoryport answers for itself only."""
        return plugin_id == self.manifest.name

    def get_config(self, key: str, default: Any = None) -> Any:
        """Hermes' per-plugin settings lookup: ``plugins.entries.<name>.settings.<key>`` in
        ``config.yaml`` (a dotted ``key`` walks nested mappings), else ``default``."""
        value: Any = self.settings
        for part in str(key).split("."):
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("_"):
            raise AttributeError(name)

        def ignored(*args: Any, **kwargs: Any) -> None:
            self.ignored.append(name)

        return ignored


class HermesPluginProvider(MemoryProvider):
    """A general Hermes plugin's tools and hooks, as one memoryport provider."""

    def __init__(
        self, plugin: str, ctx: HermesPluginContext, runner: PluginRunner, timeout_s: float
    ) -> None:
        self._name = plugin
        self._tools = {tool.name: tool for tool in ctx.tools}
        self._hooks = {name: list(callbacks) for name, callbacks in ctx.hooks.items()}
        self._runner = runner
        self._timeout = timeout_s
        self._session_id = ""
        self._platform = ""
        self._user_id = ""
        self._prefetched: set[str] = set()

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """The plugin's name."""
        return self._name

    @property
    def tool_names(self) -> list[str]:
        """Every tool the plugin registered (available or not)."""
        return list(self._tools)

    @property
    def hook_names(self) -> list[str]:
        """Every hook the plugin registered a callback for."""
        return sorted(self._hooks)

    @property
    def inactive_hooks(self) -> list[str]:
        """Registered hooks memoryport never fires."""
        return sorted(set(self._hooks) - FIRED_HOOKS)

    def is_available(self) -> bool:
        """True when ``register(ctx)`` registered a tool or a hook memoryport fires."""
        return bool(self._tools or set(self._hooks) & FIRED_HOOKS)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Remember the session; fire ``on_session_start``."""
        self._session_id = session_id
        self._platform = str(kwargs.get("platform") or "")
        self._user_id = str(kwargs.get("user_id") or "")
        self._fire("on_session_start", session_id=session_id, model="", platform=self._platform)

    # ------------------------------------------------------------------ tools
    def get_tool_schemas(self) -> list[ToolSchema]:
        """The schemas of the registered tools whose ``check_fn``/``requires_env`` pass."""
        return [dict(tool.schema) for tool in self._tools.values() if tool.available()]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run the tool's handler on the plugin's runner (awaited when async)."""
        tool = self._tools.get(tool_name)
        if tool is None:
            return tool_error_json(
                f"plugin {self._name!r} has no tool {tool_name!r}", "ToolNotFound"
            )
        if self._runner.stopped:
            return tool_error_json(f"plugin {self._name!r} has been shut down", "PluginError")
        kwargs.pop("context", None)
        kwargs.setdefault("task_id", self._session_id)
        result = self._runner.call(tool.invoke, args, timeout=self._timeout, **kwargs)
        return self._tool_result(tool_name, result)

    def _tool_result(self, tool_name: str, result: Any) -> str:
        text = redact_secrets(
            result if isinstance(result, str) else json.dumps(result, default=str)
        )
        try:
            parsed = json.loads(text)
        except ValueError:
            return text
        if isinstance(parsed, dict) and "error" in parsed and "success" not in parsed:
            extra = {k: v for k, v in parsed.items() if k != "error"}
            message = f"{self._name}: {tool_name} failed: {parsed['error']}"
            return tool_error_json(message, "PluginToolError", plugin=self._name, **extra)
        return text

    # ------------------------------------------------------------------ turn hooks
    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Fire ``pre_llm_call``; the ``context`` the callbacks return, joined."""
        sid = session_id or self._session_id
        first = sid not in self._prefetched  # per session: switches run on another thread
        self._prefetched.add(sid)
        results = self._fire(
            "pre_llm_call",
            session_id=sid,
            user_message=query,
            conversation_history=[],
            is_first_turn=first,
            model="",
            platform=self._platform,
            sender_id=self._user_id,
        )
        return "\n\n".join(text for text in map(_context_text, results) if text)

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        **kwargs: Any,
    ) -> None:
        """Fire ``post_llm_call`` with the completed exchange."""
        messages = kwargs.get("messages")
        self._fire(
            "post_llm_call",
            session_id=session_id or self._session_id,
            user_message=user_content,
            assistant_response=assistant_content,
            conversation_history=list(messages) if isinstance(messages, list) else [],
            model="",
            platform=self._platform,
        )

    def on_session_end(self, messages: list[Message]) -> None:
        """Fire ``on_session_end`` (a completed, not interrupted, session)."""
        self._fire(
            "on_session_end",
            session_id=self._session_id,
            completed=True,
            interrupted=False,
            model="",
            platform=self._platform,
        )

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        reason: str = "",
        **kwargs: Any,
    ) -> None:
        """Fire ``on_session_reset`` (on a reset), then ``on_session_start`` for the new id."""
        if reset:
            self._fire("on_session_reset", session_id=self._session_id, platform=self._platform)
        self._session_id = new_session_id
        self._fire("on_session_start", session_id=new_session_id, model="", platform=self._platform)

    def shutdown(self) -> None:
        """Stop the plugin's runner after the calls already queued."""
        self._runner.stop()

    # ------------------------------------------------------------------ dispatch
    def _fire(self, hook: str, **kwargs: Any) -> list[Any]:
        """Call every callback of ``hook`` on the runner, each isolated as in Hermes.

        A failing callback is logged and skipped; when every callback failed, the last
        error is raised so the manager records it against this provider.
        """
        results: list[Any] = []
        error: BaseException | None = None
        if self._runner.stopped:  # after shutdown every hook is a no-op
            return results
        for callback in self._hooks.get(hook, ()):
            try:
                results.append(
                    self._runner.call(_call_hook, callback, kwargs, timeout=self._timeout)
                )
            except Exception as exc:
                why = redact_secrets(repr(exc))
                logger.warning("plugin %r: %s callback raised %s", self._name, hook, why)
                error = exc
        if error is not None and not results:
            raise PluginError(
                f"{self._name}: every {hook} callback failed; last: "
                + redact_secrets(f"{type(error).__name__}: {error}"),
                plugin=self._name,
            ) from None
        return results


def redact_secrets(text: str) -> str:
    """``text`` with the value of every environment variable named like a secret
    (``*_API_KEY``, ``*_TOKEN``, ``*_PASSWORD`` ...; 6 characters or more) replaced by
    ``***``: plugins put backend errors, which may echo credentials, in their results."""
    for key, value in os.environ.items():
        if len(value) >= 6 and looks_secret(key) and value in text:
            text = text.replace(value, "***")
    return text


class _RedactSecrets(logging.Filter):
    """Rewrites a plugin's log records with ``redact_secrets`` (message and traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_secrets(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info:
            record.exc_text = redact_secrets(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


_REDACT = _RedactSecrets()


def guard_plugin_logs(package: str) -> None:
    """Add the secret-redacting filter to every logger of ``package`` that exists now
    (plugins create theirs at import: ``logging.getLogger(__name__)``)."""
    for name, item in list(logging.Logger.manager.loggerDict.items()):
        ours = name == package or name.startswith(package + ".")
        if ours and isinstance(item, logging.Logger) and _REDACT not in item.filters:
            item.addFilter(_REDACT)


def _call_hook(callback: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call a Hermes hook callback with the keywords it accepts (Hermes passes ``**kwargs``)."""
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return callback(**kwargs)
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        names = {p.name for p in params}
        kwargs = {k: v for k, v in kwargs.items() if k in names}
    return callback(**kwargs)


def _context_text(result: Any) -> str:
    """The text a ``pre_llm_call`` callback contributes: ``{"context": ...}`` or a string."""
    if isinstance(result, dict):
        result = result.get("context")
    return result.strip() if isinstance(result, str) else ""
