"""``MentisDBProvider``: durable, hash-chained semantic memory in a MentisDB daemon.

Seed 02's provider written to memoryport's contract: no threads of its own (the manager's
queues run the background work), ``is_available`` reads configuration only, and writes go
through a durable outbox (``<home>/mentisdb-outbox.db``) that is retried with backoff, so
an outage or a restart of the daemon loses nothing.

Reads: ``prefetch`` searches with the turn's message; when the daemon fails it falls back
to the recall ``queue_prefetch`` warmed for the same session after the previous turn (the
warm cache is dropped at every session switch), and raises (``status`` shows the fault
with the URL) when there is none. Writes: ``sync_turn`` (both sides as ``Observation``
thoughts), ``on_memory_write`` (curated add/replace as ``LessonLearned``),
``on_pre_compress`` (user messages about to be discarded), ``on_session_end`` (a
``Summary``), ``on_delegation`` (the subagent's outcome). Non-primary contexts (subagents,
cron, flush) never write.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.errors import MemoryportError, ProviderError, tool_error, tool_error_json
from memoryport.provider import MemoryProvider
from memoryport.providers.mentisdb.client import MentisClient
from memoryport.providers.mentisdb.settings import CONFIG_SCHEMA, THOUGHT_TYPES, Settings
from memoryport.storage.outbox import Outbox
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["OUTBOX_NAME", "RECALL_SCHEMA", "STORE_SCHEMA", "MentisDBProvider"]

OUTBOX_NAME = "mentisdb-outbox.db"
"""Undelivered writes, under the home."""

log = logging.getLogger("memoryport.providers.mentisdb")

RECALL_SCHEMA: ToolSchema = {
    "name": "mentisdb_recall",
    "description": "Search your long-term memory (MentisDB) for relevant context. Use this"
                   " when you need to recall a past decision, fact, or lesson.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "What to search for"},
        "limit": {"type": "integer", "description": "Max results (default 8)",
                  "minimum": 1, "maximum": 50},
    }, "required": ["query"]},
}

STORE_SCHEMA: ToolSchema = {
    "name": "mentisdb_store",
    "description": "Persist a fact, lesson, or decision to long-term memory (MentisDB). Use"
                   " for things that should survive beyond this session.",
    "parameters": {"type": "object", "properties": {
        "content": {"type": "string", "description": "Content to store"},
        "thought_type": {"type": "string", "enum": list(THOUGHT_TYPES),
                         "description": "Memory category (default LessonLearned)"},
        "tags": {"type": "array", "items": {"type": "string"},
                 "description": "Optional tags for filtering"},
    }, "required": ["content"]},
}

_SHUTDOWN_FLUSH_S = 5.0
_FLUSH_KINDS = ("thought",)


class MentisDBProvider(MemoryProvider):
    """MentisDB over HTTP (``memory.provider: mentisdb``)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._context = SessionContext()
        self._chain_key = self.settings.chain_key or "memoryport"
        self._client: MentisClient | None = None
        self._outbox: Outbox | None = None
        self._warm: dict[str, str] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """Always ``"mentisdb"``."""
        return "mentisdb"

    def is_available(self) -> bool:
        """True when ``httpx`` is installed and a daemon URL is configured (no network:
        reachability shows in ``memoryport status``)."""
        try:
            import httpx  # noqa: F401
        except ImportError:
            return False
        return bool(self.settings.url)

    def get_config_schema(self) -> list[ConfigField]:
        """URL, chain key, optional API key, mode, recall budget, timeout, retry delays."""
        return [f.copy() for f in CONFIG_SCHEMA]

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read the settings, connect (lazily: no request is made) and open the outbox.

        ``ConfigError`` for invalid settings drops the provider with the reason."""
        context = SessionContext.from_kwargs(session_id, **kwargs)
        settings = Settings.load(context.home)
        self.shutdown()
        self.settings, self._context = settings, context
        self._chain_key = settings.chain_key or context.agent_identity or "memoryport"
        self._client = MentisClient(settings.url, settings.shown_url, settings.api_key,
                                    settings.timeout_s)
        path = context.home / OUTBOX_NAME if context.home is not None else None
        self._outbox = Outbox(path, base_s=settings.retry_base_s, max_s=settings.retry_max_s)
        log.info("mentisdb provider ready: %s chain=%s", settings.shown_url, self._chain_key)

    def get_tool_schemas(self) -> list[ToolSchema]:
        """``mentisdb_recall`` and ``mentisdb_store`` (none in ``context`` mode)."""
        return [RECALL_SCHEMA, STORE_SCHEMA] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """What the memory is and which tools reach it."""
        if self._client is None:
            return ""
        lines = ["## Long-term Memory (MentisDB)",
                 "Your memory is backed by MentisDB, a durable, hash-chained memory engine."]
        if self.settings.tools:
            lines.append("Use `mentisdb_recall` to search past sessions. Use `mentisdb_store`"
                         " for facts, decisions, and lessons that should persist.")
        if self.settings.inject:
            lines.append("Relevant context from past sessions is injected before each turn.")
        return "\n".join(lines)

    # ------------------------------------------------------------------ status
    def status(self) -> dict[str, Any]:
        """The daemon URL, chain key, pending writes and the daemon's ``/health`` answer
        (or the fault, naming the URL)."""
        data: dict[str, Any] = {"url": self.settings.shown_url, "chain_key": self._chain_key,
                                "pending_writes": self.pending_writes()}
        client = self._client
        if client is None:
            return {**data, "reachable": False, "error": "not initialized"}
        try:
            return {**data, "reachable": True, "health": client.health()}
        except ProviderError as exc:
            return {**data, "reachable": False, "error": str(exc)}

    def pending_writes(self) -> int:
        """Writes recorded in the outbox and not yet delivered."""
        outbox = self._outbox
        return outbox.pending() if outbox is not None else 0

    # ------------------------------------------------------------------ recall
    def _search(self, query: str, limit: int) -> list[dict[str, Any]]:
        client = self._client
        if client is None:
            return []
        return client.search(query, limit, self._chain_key)

    def _render(self, thoughts: list[dict[str, Any]]) -> str:
        out: list[str] = []
        used = 0
        for thought in thoughts:
            line = f"[{thought.get('thought_type') or 'Memory'}] {thought['content'].strip()}"
            if used + len(line) > self.settings.recall_chars:
                break
            out.append(line)
            used += len(line) + 2
        return "\n\n".join(out)

    def _session(self, context: SessionContext | None, session_id: str = "") -> str:
        return (context.session_id if context else "") or session_id or self._context.session_id

    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None, **kwargs: Any) -> str:
        """The thoughts matching ``query`` within ``recall_chars`` ("" in ``tools`` mode);
        on a daemon fault, the recall warmed for this session, else the fault is raised."""
        if self._client is None or not self.settings.inject or not query.strip():
            return ""
        key = self._session(context, session_id)
        try:
            text = self._render(self._search(query, self.settings.recall_limit))
        except ProviderError:
            with self._lock:
                warm = self._warm.get(key)
            if warm is None:
                raise
            log.warning("mentisdb unreachable; using the recall warmed after the last turn")
            return warm
        with self._lock:
            self._warm[key] = text
        return text

    def queue_prefetch(self, query: str, *, session_id: str = "",
                       context: SessionContext | None = None, **kwargs: Any) -> None:
        """Warm this session's fallback recall, and deliver queued writes that are due."""
        if self._client is None:
            return
        if self._writes_allowed(context):
            try:
                self._flush()
            except ProviderError as exc:  # sync_turn reports write faults; recall goes on
                log.info("mentisdb: writes still queued (%s)", exc)
        if not self.settings.inject or not query.strip():
            return
        text = self._render(self._search(query, self.settings.recall_limit))
        with self._lock:
            self._warm[self._session(context, session_id)] = text

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Drop every warmed recall (the next session starts cold)."""
        with self._lock:
            self._warm.clear()

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], *,
                         context: SessionContext | None = None, **kwargs: Any) -> str:
        """Run ``mentisdb_recall`` / ``mentisdb_store``; failures in the one tool-error shape."""
        if tool_name not in ("mentisdb_recall", "mentisdb_store") or not self.settings.tools:
            return tool_error_json(f"mentisdb has no tool {tool_name!r}", "ToolNotFound")
        if self._client is None:
            return tool_error_json("mentisdb is not initialized (or was shut down)",
                                   "ToolUnavailable")
        if not isinstance(args, dict):
            return tool_error_json("arguments must be a JSON object", "ToolArgumentError")
        try:
            if tool_name == "mentisdb_recall":
                return json.dumps(self._recall_tool(args), ensure_ascii=False)
            return json.dumps(self._store_tool(args, context), ensure_ascii=False)
        except MemoryportError as exc:
            return json.dumps(exc.to_dict(), ensure_ascii=False)

    def _recall_tool(self, args: dict[str, Any]) -> dict[str, Any]:
        query, limit = args.get("query"), args.get("limit", self.settings.recall_limit)
        if not isinstance(query, str) or not query.strip():
            return _bad("query must be a non-empty string, e.g. {\"query\": \"auth refactor\"}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
            return _bad(f"limit must be an integer from 1 to 50, got {limit!r}")
        thoughts = self._search(query, limit)
        results = [{"content": t["content"], "thought_type": t.get("thought_type", ""),
                    "tags": t.get("tags", [])} for t in thoughts]
        return {"success": True, "results": results, "count": len(results)}

    def _store_tool(self, args: dict[str, Any],
                    context: SessionContext | None) -> dict[str, Any]:
        content, kind = args.get("content"), args.get("thought_type", "LessonLearned")
        tags = args.get("tags", [])
        if not isinstance(content, str) or not content.strip():
            return _bad("content must be a non-empty string")
        if kind not in THOUGHT_TYPES:
            return _bad(f"thought_type {kind!r} is not one of {', '.join(THOUGHT_TYPES)}")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return _bad("tags must be a list of strings")
        self._append(content, kind, ["memoryport", *tags], context)
        try:
            self._flush(force=True)
        except ProviderError as exc:
            return {"success": True, "status": "queued", "pending": self.pending_writes(),
                    "note": f"stored locally; delivery will be retried ({exc})"}
        return {"success": True, "status": "stored"}

    # ------------------------------------------------------------------ writes
    def _ctx(self, context: SessionContext | None) -> SessionContext:
        return context if context is not None else self._context

    def _writes_allowed(self, context: SessionContext | None) -> bool:
        return self._outbox is not None and self._ctx(context).agent_context in ("primary", "")

    def _append(self, content: str, thought_type: str, tags: list[str],
                context: SessionContext | None = None) -> None:
        outbox = self._outbox
        if outbox is None or not content.strip():
            return
        user = self._ctx(context).user_id
        if user:
            tags = [*tags, f"user:{user}"]
        outbox.put("thought", {"content": content, "thought_type": thought_type,
                               "chain_key": self._chain_key, "tags": tags})

    def _send(self, kind: str, body: dict[str, Any]) -> None:
        client = self._client
        if client is None:
            raise ProviderError("mentisdb is shut down", provider="mentisdb")
        if kind in _FLUSH_KINDS:
            client.append(body)

    def _flush(self, *, force: bool = False, budget_s: float | None = None) -> int:
        outbox = self._outbox
        if outbox is None or self._client is None:
            return 0
        return outbox.flush(self._send, force=force, budget_s=budget_s)

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Record both sides as ``Observation`` thoughts and deliver what is due (a fault
        raises, so ``status`` shows it; the writes stay queued and are retried)."""
        if not self._writes_allowed(context):
            return
        session = self._session(context, session_id)
        for content, role in ((user_content, "user"), (assistant_content, "assistant")):
            if isinstance(content, str) and content:
                self._append(content, "Observation",
                             ["memoryport", f"role:{role}", f"session:{session}"], context)
        self._flush()

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Mirror a curated add/replace as a ``LessonLearned`` thought."""
        if self._writes_allowed(context) and action in ("add", "replace") and content:
            self._append(content, "LessonLearned", ["memoryport", f"memory-file:{target}"],
                         context)
            self._flush()

    def on_pre_compress(self, messages: list[Message], *,
                        context: SessionContext | None = None) -> str:
        """Keep the user messages about to be compressed away (``Observation``)."""
        if not self._writes_allowed(context) or not isinstance(messages, list):
            return ""
        for message in messages:
            text = message.get("content") if isinstance(message, dict) else None
            if message.get("role") == "user" and isinstance(text, str) and text.strip():
                self._append(text[:2000], "Observation", ["memoryport", "pre-compress"],
                             context)
        try:
            self._flush()
        except ProviderError as exc:  # kept in the outbox; compression goes on
            log.warning("mentisdb: pre-compress thoughts queued for a retry (%s)", exc)
        return ""

    def on_session_end(self, messages: list[Message], *,
                       context: SessionContext | None = None) -> None:
        """Store a compact ``Summary`` thought of the session's user messages."""
        if not self._writes_allowed(context) or not isinstance(messages, list):
            return
        users = [str(m["content"]) for m in messages if isinstance(m, dict)
                 and m.get("role") == "user" and isinstance(m.get("content"), str)]
        if users:
            session = self._session(context)
            summary = (f"Session {session}: {len(users)} turns. Topics: "
                       + "; ".join(u[:80] for u in users[:5]))
            self._append(summary, "Summary", ["memoryport", "session-end", f"session:{session}"],
                         context)
            self._flush()

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "",
                      context: SessionContext | None = None, **kwargs: Any) -> None:
        """Record a subagent's task and outcome so the parent can recall it."""
        if self._writes_allowed(context):
            self._append(f"Delegated task: {task[:300]}\nResult: {result[:500]}",
                         "Observation", ["memoryport", "delegation", f"child:{child_session_id}"],
                         context)
            self._flush()

    def shutdown(self) -> None:
        """Try once more to deliver queued writes (a few seconds at most; what is left
        stays on disk for the next run), then close. Idempotent."""
        outbox, client = self._outbox, self._client
        if outbox is not None and client is not None:
            try:
                self._flush(force=True, budget_s=_SHUTDOWN_FLUSH_S)
            except ProviderError as exc:
                log.warning("mentisdb: %d writes kept for the next run (%s)",
                            outbox.pending(), exc)
        self._outbox = self._client = None
        with self._lock:
            self._warm.clear()
        if outbox is not None:
            outbox.close()
        if client is not None:
            client.close()


def _bad(message: str) -> dict[str, Any]:
    return tool_error(message, "ToolArgumentError")
