"""``Mem0Provider``: Mem0 memory, on the platform (API key) or the open-source library.

Reads: ``prefetch`` searches the memories in ``search_scope`` (``filters``: the user, the
user and this agent, or this session) and renders them within ``recall_chars``; tools
``mem0_profile`` (everything known about the user), ``mem0_search`` and ``mem0_conclude``
(store one fact as given). Writes: ``sync_turn`` adds the turn (user and assistant
messages) scoped to the user, the agent and the session (``run_id``), with ``infer`` as
configured; curated writes are mirrored as facts. Writes are recorded in a durable outbox
(``<home>/mem0-outbox.db``) first and sent on the manager's background queue, retried with
backoff, never lost across an outage or a restart; subagent, cron and flush contexts never
write.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.errors import ConfigError, ProviderError, tool_error, tool_error_json
from memoryport.provider import MemoryProvider
from memoryport.providers.mem0.backend import Backend, open_backend
from memoryport.providers.mem0.settings import CONFIG_SCHEMA, Settings
from memoryport.storage.outbox import Outbox
from memoryport.types import SessionContext, ToolSchema

__all__ = ["CONCLUDE_SCHEMA", "OUTBOX_NAME", "PROFILE_SCHEMA", "SEARCH_SCHEMA", "Mem0Provider"]

log = logging.getLogger("memoryport.providers.mem0")

PROFILE_SCHEMA: ToolSchema = {
    "name": "mem0_profile",
    "description": "Everything Mem0 remembers about the user (their stored memories).",
    "parameters": {"type": "object", "properties": {}, "required": []},
}

SEARCH_SCHEMA: ToolSchema = {
    "name": "mem0_search",
    "description": "Search the user's long-term memories in Mem0 by meaning.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "What to look for"},
        "top_k": {"type": "integer", "description": "Most results (default 5, max 50)",
                  "minimum": 1, "maximum": 50},
    }, "required": ["query"]},
}

CONCLUDE_SCHEMA: ToolSchema = {
    "name": "mem0_conclude",
    "description": "Store one durable fact or conclusion about the user in Mem0, verbatim"
                   " (no extraction), e.g. 'Prefers concise answers'.",
    "parameters": {"type": "object", "properties": {
        "conclusion": {"type": "string", "description": "The fact, in one sentence"},
    }, "required": ["conclusion"]},
}

_TOOLS = ("mem0_profile", "mem0_search", "mem0_conclude")
_SHUTDOWN_FLUSH_S = 5.0

OUTBOX_NAME = "mem0-outbox.db"
"""Undelivered writes, under the home."""


class Mem0Provider(MemoryProvider):
    """Mem0 (``memory.provider: mem0``)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._context = SessionContext()
        self._backend: Backend | None = None
        self._outbox: Outbox | None = None

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """Always ``"mem0"``."""
        return "mem0"

    def is_available(self) -> bool:
        """True when ``mem0ai`` is installed and the chosen backend has its keys (no
        network, no import of mem0 itself)."""
        import importlib.util

        return importlib.util.find_spec("mem0") is not None and not self.settings.missing()

    def get_config_schema(self) -> list[ConfigField]:
        """Backend, keys, recall mode and budget, scoping, infer, OSS embedder/LLM."""
        return [f.copy() for f in CONFIG_SCHEMA]

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read the settings and open the backend (the platform checks the key; the OSS
        ``Memory`` opens ``<home>/mem0``). Raising drops the provider with the reason."""
        context = SessionContext.from_kwargs(session_id, **kwargs)
        if context.home is None:
            raise ConfigError("mem0 needs the home directory (initialize's home kwarg)")
        settings = Settings.load(context.home)
        problem = settings.missing()
        if problem:
            raise ConfigError(f"mem0: {problem}; run: memoryport setup mem0")
        self.shutdown()
        self.settings, self._context = settings, context
        self._backend = open_backend(settings, context.home)
        self._outbox = Outbox(context.home / OUTBOX_NAME, base_s=settings.retry_base_s,
                              max_s=settings.retry_max_s)
        log.info("mem0 provider ready (%s)", "platform" if settings.platform else "oss")

    def get_tool_schemas(self) -> list[ToolSchema]:
        """``mem0_profile``, ``mem0_search``, ``mem0_conclude`` (none in ``context`` mode)."""
        return [PROFILE_SCHEMA, SEARCH_SCHEMA, CONCLUDE_SCHEMA] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line on what Mem0 holds and how to reach it."""
        if self._backend is None:
            return ""
        text = "## Mem0 memory\nLong-term memories about the user are kept in Mem0."
        if self.settings.tools:
            text += (" Use mem0_search to look something up, mem0_profile for everything"
                     " known, mem0_conclude to store a durable fact.")
        return text

    # ------------------------------------------------------------------ scoping
    def _ctx(self, context: SessionContext | None) -> SessionContext:
        return context if context is not None else self._context

    def ids(self, context: SessionContext | None = None) -> dict[str, str]:
        """The Mem0 identities of a write: ``user_id``, ``agent_id`` and ``run_id``."""
        ctx = self._ctx(context)
        ids = {"user_id": self.settings.user_id or ctx.user_id or "memoryport-user",
               "agent_id": self.settings.agent_id or ctx.agent_identity or "memoryport"}
        if ctx.session_id:
            ids["run_id"] = ctx.session_id
        return ids

    def filters(self, context: SessionContext | None = None) -> dict[str, str]:
        """The ``filters`` of a read, per ``search_scope``."""
        ids = self.ids(context)
        scope = self.settings.search_scope
        if scope == "session" and "run_id" in ids:
            return {"run_id": ids["run_id"]}
        if scope == "agent":
            return {"user_id": ids["user_id"], "agent_id": ids["agent_id"]}
        return {"user_id": ids["user_id"]}

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        backend = self._backend
        if backend is None:
            raise ProviderError("mem0 is not initialized (or was shut down)", provider="mem0")
        try:
            return fn(backend, *args, **kwargs)
        except ProviderError:
            raise
        except Exception as exc:  # SDK errors: name the backend, never the key
            raise ProviderError(f"mem0 {what} at {backend.where} failed:"
                                f" {type(exc).__name__}: {_short(exc)}", provider="mem0"
                                ) from None

    # ------------------------------------------------------------------ recall
    def _render(self, rows: list[dict[str, Any]]) -> str:
        lines: list[str] = []
        used = 0
        for row in rows:
            line = f"- {row['memory'].strip()}"
            if used + len(line) > self.settings.recall_chars:
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)

    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None, **kwargs: Any) -> str:
        """The memories matching ``query`` in scope ("" in ``tools`` mode)."""
        if self._backend is None or not self.settings.inject or not query.strip():
            return ""
        rows = self._call("search", Backend.search, query, self.filters(context),
                          self.settings.top_k)
        return self._render(rows)

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], *,
                         context: SessionContext | None = None, **kwargs: Any) -> str:
        """Run a mem0 tool; failures in the one tool-error shape."""
        if tool_name not in _TOOLS or not self.settings.tools:
            return tool_error_json(f"mem0 has no tool {tool_name!r}", "ToolNotFound")
        if self._backend is None:
            return tool_error_json("mem0 is not initialized (or was shut down)",
                                   "ToolUnavailable")
        if not isinstance(args, dict):
            return tool_error_json("arguments must be a JSON object", "ToolArgumentError")
        ctx = context if isinstance(context, SessionContext) else None
        try:
            result = self._run_tool(tool_name, args, ctx)
        except ProviderError as exc:
            result = exc.to_dict()
        return json.dumps(result, ensure_ascii=False, default=str)

    def _run_tool(self, tool: str, args: dict[str, Any],
                  ctx: SessionContext | None) -> dict[str, Any]:
        if tool == "mem0_profile":
            rows = self._call("get_all", Backend.get_all, self.filters(ctx), 100)
            return {"success": True, "memories": [r["memory"] for r in rows],
                    "count": len(rows)}
        if tool == "mem0_search":
            query, top_k = args.get("query"), args.get("top_k", self.settings.top_k)
            if not isinstance(query, str) or not query.strip():
                return tool_error("query must be a non-empty string", "ToolArgumentError")
            if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 50:
                return tool_error(f"top_k must be an integer from 1 to 50, got {top_k!r}",
                                  "ToolArgumentError")
            rows = self._call("search", Backend.search, query, self.filters(ctx), top_k)
            results = [{"memory": r["memory"], "score": r.get("score")} for r in rows]
            return {"success": True, "results": results, "count": len(results)}
        conclusion = args.get("conclusion")
        if not isinstance(conclusion, str) or not conclusion.strip():
            return tool_error("conclusion must be a non-empty string", "ToolArgumentError")
        self._queue([{"role": "user", "content": conclusion.strip()}], self.ids(ctx),
                    infer=False, metadata={"source": "mem0_conclude"})
        try:
            self._flush(force=True)
        except ProviderError as exc:
            return {"success": True, "stored": conclusion.strip(), "status": "queued",
                    "note": f"kept locally; delivery will be retried ({exc})"}
        return {"success": True, "stored": conclusion.strip()}

    # ------------------------------------------------------------------ writes
    def _writes_allowed(self, context: SessionContext | None) -> bool:
        return self._backend is not None and self._ctx(context).agent_context in ("primary", "")

    def _queue(self, messages: list[dict[str, str]], ids: dict[str, str], *, infer: bool,
               metadata: dict[str, Any]) -> None:
        outbox = self._outbox
        if outbox is not None:
            outbox.put("add", {"messages": messages, "ids": ids, "infer": infer,
                               "metadata": metadata})

    def _send(self, kind: str, body: dict[str, Any]) -> None:
        self._call("add", Backend.add, body["messages"], body["ids"], infer=body["infer"],
                   metadata=body["metadata"])

    def _flush(self, *, force: bool = False, budget_s: float | None = None) -> int:
        outbox = self._outbox
        if outbox is None or self._backend is None:
            return 0
        return outbox.flush(self._send, force=force, budget_s=budget_s)

    def pending_writes(self) -> int:
        """Writes recorded in the outbox and not yet delivered."""
        outbox = self._outbox
        return outbox.pending() if outbox is not None else 0

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Add the turn, scoped to the user, agent and session (``infer`` as configured)."""
        if not self._writes_allowed(context):
            return
        messages = [{"role": role, "content": text} for role, text in
                    (("user", user_content), ("assistant", assistant_content))
                    if isinstance(text, str) and text.strip()]
        if messages:
            self._queue(messages, self.ids(context), infer=self.settings.infer,
                        metadata={"source": "turn"})
        self._flush()

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Mirror a curated add/replace as a fact (stored as written)."""
        if self._writes_allowed(context) and action in ("add", "replace") and content.strip():
            self._queue([{"role": "user", "content": content.strip()}], self.ids(context),
                        infer=False, metadata={"source": "curated", "target": target})
            self._flush()

    def shutdown(self) -> None:
        """Try once more to deliver queued writes (a few seconds at most; the rest stays
        on disk for the next run), then close the backend (idempotent)."""
        outbox = self._outbox
        if outbox is not None and self._backend is not None:
            try:
                self._flush(force=True, budget_s=_SHUTDOWN_FLUSH_S)
            except ProviderError as exc:
                log.warning("mem0: %d writes kept for the next run (%s)", outbox.pending(), exc)
        self._outbox = None
        if outbox is not None:
            outbox.close()
        backend, self._backend = self._backend, None
        if backend is not None:
            try:
                backend.close()
            except Exception as exc:  # closing must never raise
                log.warning("mem0: closing failed: %s", type(exc).__name__)


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else ""
