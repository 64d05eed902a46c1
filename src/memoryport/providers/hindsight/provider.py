"""``HindsightProvider``: Hindsight memory banks (cloud or a self-hosted/local server)
through the ``hindsight-client`` SDK.

One bank per profile and user (``<bank_id or memoryport-<profile>>-<user>``). Completed
turns are retained (``auto_retain``) through the durable outbox on the manager's
background queue; each turn's context is a recall (or, with ``prefetch_method:
reflect``, a synthesized answer) for the user message, cut to the input limit on the way
out and to ``recall_chars`` on the way in.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryport.config import get_secret, profile_name
from memoryport.errors import (
    ConfigError,
    ToolArgumentError,
)
from memoryport.providers._remote import RemoteProvider
from memoryport.providers.hindsight.client import HindsightClient, plain
from memoryport.providers.hindsight.settings import API_KEY_ENV, CONFIG_SCHEMA, Settings
from memoryport.storage.jsonl_outbox import BackendError
from memoryport.types import SessionContext, ToolSchema

__all__ = ["SCHEMAS", "HindsightProvider"]

log = logging.getLogger("memoryport.providers.hindsight")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")


def _schema(name: str, description: str, key: str, what: str) -> ToolSchema:
    return {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {key: {"type": "string", "description": what}},
        "required": [key]}}


SCHEMAS: list[ToolSchema] = [
    _schema("hindsight_retain", "Store information in long-term memory (facts, preferences,"
            " decisions worth remembering across conversations).", "content",
            "The information to store."),
    _schema("hindsight_recall", "Search long-term memory for facts, preferences or context.",
            "query", "What to look for."),
    _schema("hindsight_reflect", "A reasoned answer synthesized from long-term memory (not"
            " raw facts).", "query", "The question to reflect on."),
]
"""``hindsight_retain``, ``hindsight_recall``, ``hindsight_reflect``."""


class HindsightProvider(RemoteProvider[Settings]):
    """Hindsight: knowledge graph, entity resolution, reflect, auto-retain
    (``memory.provider: hindsight``)."""

    def __init__(self, settings: Settings | None = None, home: Path | None = None) -> None:
        super().__init__("hindsight", CONFIG_SCHEMA, settings or Settings(),
                         Settings.from_section, home, log)
        self.client: HindsightClient | None = None
        self.prefix = ""

    def is_available(self) -> bool:
        """True when ``hindsight-client`` is installed and a server is configured (a
        non-default ``api_url``, or ``HINDSIGHT_API_KEY`` for the cloud); no network."""
        if importlib.util.find_spec("hindsight_client") is None or self.home is None:
            return False
        if self.settings.api_url != Settings.api_url:
            return True
        return self._secret_set(API_KEY_ENV)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read settings and key; prepare the client and the outbox (no network)."""
        context, home = self._begin(session_id, kwargs)
        key = get_secret(home, API_KEY_ENV) or ""
        if not key and self.settings.api_url == Settings.api_url:
            raise ConfigError(f"hindsight cloud needs an API key: set {API_KEY_ENV}, or point"
                              " api_url at your own server (memoryport setup hindsight --set"
                              " api_url=http://localhost:8888)")
        self.shutdown()
        self.home, self._context = home, context
        self.prefix = self.settings.bank_id or f"memoryport-{profile_name(home)}"
        self.client = HindsightClient(self.settings.api_url, key,
                                      timeout_s=self.settings.timeout_s)
        self._open_outbox(home, self._send)

    def bank(self, context: SessionContext | None = None) -> str:
        """The user's bank in this profile."""
        user = (context or self._context).user_id or "default"
        return f"{self.prefix}-{_UNSAFE.sub('-', user)[:64]}"

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The three ``hindsight_*`` tools (none in ``context`` mode)."""
        return [dict(s) for s in SCHEMAS] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line naming the bank and, with tools, how to use them."""
        if self.client is None:
            return ""
        tools = (" Use hindsight_retain to store, hindsight_recall to look up and"
                 " hindsight_reflect for a reasoned answer." if self.settings.tools else "")
        return f"# Hindsight memory\nActive (bank {self.bank()}).{tools}"

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a ``hindsight_*`` tool; failures in the one tool-error shape."""
        calls: dict[str, Callable[[HindsightClient, str, str], Any]] = {
            "hindsight_retain": lambda c, b, t: c.retain(
                b, t, context="tool", retain_async=self.settings.retain_async),
            "hindsight_recall": lambda c, b, t: c.recall(
                b, t, budget=self.settings.recall_budget,
                max_tokens=self.settings.recall_max_tokens),
            "hindsight_reflect": lambda c, b, t: c.reflect(
                b, t, budget=self.settings.recall_budget),
        }
        client = self._tool_target(tool_name, calls, self.client)
        if isinstance(client, str):
            return client
        context = kwargs.get("context")
        bank = self.bank(context if isinstance(context, SessionContext) else None)
        key = "content" if tool_name == "hindsight_retain" else "query"

        def run() -> dict[str, Any]:
            value = args.get(key) if isinstance(args, dict) else None
            if not isinstance(value, str) or not value.strip():
                raise ToolArgumentError(f"'{key}' must be a non-empty string")
            answer = calls[tool_name](client, bank, value.strip())
            return {"success": True, **(answer if isinstance(answer, dict) else {})}

        return self._tool_json(run)

    # ------------------------------------------------------------------ recall
    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None) -> str:
        """Recall (or reflect) for ``query`` within the budgets ("" in tools mode). A
        backend failure raises (the manager counts it in health; the turn goes on)."""
        client = self.client
        if client is None or not self.settings.inject or not query.strip():
            return ""
        bank, text = self.bank(context), query.strip()[: self.settings.recall_max_input_chars]
        if self.settings.prefetch_method == "reflect":
            answer = client.reflect(bank, text, budget=self.settings.recall_budget)
            out = str(answer.get("text") or "") if isinstance(answer, dict) else ""
        else:
            answer = client.recall(bank, text, budget=self.settings.recall_budget,
                                   max_tokens=self.settings.recall_max_tokens)
            rows = answer.get("results") if isinstance(answer, dict) else None
            out = "\n".join(f"- {r['text']}" for r in rows or []
                            if isinstance(r, dict) and isinstance(r.get("text"), str))
        return _cut(out.strip(), self.settings.recall_chars)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Follow the new session id (no per-session cache to drop)."""
        self._context = self._context.switched(new_session_id,
                                               str(kwargs.get("parent_session_id") or ""))

    # ------------------------------------------------------------------ writes
    def _send(self, item: dict[str, Any]) -> Any:
        client = self.client
        if client is None:
            raise BackendError("hindsight is shut down", provider="hindsight", retryable=True)
        return client.retain(item["bank"], item["content"], **item.get("options", {}))

    def _retain(self, context: SessionContext | None, content: str, kind: str,
                document_id: str = "") -> None:
        ctx = context or self._context
        outbox = self.outbox
        if outbox is None or ctx.agent_context not in ("primary", "") or not content.strip():
            return
        options: dict[str, Any] = {
            "context": kind, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "metadata": {"source": "memoryport", "session_id": ctx.session_id},
            "retain_async": self.settings.retain_async}
        if document_id:
            options["document_id"] = document_id
        outbox.put({"bank": self.bank(ctx), "content": content, "options": options})

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Auto-retain: the completed turn as one conversation item."""
        if not self.settings.auto_retain or not (user_content or "").strip():
            return
        text = f"user: {user_content.strip()}"
        if isinstance(assistant_content, str) and assistant_content.strip():
            text += f"\nassistant: {assistant_content.strip()}"
        self._retain(context, text, "conversation turn")

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Mirror curated adds and replaces."""
        if action in ("add", "replace"):
            self._retain(context, content or "", f"curated {target} memory")

    def status(self) -> dict[str, Any]:
        """The API URL, pending retains and whether the server answers ``GET /version``
        (its version, or the fault, naming the URL; never the key)."""
        outbox = self.outbox
        data: dict[str, Any] = {"url": self.settings.api_url,
                                "pending_writes": len(outbox.pending) if outbox else 0}
        client = self.client
        if client is None:
            return {**data, "reachable": False, "error": "not initialized"}
        try:
            answer = plain(client.call("version", lambda c: c.aget_version()))
        except BackendError as exc:
            return {**data, "reachable": False, "error": str(exc)}
        version = answer.get("api_version") if isinstance(answer, dict) else None
        return {**data, "reachable": True, "api_version": version}

    def shutdown(self) -> None:
        """One last attempt at pending retains (the rest stays on disk). Idempotent."""
        outbox, self.outbox = self.outbox, None
        if outbox is not None:
            outbox.flush(patient=False)
        client, self.client = self.client, None
        if client is not None:
            client.close()


def _cut(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    cut = text[:budget]
    return cut[: cut.rfind("\n")] if "\n" in cut else cut
