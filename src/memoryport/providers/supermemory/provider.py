"""``SupermemoryProvider``: Supermemory cloud memory through the official SDK.

Scoping: one namespace per profile and user, ``<container_tag or memoryport-<profile>>_<user>``;
custom containers (multi-container mode) are ``<namespace>__<name>`` and reachable through
the tools' ``container`` argument. Captured text never contains recalled memory: fenced
``<memory-context>`` blocks are scrubbed, and lines of this session's last recall that the
reply repeats verbatim are dropped before a turn is captured (memory never feeds on
itself). Writes go through the durable outbox on the manager's background queue.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
from pathlib import Path
from typing import Any

from memoryport.config import get_secret, profile_name
from memoryport.errors import ConfigError
from memoryport.fence import scrub_text
from memoryport.providers._remote import RemoteProvider
from memoryport.providers.supermemory.client import SupermemoryClient
from memoryport.providers.supermemory.settings import API_KEY_ENV, CONFIG_SCHEMA, Settings
from memoryport.providers.supermemory.tools import TOOLS, ToolScope, run_tool, schemas
from memoryport.storage.jsonl_outbox import BackendError
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["SupermemoryProvider", "strip_recalled"]

log = logging.getLogger("memoryport.providers.supermemory")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def strip_recalled(text: str, recalled: str) -> str:
    """``text`` without fenced memory blocks and without the lines of ``recalled`` it
    repeats verbatim (lines of 20+ characters, ignoring a leading ``- ``)."""
    clean = scrub_text(text or "")
    lines = {ln.strip().removeprefix("- ").strip() for ln in (recalled or "").splitlines()}
    lines = {ln for ln in lines if len(ln) >= 20}
    if not lines:
        return clean.strip()
    kept = [ln for ln in clean.splitlines()
            if ln.strip().removeprefix("- ").strip() not in lines]
    out = "\n".join(kept)
    for line in sorted(lines, key=len, reverse=True):
        out = out.replace(line, "")
    return out.strip()


class SupermemoryProvider(RemoteProvider[Settings]):
    """Supermemory: semantic recall, profile facts, capture (``memory.provider:
    supermemory``)."""

    def __init__(self, settings: Settings | None = None, home: Path | None = None) -> None:
        super().__init__("supermemory", CONFIG_SCHEMA, settings or Settings(),
                         Settings.from_section, home, log)
        self.client: SupermemoryClient | None = None
        self.prefix = ""
        self._recalled: dict[str, str] = {}
        self._lock = threading.Lock()

    def is_available(self) -> bool:
        """True when the ``supermemory`` SDK is installed and ``SUPERMEMORY_API_KEY`` is
        set (environment or the home's ``.env``); no network."""
        if importlib.util.find_spec("supermemory") is None or self.home is None:
            return False
        return self._secret_set(API_KEY_ENV)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read settings and key; open the SDK client and the outbox (no network)."""
        context, home = self._begin(session_id, kwargs)
        key = get_secret(home, API_KEY_ENV)
        if not key:
            raise ConfigError(f"supermemory needs an API key: set {API_KEY_ENV} (memoryport"
                              " setup supermemory --set api_key=...)")
        self.shutdown()
        self.home, self._context = home, context
        self.prefix = self.settings.container_tag or f"memoryport-{profile_name(home)}"
        self.client = SupermemoryClient(self.settings.base_url, key,
                                        timeout_s=self.settings.timeout_s)
        self._open_outbox(home, self._send)

    def namespace(self, context: SessionContext | None = None) -> str:
        """The user's namespace in this profile."""
        user = (context or self._context).user_id or "default"
        return f"{self.prefix}_{_UNSAFE.sub('-', user)[:64]}"

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The four ``supermemory_*`` tools (none when ``tools`` is false)."""
        return schemas(tuple(self.settings.containers)) if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line: active, and the custom containers the tools may use."""
        if self.client is None:
            return ""
        containers = self.settings.containers
        extra = f" Custom containers: {', '.join(containers)}." if containers else ""
        return f"# Supermemory\nActive.{extra}" if self.settings.tools else "# Supermemory\nActive."

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a ``supermemory_*`` tool; failures in the one tool-error shape."""
        client = self._tool_target(tool_name, TOOLS, self.client)
        if isinstance(client, str):
            return client
        context = kwargs.get("context")
        ctx = context if isinstance(context, SessionContext) else self._context
        scope = ToolScope(self.namespace(ctx), tuple(self.settings.containers),
                          self.settings.search_mode,
                          {"source": "memoryport", "session_id": ctx.session_id})

        def run() -> Any:
            if not isinstance(args, dict):
                raise ConfigError("arguments must be a JSON object")
            return run_tool(tool_name, client, scope, args)

        return self._tool_json(run)

    # ------------------------------------------------------------------ recall
    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None) -> str:
        """Profile facts and the memories matching ``query`` within ``recall_chars``
        ("" when ``auto_recall`` is off). A backend failure raises (counted in health)."""
        client = self.client
        if client is None or not self.settings.auto_recall or not query.strip():
            return ""
        namespace = self.namespace(context)
        lines: list[str] = []
        if self.settings.include_profile:
            profile = client.profile(namespace).get("profile") or {}
            facts = [f.get("memory") for part in ("static", "dynamic")
                     for f in profile.get(part) or [] if isinstance(f, dict)]
            lines += ["Profile:"] + [f"- {f}" for f in facts if f] if any(facts) else []
        found = client.search(namespace, query, limit=self.settings.max_recall_results,
                              mode=self.settings.search_mode).get("results") or []
        hits = [r.get("memory") or r.get("chunk") for r in found if isinstance(r, dict)]
        if any(hits):
            lines += ["Relevant memories:"] + [f"- {h}" for h in hits if h]
        text = _cut("\n".join(lines), self.settings.recall_chars)
        with self._lock:
            self._recalled[session_id or (context or self._context).session_id] = text
        return text

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Drop the per-session recall memory; follow the new session id."""
        with self._lock:
            self._recalled.clear()
        self._context = self._context.switched(new_session_id,
                                               str(kwargs.get("parent_session_id") or ""))

    # ------------------------------------------------------------------ writes
    def _send(self, item: dict[str, Any]) -> Any:
        client = self.client
        if client is None:
            raise BackendError("supermemory is shut down", provider="supermemory",
                               retryable=True)
        return client.add(item["namespace"], item["content"], **item.get("options", {}))

    def _capture(self, context: SessionContext | None, content: str, kind: str,
                 doc_id: str = "") -> None:
        ctx = context or self._context
        outbox = self.outbox
        if outbox is None or ctx.agent_context not in ("primary", "") or not content.strip():
            return
        options: dict[str, Any] = {"metadata": {"source": "memoryport", "kind": kind,
                                                "session_id": ctx.session_id}}
        if self.settings.entity_context:
            options["supporting_context"] = self.settings.entity_context
        if doc_id:
            options["id"] = doc_id
        outbox.put({"namespace": self.namespace(ctx), "content": content, "options": options})

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Capture the turn (``capture_mode``), with recalled memory stripped out."""
        if not self.settings.auto_capture:
            return
        with self._lock:
            recalled = self._recalled.get(session_id or (context or self._context).session_id,
                                          "")
        user = strip_recalled(user_content, recalled)
        parts = [f"user: {user}"] if user else []
        if self.settings.capture_mode == "all":
            reply = strip_recalled(assistant_content, recalled)
            parts += [f"assistant: {reply}"] if reply else []
        if user:
            self._capture(context, "\n".join(parts), "turn")

    def on_session_end(self, messages: list[Message], *,
                       context: SessionContext | None = None) -> None:
        """Session graph ingest: the whole conversation as one document per session
        (re-sent sessions update it, by id)."""
        if not self.settings.auto_capture or not isinstance(messages, list):
            return
        ctx = context or self._context
        lines = []
        for message in messages:
            role, content = message.get("role"), message.get("content")
            if role in ("user", "assistant") and isinstance(content, str):
                if role == "assistant" and self.settings.capture_mode == "user":
                    continue
                text = strip_recalled(content, "")
                lines += [f"{role}: {text}"] if text else []
        if lines and ctx.session_id:
            self._capture(ctx, "\n".join(lines), "session", f"session-{ctx.session_id}")

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Mirror curated adds and replaces as memories."""
        if action in ("add", "replace"):
            self._capture(context, content or "", f"curated-{target}")

    def status(self) -> dict[str, Any]:
        """The API URL, pending writes and whether the API answers a one-row namespace
        listing (``GET /ns``; the fault, naming the URL, when not; never the key)."""
        outbox = self.outbox
        data: dict[str, Any] = {"url": self.settings.base_url,
                                "pending_writes": len(outbox.pending) if outbox else 0}
        client = self.client
        if client is None:
            return {**data, "reachable": False, "error": "not initialized"}
        try:
            client.call("list namespaces", client.sdk.namespaces.list, limit=1)
        except BackendError as exc:
            return {**data, "reachable": False, "error": str(exc)}
        return {**data, "reachable": True}

    def shutdown(self) -> None:
        """One last attempt at pending writes (the rest stays on disk); close. Idempotent."""
        outbox, self.outbox = self.outbox, None
        if outbox is not None:
            outbox.flush(patient=False)
        client, self.client = self.client, None
        if client is not None:
            client.close()
        with self._lock:
            self._recalled.clear()


def _cut(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    cut = text[:budget]
    return cut[: cut.rfind("\n")] if "\n" in cut else cut
