"""``HonchoProvider``: Honcho's user modelling through the ``honcho-ai`` SDK.

Context is injected through ``prefetch`` in two layers, each on its own cadence: the base
context (session summary, user representation, user peer card, AI self-representation, AI
identity card) every ``contextCadence`` turns, and the dialectic supplement (1-3 ``chat``
passes, cold or warm first prompt, early bail-out on a strong answer) every
``dialecticCadence`` turns; joined and cut to ``contextTokens``. The layers are computed by
``queue_prefetch`` on the manager's background queue after each turn, cached per session,
and served by ``prefetch`` on the next (the manager warms a cold session inside the
deadline). ``injectionFrequency: first-turn`` injects on a session's first turn only.

Writes (``saveMessages``): each completed turn, sanitised (leaked ``<memory-context>``
blocks and system notes stripped) and chunked at ``messageMaxChars`` with ``[continued]``
markers, goes to a durable outbox (``<home>/honcho-outbox.db``) and is sent per
``writeFrequency`` (``async``/``turn``: every turn; ``session``: at session end; N: every N
turns), retried with backoff, never lost across a restart of the server or the agent.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.errors import (
    ConfigError,
    MemoryportError,
    ProviderError,
    tool_error_json,
)
from memoryport.provider import MemoryProvider
from memoryport.providers.honcho.client import BaseContext, Link, Links
from memoryport.providers.honcho.config import HonchoConfig
from memoryport.providers.honcho.schema import CONFIG_SCHEMA, save_host_values
from memoryport.providers.honcho.text import (
    AUDIT_PROMPT,
    COLD_PROMPT,
    RECONCILE_PROMPT,
    WARM_PROMPT,
    chunk,
    safe_id,
    sanitize,
    session_name,
    strong_signal,
    truncate_to_budget,
)
from memoryport.providers.honcho.tools import SCHEMAS, Scope, run_tool
from memoryport.storage.outbox import Outbox
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["OUTBOX_NAME", "REQUEST_TIMEOUT_S", "HonchoProvider"]

OUTBOX_NAME = "honcho-outbox.db"
"""Undelivered writes, under the home."""

REQUEST_TIMEOUT_S = 10.0
"""Per-request timeout of the SDK client (it does not retry: the outbox does)."""

log = logging.getLogger("memoryport.providers.honcho")

_SHUTDOWN_FLUSH_S = 5.0


@dataclass
class _State:
    """One session's cadence counters and cached layers."""

    turn: int = 0
    served: int = 0
    base_turn: int | None = None
    dialectic_turn: int | None = None
    base: BaseContext | None = None
    dialectic: str = ""
    unsent_turns: int = 0


def _due(last: int | None, now: int, cadence: int) -> bool:
    return last is None or now - last >= cadence


