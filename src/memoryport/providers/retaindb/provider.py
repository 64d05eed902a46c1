"""``RetainDBProvider``: RetainDB cloud memory over its HTTP API.

Scoping: one RetainDB ``project`` per memoryport profile (``memoryport-<profile>`` unless
set) and the session's ``user_id`` (``default`` when none) on every call. Writes
(``sync_turn``: the turn's two messages only, never the history again;
``on_memory_write``: curated adds and replaces as typed memories) go through the durable
:class:`~memoryport.providers.retaindb.outbox.Outbox` on the manager's background queue.
Recall (``prefetch``) asks ``/v1/context/query`` with the previous context hash of the
session, so an unchanged context comes back as ``changed: false`` and is not sent again.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from pathlib import Path
from typing import Any

from memoryport.config import get_secret, profile_name
from memoryport.errors import ConfigError
from memoryport.providers._remote import RemoteProvider
from memoryport.providers.retaindb.client import RetainDBClient
from memoryport.providers.retaindb.settings import API_KEY_ENV, CONFIG_SCHEMA, Settings
from memoryport.providers.retaindb.tools import SCHEMAS, TOOLS, Scope, run_tool
from memoryport.storage.jsonl_outbox import BackendError, Outbox
from memoryport.types import SessionContext, ToolSchema

__all__ = ["RetainDBProvider"]

log = logging.getLogger("memoryport.providers.retaindb")


class RetainDBProvider(RemoteProvider[Settings]):
    """RetainDB: hybrid search, typed memories, delta context (``memory.provider:
    retaindb``)."""

    def __init__(self, settings: Settings | None = None, home: Path | None = None) -> None:
        super().__init__("retaindb", CONFIG_SCHEMA, settings or Settings(),
                         Settings.from_section, home, log)
        self.client: RetainDBClient | None = None
        self.project = ""
        self._delta: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def is_available(self) -> bool:
        """True when ``httpx`` is installed and ``RETAINDB_API_KEY`` is set (environment or
        the home's ``.env``); no network."""
        return importlib.util.find_spec("httpx") is not None and self._secret_set(API_KEY_ENV)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read the settings and key, open the client and the outbox (replaying writes a
        previous run left pending); no network call here."""
        context, home = self._begin(session_id, kwargs)
        key = get_secret(home, API_KEY_ENV)
        if not key:
            raise ConfigError(f"retaindb needs an API key: set {API_KEY_ENV} (memoryport setup"
                              " retaindb --set api_key=...)")
        self.shutdown()
        self.home, self._context = home, context
        self.project = self.settings.project or f"memoryport-{profile_name(home)}"
        self.client = RetainDBClient(self.settings.base_url, key,
                                     timeout_s=self.settings.timeout_s)
        self._open_outbox(home, self._send)

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The five ``retaindb_*`` tools (none in ``context`` mode)."""
        return [dict(s) for s in SCHEMAS] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line naming the project and, with tools, how to use them."""
        if self.client is None:
            return ""
        tools = (" Use retaindb_search / retaindb_remember to look up or store durable facts."
                 if self.settings.tools else "")
        return f"# RetainDB memory\nActive (project {self.project}).{tools}"

    def _scope(self, context: SessionContext | None, session_id: str = "") -> Scope:
        ctx = context or self._context
        return Scope(self.project, ctx.user_id or "default",
                     session_id or ctx.session_id or "default")

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a ``retaindb_*`` tool; failures in the one tool-error shape naming retaindb."""
        client = self._tool_target(tool_name, TOOLS, self.client)
        if isinstance(client, str):
            return client
        context = kwargs.get("context")
        scope = self._scope(context if isinstance(context, SessionContext) else None,
                            str(kwargs.get("session_id") or ""))

        def run() -> Any:
            if not isinstance(args, dict):
                raise ConfigError("arguments must be a JSON object")
            return run_tool(tool_name, client, scope, args)

        return self._tool_json(run)

    # ------------------------------------------------------------------ recall
    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None) -> str:
        """The packed context for ``query`` within ``recall_chars`` ("" in tools mode).
        A backend failure raises (the manager logs it, counts it in ``health`` and the turn
        goes on without this recall)."""
        client = self.client
        if client is None or not self.settings.inject or not query.strip():
            return ""
        scope = self._scope(context, session_id)
        body: dict[str, Any] = {"project": scope.project, "user_id": scope.user_id,
                                "session_id": scope.session_id, "query": query,
                                "top_k": self.settings.top_k}
        key = f"{scope.user_id}\x00{scope.session_id}"
        with self._lock:
            cached = self._delta.get(key) if self.settings.delta else None
        if cached:
            body["previous_context_hash"] = cached[0]
        answer = client.context(body)
        if not isinstance(answer, dict):
            raise BackendError("retaindb answered /v1/context/query with a malformed body",
                               provider="retaindb", retryable=True)
        if cached and answer.get("changed") is False:
            return cached[1]
        text = _render(answer, self.settings.recall_chars)
        digest = answer.get("context_hash")
        if isinstance(digest, str) and digest:
            with self._lock:
                self._delta[key] = (digest, text)
        return text

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Forget the delta hashes (a new session starts from a full context)."""
        with self._lock:
            self._delta.clear()
        self._context = self._context.switched(new_session_id,
                                               str(kwargs.get("parent_session_id") or ""))

    # ------------------------------------------------------------------ writes
    def _send(self, item: dict[str, Any]) -> Any:
        client = self.client
        if client is None:
            raise BackendError("retaindb is shut down", provider="retaindb", retryable=True)
        if item.get("op") == "memory":
            return client.add_memory(item["body"])
        return client.ingest_session(item["body"])

    def _writable(self, context: SessionContext | None) -> Outbox | None:
        ctx = context or self._context
        return self.outbox if ctx.agent_context in ("primary", "") else None

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Queue the completed turn (its two messages) for ``/v1/memory/ingest/session``."""
        outbox = self._writable(context)
        if outbox is None or not (user_content or "").strip():
            return
        scope = self._scope(context, session_id)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        messages = [{"role": role, "content": text, "timestamp": stamp}
                    for role, text in (("user", user_content), ("assistant", assistant_content))
                    if isinstance(text, str) and text.strip()]
        outbox.put({"op": "ingest", "body": {
            "project": scope.project, "user_id": scope.user_id, "session_id": scope.session_id,
            "messages": messages, "write_mode": "sync"}})

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Mirror a curated add/replace as a typed memory (``user`` → preference)."""
        outbox = self._writable(context)
        if outbox is None or action not in ("add", "replace") or not (content or "").strip():
            return
        scope = self._scope(context)
        outbox.put({"op": "memory", "body": {
            "project": scope.project, "user_id": scope.user_id, "session_id": scope.session_id,
            "content": content, "importance": 0.7, "source": "memoryport-curated",
            "memory_type": "preference" if target == "user" else "factual"}})

    def on_session_end(self, messages: list[Any]) -> None:
        """Send whatever is still pending (turns were already queued one by one)."""
        if self.outbox is not None:
            self.outbox.flush()

    def status(self) -> dict[str, Any]:
        """The API URL, project, pending writes and whether the API answers a read of the
        current user's profile (``GET /v1/memory/profile/{user}``; RetainDB documents no
        health route); the fault names the URL, never the key."""
        outbox = self.outbox
        data: dict[str, Any] = {"url": self.settings.base_url, "project": self.project,
                                "pending_writes": len(outbox.pending) if outbox else 0}
        client = self.client
        if client is None:
            return {**data, "reachable": False, "error": "not initialized"}
        try:
            client.profile(self._scope(None).user_id, self.project)
        except BackendError as exc:
            return {**data, "reachable": False, "error": str(exc)}
        return {**data, "reachable": True}

    def shutdown(self) -> None:
        """One last attempt at pending writes (what fails stays on disk for the next run);
        close the client. Idempotent."""
        outbox, self.outbox = self.outbox, None
        if outbox is not None:
            outbox.flush(patient=False)
        client, self.client = self.client, None
        if client is not None:
            client.close()
        with self._lock:
            self._delta.clear()


def _render(answer: dict[str, Any], budget: int) -> str:
    """The recall text of a context answer: its packed ``context``, else one line per
    result, cut at ``budget`` characters on a line boundary."""
    text = answer.get("context")
    if not isinstance(text, str) or not text.strip():
        rows = answer.get("results") or answer.get("memories") or []
        lines = []
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and isinstance(row.get("content"), str):
                kind = row.get("memory_type")
                lines.append(f"- [{kind}] {row['content']}" if kind else f"- {row['content']}")
        text = "\n".join(lines)
    if len(text) <= budget:
        return text.strip()
    cut = text[:budget]
    return (cut[: cut.rfind("\n")] if "\n" in cut else cut).strip()
