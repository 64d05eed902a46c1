"""``OpenVikingProvider``: a self-hosted OpenViking server's ``viking://`` hierarchy.

Each profile and user has a directory ``<memory_root>/<profile>/<user>``. Recall searches
it and the user's own memory space (``viking://user/<user>/memories``, where OpenViking
puts what it extracts from committed sessions) and injects only each hit's one-line
abstract (L0), so a turn spends few tokens; the model reads deeper tiers on demand with
``viking_read`` (``abstract`` / ``overview`` / ``details``). Completed turns go to an
OpenViking session (one per memoryport session), committed when the session ends:
OpenViking's memory extraction. Writes go through the durable outbox on the manager's
background queue.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryport.config import get_secret, profile_name
from memoryport.errors import (
    ToolArgumentError,
)
from memoryport.providers._remote import RemoteProvider
from memoryport.providers.openviking.client import OpenVikingClient
from memoryport.providers.openviking.settings import API_KEY_ENV, CONFIG_SCHEMA, Settings
from memoryport.storage.jsonl_outbox import BackendError
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["SCHEMAS", "OpenVikingProvider"]

log = logging.getLogger("memoryport.providers.openviking")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_TIERS = {"abstract": "/content/abstract", "overview": "/content/overview",
          "details": "/content/read"}


def _schema(name: str, description: str, props: dict[str, Any],
            required: list[str]) -> ToolSchema:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": props, "required": required}}


SCHEMAS: list[ToolSchema] = [
    _schema("viking_search", "Semantic search of your OpenViking memories and resources.",
            {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1,
                                                    "maximum": 50}}, ["query"]),
    _schema("viking_read", "Read a viking:// entry at a tier: abstract (one line), overview"
            " (a summary) or details (the full text).", {
                "uri": {"type": "string", "description": "A viking:// URI."},
                "level": {"type": "string", "enum": list(_TIERS),
                          "description": "Default overview."}}, ["uri"]),
    _schema("viking_browse", "List a viking:// directory (default: your memories).",
            {"uri": {"type": "string", "description": "A viking:// directory."}}, []),
    _schema("viking_remember", "Store one durable memory in OpenViking.",
            {"content": {"type": "string", "description": "What to remember."}},
            ["content"]),
    _schema("viking_add_resource", "Add a web resource (an http(s) URL) to OpenViking's"
            " knowledge; it is fetched and summarized in the background.", {
                "url": {"type": "string", "description": "http(s) URL."},
                "reason": {"type": "string", "description": "Why it matters."}}, ["url"]),
]
"""The five ``viking_*`` tools."""


class OpenVikingProvider(RemoteProvider[Settings]):
    """OpenViking: hierarchical knowledge, tiered reads, session-end extraction
    (``memory.provider: openviking``)."""

    def __init__(self, settings: Settings | None = None, home: Path | None = None) -> None:
        super().__init__("openviking", CONFIG_SCHEMA, settings or Settings(),
                         Settings.from_section, home, log)
        self.client: OpenVikingClient | None = None
        self.profile = "default"

    def is_available(self) -> bool:
        """True when ``httpx`` is installed (the endpoint has a default); no network."""
        return importlib.util.find_spec("httpx") is not None

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read settings and key; open the client and the outbox (no network)."""
        context, home = self._begin(session_id, kwargs)
        key = get_secret(home, API_KEY_ENV) or ""
        self.shutdown()
        self.home, self._context = home, context
        self.profile = profile_name(home)
        self.client = OpenVikingClient(self.settings.endpoint, key,
                                       timeout_s=self.settings.timeout_s)
        self._open_outbox(home, self._send)

    def user(self, context: SessionContext | None = None) -> str:
        """The user id sent as ``X-OpenViking-User``."""
        return _UNSAFE.sub("-", (context or self._context).user_id or "default")[:64]

    def root(self, context: SessionContext | None = None) -> str:
        """The user's memory directory in this profile."""
        return f"{self.settings.memory_root.rstrip('/')}/{self.profile}/{self.user(context)}"

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The five ``viking_*`` tools (none in ``context`` mode)."""
        return [dict(s) for s in SCHEMAS] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line naming the memory directory and the tiers."""
        if self.client is None:
            return ""
        tools = (" Recall shows one-line abstracts; use viking_read for the overview or"
                 " details, viking_remember to store." if self.settings.tools else "")
        return f"# OpenViking memory\nActive ({self.root()}).{tools}"

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a ``viking_*`` tool; failures in the one tool-error shape."""
        tools: dict[str, Callable[[OpenVikingClient, SessionContext | None, dict[str, Any]],
                                  Any]] = {
            "viking_search": self._search, "viking_read": self._read,
            "viking_browse": self._browse, "viking_remember": self._remember,
            "viking_add_resource": self._add_resource}
        client = self._tool_target(tool_name, tools, self.client)
        if isinstance(client, str):
            return client
        context = kwargs.get("context")
        ctx = context if isinstance(context, SessionContext) else None

        def run() -> dict[str, Any]:
            if not isinstance(args, dict):
                raise ToolArgumentError("arguments must be a JSON object")
            return {"success": True, **tools[tool_name](client, ctx, args)}

        return self._tool_json(run)

    def _search(self, client: OpenVikingClient, ctx: SessionContext | None,
                args: dict[str, Any]) -> dict[str, Any]:
        limit = args.get("limit", 10)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
            raise ToolArgumentError("'limit' must be an integer from 1 to 50")
        hits = self._find(client, ctx, _text(args, "query"), limit)
        return {"results": hits, "count": len(hits)}

    def _read(self, client: OpenVikingClient, ctx: SessionContext | None,
              args: dict[str, Any]) -> dict[str, Any]:
        uri, level = _uri(args, "uri"), args.get("level", "overview")
        if level not in _TIERS:
            raise ToolArgumentError("'level' must be abstract, overview or details")
        text = client.call("GET", _TIERS[level], user=self.user(ctx), params={"uri": uri})
        return {"uri": uri, "level": level, "content": text}

    def _browse(self, client: OpenVikingClient, ctx: SessionContext | None,
                args: dict[str, Any]) -> dict[str, Any]:
        uri = _uri(args, "uri") if args.get("uri") else self.root(ctx)
        rows = client.call("GET", "/fs/ls", user=self.user(ctx), params={"uri": uri})
        entries = [{"uri": r.get("uri"), "is_dir": r.get("isDir"), "abstract": r.get("abstract")}
                   for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
        return {"uri": uri, "entries": entries, "count": len(entries)}

    def _remember(self, client: OpenVikingClient, ctx: SessionContext | None,
                  args: dict[str, Any]) -> dict[str, Any]:
        content = _text(args, "content")
        uri = f"{self.root(ctx)}/{hashlib.sha256(content.encode()).hexdigest()[:12]}.md"
        result = client.call("POST", "/content/write", user=self.user(ctx),
                             json={"uri": uri, "content": content, "mode": "replace"})
        return {"uri": uri, "result": result}

    def _add_resource(self, client: OpenVikingClient, ctx: SessionContext | None,
                      args: dict[str, Any]) -> dict[str, Any]:
        url = _text(args, "url")
        if not url.startswith(("http://", "https://")):
            raise ToolArgumentError("'url' must be an http(s) URL (the server fetches it)")
        result = client.call("POST", "/resources", user=self.user(ctx), json={
            "path": url, "reason": str(args.get("reason") or ""), "wait": False})
        return {"url": url, "result": result}

    # ------------------------------------------------------------------ recall
    def _find(self, client: OpenVikingClient, ctx: SessionContext | None, query: str,
              limit: int) -> list[dict[str, Any]]:
        targets = [self.root(ctx), f"viking://user/{self.user(ctx)}/memories"]
        found = client.call("POST", "/search/find", user=self.user(ctx), json={
            "query": query, "target_uri": targets, "limit": limit})
        hits: list[dict[str, Any]] = []
        for kind in ("memories", "resources", "skills"):
            rows = found.get(kind) if isinstance(found, dict) else None
            for row in rows if isinstance(rows, list) else []:
                if isinstance(row, dict) and row.get("uri"):
                    hits.append({"uri": row["uri"], "kind": kind, "score": row.get("score"),
                                 "abstract": row.get("abstract") or ""})
        hits.sort(key=lambda h: -(h["score"] or 0))
        return hits[:limit]

    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None) -> str:
        """The abstracts (L0) of the best entries for ``query`` within ``recall_chars``
        ("" in tools mode). A backend failure raises (counted in health)."""
        client = self.client
        if client is None or not self.settings.inject or not query.strip():
            return ""
        hits = self._find(client, context, query, self.settings.recall_limit)
        lines = [f"- {h['abstract']} ({h['uri']})" for h in hits if h["abstract"].strip()]
        text, budget = "", self.settings.recall_chars
        for line in lines:
            if len(text) + len(line) + 1 > budget:
                break
            text += line + "\n"
        return text.strip()

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Follow the new session id."""
        self._context = self._context.switched(new_session_id,
                                               str(kwargs.get("parent_session_id") or ""))

    # ------------------------------------------------------------------ writes
    def _send(self, item: dict[str, Any]) -> Any:
        client = self.client
        if client is None:
            raise BackendError("openviking is shut down", provider="openviking",
                               retryable=True)
        return client.call("POST", item["path"], user=item["user"], json=item["body"])

    def _queue(self, ctx: SessionContext, path: str, body: dict[str, Any]) -> None:
        outbox = self.outbox
        if outbox is not None and ctx.agent_context in ("primary", ""):
            outbox.put({"path": path, "user": self.user(ctx), "body": body})

    def _session(self, ctx: SessionContext, session_id: str = "") -> str:
        sid = session_id or ctx.session_id or "default"
        return _UNSAFE.sub("-", f"memoryport-{self.profile}-{self.user(ctx)}-{sid}")[:128]

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Add the turn's two messages to this session's OpenViking session."""
        ctx = context or self._context
        if not self.settings.capture_turns or not (user_content or "").strip():
            return
        sid = self._session(ctx, session_id)
        for role, text in (("user", user_content), ("assistant", assistant_content)):
            if isinstance(text, str) and text.strip():
                self._queue(ctx, f"/sessions/{sid}/messages", {"role": role, "content": text})

    def on_session_end(self, messages: list[Message], *,
                       context: SessionContext | None = None) -> None:
        """Commit the OpenViking session: the server extracts memories from it."""
        ctx = context or self._context
        if self.settings.capture_turns and ctx.session_id:
            self._queue(ctx, f"/sessions/{self._session(ctx)}/commit", {})

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Mirror curated adds/replaces as memories under the user's directory."""
        ctx = context or self._context
        if action in ("add", "replace") and (content or "").strip():
            uri = f"{self.root(ctx)}/{hashlib.sha256(content.encode()).hexdigest()[:12]}.md"
            self._queue(ctx, "/content/write", {"uri": uri, "content": content,
                                                "mode": "replace"})

    def status(self) -> dict[str, Any]:
        """The endpoint, pending writes and whether the server answers ``GET /health``
        (its version, or the fault naming the endpoint; never the key)."""
        outbox = self.outbox
        data: dict[str, Any] = {"url": self.settings.endpoint,
                                "pending_writes": len(outbox.pending) if outbox else 0}
        client = self.client
        if client is None:
            return {**data, "reachable": False, "error": "not initialized"}
        try:
            health = client.health()
        except BackendError as exc:
            return {**data, "reachable": False, "error": str(exc)}
        if health.get("healthy") is False:
            return {**data, "reachable": False,
                    "error": f"openviking at {self.settings.endpoint} reports itself unhealthy"}
        return {**data, "reachable": True, "version": health.get("version")}

    def shutdown(self) -> None:
        """One last attempt at pending writes (the rest stays on disk); close. Idempotent."""
        outbox, self.outbox = self.outbox, None
        if outbox is not None:
            outbox.flush(patient=False)
        client, self.client = self.client, None
        if client is not None:
            client.close()


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"'{key}' must be a non-empty string")
    return value.strip()


def _uri(args: dict[str, Any], key: str) -> str:
    uri = _text(args, key)
    if not uri.startswith("viking://"):
        raise ToolArgumentError(f"'{key}' must be a viking:// URI")
    return uri
