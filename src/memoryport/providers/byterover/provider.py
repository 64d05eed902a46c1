"""``ByteRoverProvider``: ByteRover's local-first knowledge tree through the ``brv`` CLI.

Each user has a project directory (``<home>/byterover/<user>`` unless ``project_dir`` is
set) holding ``brv``'s ``.brv/context-tree``. Recall runs ``brv search`` (BM25, no LLM) or
``brv query`` within ``timeout_s`` — the only ``brv`` run on a turn's path, inside the
manager's prefetch deadline. Before compression discards messages, ``on_pre_compress``
curates them as one insight; curated memory writes (and, with ``curate_turns``, turns) are
curated too. Curates go through the durable outbox on the manager's queues, so a failing or
missing ``brv`` loses nothing.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from memoryport.config import get_secret
from memoryport.errors import (
    ToolArgumentError,
)
from memoryport.providers._remote import RemoteProvider
from memoryport.providers.byterover.cli import BrvCli
from memoryport.providers.byterover.settings import API_KEY_ENV, CONFIG_SCHEMA, Settings
from memoryport.storage.jsonl_outbox import BackendError
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["SCHEMAS", "ByteRoverProvider"]

log = logging.getLogger("memoryport.providers.byterover")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")

SCHEMAS: list[ToolSchema] = [
    {"name": "brv_query", "description": "Ask ByteRover's knowledge tree a question about the"
     " project or the user (patterns, decisions, facts).", "parameters": {
         "type": "object", "properties": {"query": {"type": "string",
                                                    "description": "A specific question."}},
         "required": ["query"]}},
    {"name": "brv_curate", "description": "Save a durable insight (a decision, pattern, fix"
     " or fact, with specifics) to ByteRover's knowledge tree.", "parameters": {
         "type": "object", "properties": {"content": {"type": "string",
                                                      "description": "The insight."}},
         "required": ["content"]}},
    {"name": "brv_status", "description": "The brv CLI version and the knowledge tree's"
     " state.", "parameters": {"type": "object", "properties": {}, "required": []}},
]
"""``brv_query``, ``brv_curate``, ``brv_status``."""


class ByteRoverProvider(RemoteProvider[Settings]):
    """ByteRover: local-first knowledge tree, pre-compression extraction
    (``memory.provider: byterover``)."""

    def __init__(self, settings: Settings | None = None, home: Path | None = None) -> None:
        super().__init__("byterover", CONFIG_SCHEMA, settings or Settings(),
                         Settings.from_section, home, log)
        self.cli: BrvCli | None = None

    def is_available(self) -> bool:
        """True when the ``brv`` executable is on ``PATH`` (or at ``brv_path``); no
        subprocess, no network."""
        return BrvCli(self.settings.brv_path).resolve() is not None

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read settings (and the optional cloud key); prepare the CLI and the outbox."""
        context, home = self._begin(session_id, kwargs)
        self.shutdown()
        self.home, self._context = home, context
        self.cli = BrvCli(self.settings.brv_path, get_secret(home, API_KEY_ENV) or "")
        self._open_outbox(home, self._send)

    def project(self, context: SessionContext | None = None) -> Path:
        """The user's project directory (its ``.brv/context-tree`` is the tree)."""
        base = Path(self.settings.project_dir).expanduser() if self.settings.project_dir \
            else (self.home or Path.cwd()) / "byterover"
        user = (context or self._context).user_id or "default"
        return base / _UNSAFE.sub("-", user)[:64]

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The three ``brv_*`` tools (none in ``context`` mode)."""
        return [dict(s) for s in SCHEMAS] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line: active, and how to use the tools."""
        if self.cli is None:
            return ""
        tools = (" Use brv_query to look things up and brv_curate to save durable insights."
                 if self.settings.tools else "")
        return f"# ByteRover knowledge tree\nActive.{tools}"

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a ``brv_*`` tool; failures in the one tool-error shape naming byterover."""
        cli = self._tool_target(tool_name, ("brv_query", "brv_curate", "brv_status"), self.cli)
        if isinstance(cli, str):
            return cli
        context = kwargs.get("context")
        cwd = self.project(context if isinstance(context, SessionContext) else None)
        return self._tool_json(lambda: {"success": True, **self._tool(cli, cwd, tool_name, args)})

    def _tool(self, cli: BrvCli, cwd: Path, tool_name: str, args: Any) -> dict[str, Any]:
        s = self.settings
        if tool_name == "brv_status":
            return cli.run(cwd, ["status"], timeout_s=s.timeout_s)
        key = "query" if tool_name == "brv_query" else "content"
        value = args.get(key) if isinstance(args, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise ToolArgumentError(f"'{key}' must be a non-empty string")
        if tool_name == "brv_query":
            return cli.run(cwd, ["query", value.strip()], timeout_s=s.curate_timeout_s)
        return cli.run(cwd, ["curate", value.strip()], timeout_s=s.curate_timeout_s)

    # ------------------------------------------------------------------ recall
    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None) -> str:
        """``brv search`` (or ``brv query``) for ``query`` within ``timeout_s`` and
        ``recall_chars`` ("" in tools mode). A failure raises (counted in health)."""
        cli = self.cli
        if cli is None or not self.settings.inject or not query.strip():
            return ""
        s, cwd = self.settings, self.project(context)
        if s.recall_method == "query":
            text = str(cli.run(cwd, ["query", query.strip()], timeout_s=s.timeout_s)
                       .get("result") or "")
        else:
            data = cli.run(cwd, ["search", query.strip(), "--limit", str(s.recall_limit)],
                           timeout_s=s.timeout_s)
            rows = data.get("results") if isinstance(data.get("results"), list) else []
            text = "\n".join(f"- {r.get('excerpt') or r.get('title')} ({r.get('path')})"
                             for r in rows or [] if isinstance(r, dict))
        return _cut(text.strip(), s.recall_chars)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Follow the new session id."""
        self._context = self._context.switched(new_session_id,
                                               str(kwargs.get("parent_session_id") or ""))

    # ------------------------------------------------------------------ writes
    def _send(self, item: dict[str, Any]) -> Any:
        cli = self.cli
        if cli is None:
            raise BackendError("byterover is shut down", provider="byterover", retryable=True)
        return cli.run(Path(item["cwd"]), ["curate", item["content"]],
                       timeout_s=self.settings.curate_timeout_s)

    def _curate(self, context: SessionContext | None, content: str) -> None:
        ctx = context or self._context
        outbox = self.outbox
        if outbox is None or ctx.agent_context not in ("primary", "") or not content.strip():
            return
        outbox.put({"cwd": str(self.project(ctx)), "content": content.strip()})

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """With ``curate_turns``: curate the completed turn."""
        if self.settings.curate_turns and (user_content or "").strip():
            self._curate(context, f"User: {user_content.strip()}\nAssistant: "
                                  f"{(assistant_content or '').strip()}")

    def on_pre_compress(self, messages: list[Message], *,
                        context: SessionContext | None = None) -> str:
        """Save the insights of the messages about to be discarded (one curate of their
        text, newest last, within ``compress_chars``) before compression; returns ""."""
        if not isinstance(messages, list):
            return ""
        lines = []
        for message in messages:
            role = message.get("role") if isinstance(message, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if role in ("user", "assistant") and isinstance(content, str) and content.strip():
                lines.append(f"{role}: {content.strip()}")
        text = "\n".join(lines)[-self.settings.compress_chars:]
        if text:
            self._curate(context, "Conversation insights before compression:\n" + text)
        return ""

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """Curate curated-memory adds and replaces."""
        if action in ("add", "replace"):
            self._curate(context, content or "")

    def status(self) -> dict[str, Any]:
        """The ``brv`` executable (``url``: ByteRover has no server URL of its own), the
        project directory, pending curates and whether ``brv status`` answers within
        ``timeout_s`` (the tree's state, or the fault; never the cloud key)."""
        outbox, cli = self.outbox, self.cli
        where = (cli.resolve() if cli else None) or self.settings.brv_path
        data: dict[str, Any] = {"url": where, "project": str(self.project()),
                                "pending_writes": len(outbox.pending) if outbox else 0}
        if cli is None:
            return {**data, "reachable": False, "error": "not initialized"}
        try:
            answer = cli.run(self.project(), ["status"], timeout_s=self.settings.timeout_s)
        except BackendError as exc:
            return {**data, "reachable": False, "error": f"{exc} (ran {where})"}
        return {**data, "reachable": True, "cli_version": answer.get("cliVersion"),
                "context_tree": answer.get("contextTreeStatus")}

    def shutdown(self) -> None:
        """One last attempt at pending curates (the rest stays on disk). Idempotent."""
        outbox, self.outbox = self.outbox, None
        if outbox is not None:
            outbox.flush(patient=False)
        self.cli = None


def _cut(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    cut = text[:budget]
    return cut[: cut.rfind("\n")] if "\n" in cut else cut