class HonchoProvider(MemoryProvider):
    """Honcho (``memory.provider: honcho``)."""

    def __init__(self, config: HonchoConfig | None = None, home: Path | None = None) -> None:
        self.config = config or HonchoConfig()
        self.home = home
        self._context = SessionContext()
        self._links = Links()
        self._outbox: Outbox | None = None
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()
        self._ready = False

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """Always ``"honcho"``."""
        return "honcho"

    def is_available(self) -> bool:
        """True when ``honcho-ai`` is installed and Honcho is enabled for this profile
        (``apiKey`` or ``baseUrl`` set, or ``enabled: true``); reads files only."""
        import importlib.util

        return importlib.util.find_spec("honcho") is not None and self.config.enabled

    def get_config_schema(self) -> list[ConfigField]:
        """The scalar settings of the seed's tables (objects live in ``honcho.json``)."""
        return [f.copy() for f in CONFIG_SCHEMA]

    def save_config(self, values: dict[str, Any], home: str) -> None:
        """Write what ``memoryport setup honcho`` collected into this profile's host block
        of ``honcho.json`` (values equal to the defaults are not pinned)."""
        save_host_values(Path(home), values)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Resolve the settings for the home's profile, build the client and open the
        outbox (no request is made here). ``ConfigError`` (bad settings, disabled) drops
        the provider."""
        context = SessionContext.from_kwargs(session_id, **kwargs)
        if context.home is None:
            raise ConfigError("honcho needs the home directory (initialize's home kwarg)")
        config = HonchoConfig.load(context.home)
        if not config.enabled:
            raise ConfigError(f"honcho is disabled for host {config.host!r}: set apiKey or"
                              " baseUrl (memoryport setup honcho) or run: memoryport honcho"
                              " enable")
        self.shutdown()
        self.config, self.home, self._context = config, context.home, context
        self._outbox = Outbox(context.home / OUTBOX_NAME, base_s=config.retry_base_s,
                              max_s=config.retry_max_s)
        self._ready = True
        self.link()  # imports the SDK and builds the client here (no request is made)
        log.info("honcho ready: %s workspace=%s host=%s", config.url, config.workspace,
                 config.host)

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The five tools, hidden in ``context`` mode."""
        return [dict(s) for s in SCHEMAS] if self.config.tools_visible else []

    def system_prompt_block(self) -> str:
        """A static mode header (recall itself goes into the user message)."""
        if not self._ready:
            return ""
        mode = self.config.recall_mode
        text = f"# Honcho memory\nMode: {mode}."
        if self.config.injects:
            text += " Context about the user is injected into user messages."
        if self.config.tools_visible:
            text += (" Tools: honcho_profile, honcho_search, honcho_context, honcho_reasoning"
                     " (LLM, use sparingly), honcho_conclude; peer='ai' for your own memory.")
        return text

    # ------------------------------------------------------------------ scoping
    def _ctx(self, context: SessionContext | None) -> SessionContext:
        return context if context is not None else self._context

    def peers(self, context: SessionContext | None = None) -> tuple[str, str]:
        """(user peer, AI peer): ``peerName`` else the session's user; ``aiPeer``."""
        ctx = self._ctx(context)
        return (safe_id(self.config.peer_name or ctx.user_id or "user"),
                safe_id(self.config.ai_peer))

    def session_for(self, context: SessionContext | None = None) -> str:
        """The Honcho session name of this memoryport session (seven-step chain)."""
        return session_name(self.config, self._ctx(context), self.peers(context)[0])

    def link(self) -> Link:
        """This profile's connection (made on first use)."""
        if not self._ready:
            raise ProviderError("honcho is not initialized (or was shut down)",
                                provider="honcho")
        return self._links.get(self.config, REQUEST_TIMEOUT_S)

    def _state(self, context: SessionContext | None) -> _State:
        key = self._ctx(context).session_id
        with self._lock:
            return self._states.setdefault(key, _State())

    def scope(self, context: SessionContext | None = None) -> Scope:
        """Who and where a tool call is about."""
        user, ai = self.peers(context)
        return Scope(self.link(), self.config, user, ai, self.session_for(context))

    # ------------------------------------------------------------------ turns
    def on_turn_start(self, turn_number: int, message: str, *,
                      context: SessionContext | None = None, **kwargs: Any) -> None:
        """Track the session's turn number (the cadences count turns)."""
        self._state(context).turn = int(turn_number)

    def prefetch(self, query: str, *, session_id: str = "",
                 context: SessionContext | None = None, **kwargs: Any) -> str:
        """The cached layers for this session, joined and cut to ``contextTokens``
        ("" in ``tools`` mode, and after turn 1 with ``injectionFrequency: first-turn``)."""
        if not self._ready or not self.config.injects:
            return ""
        state = self._state(context)
        state.served = state.turn
        if self.config.injection_frequency == "first-turn" and state.turn > 1:
            return ""
        base = state.base.render() if state.base is not None else ""
        dialectic = f"## Dialectic\n{state.dialectic}" if state.dialectic else ""
        text = "\n\n".join(part for part in (base, dialectic) if part)
        return truncate_to_budget(text, self.config.context_tokens)

    def queue_prefetch(self, query: str, *, session_id: str = "",
                       context: SessionContext | None = None, **kwargs: Any) -> None:
        """Deliver due writes, then refresh whichever layer is due (base on
        ``contextCadence``, dialectic on ``dialecticCadence``) for the next turn."""
        if not self._ready:
            return
        if self._writes_allowed(context) and self.config.write_frequency in ("async", "turn"):
            try:
                self._flush()
            except ProviderError as exc:  # sync_turn reports write faults
                log.info("honcho: writes still queued (%s)", exc)
        if not self.config.injects:
            return
        state = self._state(context)
        # After a served turn this prepares the next one; a cold session's warm-up (the
        # manager calls this before the first prefetch) prepares the current one.
        target = state.turn + 1 if state.turn and state.served >= state.turn else state.turn
        user, ai = self.peers(context)
        name = self.session_for(context)
        link = self.link()
        if _due(state.base_turn, target, self.config.context_cadence):
            state.base = link.base_context(name, user, ai, self.config.context_tokens)
            state.base_turn = target
        if _due(state.dialectic_turn, target, self.config.dialectic_cadence):
            state.dialectic = self._dialectic(link, query, name, user, ai, state)
            state.dialectic_turn = target

    def _dialectic(self, link: Link, query: str, name: str, user: str, ai: str,
                   state: _State) -> str:
        """1-3 ``chat`` passes; pass 0 is cold (nothing known yet) or warm; a strong first
        answer ends the cycle early."""
        levels = self.config.pass_levels()
        warm = state.base is not None and bool(state.base.render())
        first = f"{WARM_PROMPT}\n\nCurrent message: {query}" if warm else COLD_PROMPT
        limit = self.config.dialectic_max_input_chars
        answers = [link.chat(ai, user, first[:limit], name, levels[0])]
        if len(levels) >= 2 and not strong_signal(answers[0]):
            prompt = AUDIT_PROMPT.format(message=query, previous=answers[0])
            answers.append(link.chat(ai, user, prompt[:limit], name, levels[1]))
            if len(levels) == 3:
                joined = "\n\n---\n\n".join(a for a in answers if a)
                answers.append(link.chat(ai, user, RECONCILE_PROMPT.format(
                    previous=joined)[:limit], name, levels[2]))
        final = next((a for a in reversed(answers) if a.strip()), "")
        return final.strip()[: self.config.dialectic_max_chars]

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], *,
                         context: SessionContext | None = None, **kwargs: Any) -> str:
        """Run one of the five tools; failures in the one tool-error shape."""
        if tool_name not in {s["name"] for s in SCHEMAS} or not self.config.tools_visible:
            return tool_error_json(f"honcho has no tool {tool_name!r}", "ToolNotFound")
        if not self._ready:
            return tool_error_json("honcho is not initialized (or was shut down)",
                                   "ToolUnavailable")
        if not isinstance(args, dict):
            return tool_error_json("arguments must be a JSON object", "ToolArgumentError")
        try:
            result = run_tool(tool_name, args, self.scope(
                context if isinstance(context, SessionContext) else None))
        except MemoryportError as exc:
            result = exc.to_dict()
        return json.dumps(result, ensure_ascii=False, default=str)

    # ------------------------------------------------------------------ writes
    def _writes_allowed(self, context: SessionContext | None) -> bool:
        return self._ready and self._ctx(context).agent_context in ("primary", "")

    def _send(self, kind: str, body: dict[str, Any]) -> None:
        link = self.link()
        if kind == "messages":
            link.add_messages(body["session"], body["user"], body["ai"], body["messages"])
        elif kind == "conclusion":
            link.conclude(body["ai"], body["user"], body["content"], body["session"])

    def _flush(self, *, force: bool = False, budget_s: float | None = None) -> int:
        outbox = self._outbox
        if outbox is None:
            return 0
        return outbox.flush(self._send, force=force, budget_s=budget_s)

    def _after_write(self, state: _State) -> None:
        frequency = self.config.write_frequency
        state.unsent_turns += 1
        if frequency == "session":
            return
        if isinstance(frequency, int) and state.unsent_turns < frequency:
            return
        state.unsent_turns = 0
        self._flush()

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  context: SessionContext | None = None, **kwargs: Any) -> None:
        """Queue the turn (sanitised, chunked) and send per ``writeFrequency``; a send
        failure raises (``status`` shows it) and the turn stays queued for a retry."""
        outbox = self._outbox
        if outbox is None or not self._writes_allowed(context) or not self.config.save_messages:
            return
        user, ai = self.peers(context)
        limit = self.config.message_max_chars
        messages = [{"peer": peer, "content": piece, "metadata": {"source": "memoryport"}}
                    for peer, text in ((user, user_content), (ai, assistant_content))
                    for piece in chunk(sanitize(text if isinstance(text, str) else ""), limit)
                    if piece]
        if messages:
            outbox.put("messages", {"session": self.session_for(context), "user": user,
                                    "ai": ai, "messages": messages})
            self._after_write(self._state(context))

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: dict[str, Any] | None = None, *,
                        context: SessionContext | None = None) -> None:
        """A curated fact about the user becomes a Honcho conclusion about them."""
        outbox = self._outbox
        if outbox is None or not self._writes_allowed(context) or target != "user":
            return
        if action in ("add", "replace") and sanitize(content):
            user, ai = self.peers(context)
            outbox.put("conclusion", {"user": user, "ai": ai, "content": sanitize(content),
                                      "session": self.session_for(context)})
            self._after_write(self._state(context))

    def on_session_end(self, messages: list[Message]) -> None:
        """Send everything queued (``writeFrequency: session`` batches until here)."""
        if self._ready:
            self._flush(force=True)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Drop every cached layer (a new, resumed or compressed session starts fresh)."""
        with self._lock:
            self._states.clear()

    # ------------------------------------------------------------------ status
    def pending_writes(self) -> int:
        """Writes recorded in the outbox and not yet delivered."""
        outbox = self._outbox
        return outbox.pending() if outbox is not None else 0

    def status(self) -> dict[str, Any]:
        """URL, workspace, peers, session, pending writes, and whether the server answers
        (the fault, naming the URL, when it does not)."""
        user, ai = self.peers()
        data: dict[str, Any] = {"url": self.config.url, "workspace": self.config.workspace,
                                "host": self.config.host, "user_peer": user, "ai_peer": ai,
                                "pending_writes": self.pending_writes()}
        try:
            link = self.link()
            link.call("workspace", link.client.get_configuration)
            data["reachable"] = True
        except ProviderError as exc:
            data.update(reachable=False, error=str(exc))
        return data

    def shutdown(self) -> None:
        """Send what is queued (a few seconds at most; the rest stays on disk for the next
        run), close the clients. Idempotent."""
        outbox = self._outbox
        if outbox is not None and self._ready:
            try:
                self._flush(force=True, budget_s=_SHUTDOWN_FLUSH_S)
            except ProviderError as exc:
                log.warning("honcho: %d writes kept for the next run (%s)",
                            outbox.pending(), exc)
        self._ready = False
        self._outbox = None
        with self._lock:
            self._states.clear()
        if outbox is not None:
            outbox.close()
        self._links.close()
