"""``HolographicProvider``: local fact memory with recall each turn.

Storage is ``<home>/holographic.db`` (:class:`~memoryport.storage.facts.store.FactStore`,
scoped to the session's ``user_id``). Writes: ``sync_turn`` (facts the user states),
``on_memory_write`` (curated add/replace/remove mirrored), ``on_pre_compress`` and
``on_session_end`` (facts in what is discarded; duplicates of what ``sync_turn`` already
stored are recognised by content hash). Non-primary contexts (subagents, cron, flush)
never write. Reads: ``prefetch`` (the top facts and past turns within the character
budget, computed for the current message: never a turn behind) and the tools.

There is no background ``queue_prefetch``: computing the recall of the last message ahead
only helped when the same message came again (a retry), and on a 2-core CPU the wasted
search contended with the next turn's own recall (``benchmarks/bench_turn.py
--holographic``). Instead ``prefetch`` keeps its last result per session and reuses it for
the same message while the store is unchanged; the cache is dropped at every session
switch.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryport.config import load_config, profile_name
from memoryport.config.schema import ConfigField
from memoryport.errors import (
    ConfigError,
    MemoryportError,
    ToolArgumentError,
    tool_error,
    tool_error_json,
)
from memoryport.provider import MemoryProvider
from memoryport.providers.holographic.extract import facts_in_messages, facts_in_text
from memoryport.providers.holographic.recall import render
from memoryport.providers.holographic.settings import CONFIG_SCHEMA, Settings
from memoryport.providers.holographic.tool import (
    FACT_FEEDBACK_SCHEMA,
    FACT_STORE_SCHEMA,
    ToolCall,
    run_tool,
)
from memoryport.storage.facts.postgres_open import open_stores
from memoryport.storage.facts.records import Fact, FactInput, Provenance
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnHit, TurnIndex, TurnInput
from memoryport.types import Message, SessionContext, ToolSchema

__all__ = ["DB_NAME", "HolographicProvider"]

DB_NAME = "holographic.db"
"""The provider's database file under the home."""

SYNC_WAIT = 0.05
"""The longest a recall (``prefetch``, ``recall_items``) waits in all, in seconds, for a
``sync_turn`` still storing the previous turn (see ``HolographicProvider._wait_for_sync``);
a sync held up longer (a write lock held elsewhere) is not waited for."""

RETRIEVALS_BATCH = 64
"""How many recalled fact ids (counted in memory) a turn's sync lets wait before writing
their retrieval counts; older than :data:`RETRIEVALS_AGE` seconds they are written too. A
write of facts, a tool call, compression, session end and shutdown write them at once."""
RETRIEVALS_AGE = 60.0
"""The longest, in seconds, a turn's sync lets retrieval counts wait (see
:data:`RETRIEVALS_BATCH`)."""

log = logging.getLogger("memoryport.providers.holographic")


class HolographicProvider(MemoryProvider):
    """Durable facts with an entity index, trust and contradiction handling (opt-in:
    ``memory.provider: holographic``)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.store: FactStore | None = None
        self.turns: TurnIndex | None = None
        self.home: Path | None = None
        self._context = SessionContext()
        self._warm: dict[str, tuple[str, int, str]] = {}
        self._retrievals: list[int] = []  # recalled fact ids not yet counted in the store
        self._retrieved_at = 0.0  # time.monotonic() of the oldest of them
        self._writes = 0
        self._lock = threading.Lock()
        self._storing = 0  # sync_turn calls that have not stored their turns yet
        self._syncing = 0  # sync_turn calls running (both under _lock)
        self._synced = threading.Condition(self._lock)  # notified when either goes down

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """Always ``"holographic"``."""
        return "holographic"

    def is_available(self) -> bool:
        """True: SQLite only, nothing to install or configure."""
        return True

    def get_config_schema(self) -> list[ConfigField]:
        """The settings (mode, recall budget, extraction, trust)."""
        return [f.copy() for f in CONFIG_SCHEMA]

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Open the store under ``home`` for the session's user; read the settings from
        ``config.yaml`` (``ConfigError`` for invalid ones drops the provider)."""
        context = SessionContext.from_kwargs(session_id, **kwargs)
        if context.home is None:
            raise ConfigError("holographic needs the home directory (initialize's home kwarg)")
        config = load_config(context.home)
        self.settings = Settings.from_section(config.provider_section(self.name))
        self.shutdown()
        self.home = context.home
        self._context = context
        self.store, self.turns = open_stores(
            context.home / DB_NAME, backend=config.storage.backend, dsn=config.storage.dsn,
            profile=profile_name(context.home), user_id=context.user_id or None,
            default_trust=self.settings.default_trust, min_trust=self.settings.min_trust,
            query_vectors=self.settings.query_vectors,
        )

    def get_tool_schemas(self) -> list[ToolSchema]:
        """``fact_store`` and ``fact_feedback`` (none in ``context`` mode)."""
        return [FACT_STORE_SCHEMA, FACT_FEEDBACK_SCHEMA] if self.settings.tools else []

    def system_prompt_block(self) -> str:
        """One line saying the fact memory is active and how many facts it holds."""
        store = self.store
        if store is None:
            return ""
        try:
            count = store.count()
        except MemoryportError:
            return ""
        tools = " Use fact_store to add or look up durable facts." if self.settings.tools else ""
        return f"# Fact memory\nActive: {count} facts stored.{tools}"

    # ------------------------------------------------------------------ tools
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run ``fact_store`` / ``fact_feedback``; failures in the one tool-error shape."""
        if tool_name not in ("fact_store", "fact_feedback") or not self.settings.tools:
            return tool_error_json(f"holographic has no tool {tool_name!r}", "ToolNotFound")
        store = self.store
        if store is None:
            return tool_error_json("the fact store is not open (the provider was not"
                                   " initialized or was shut down)", "ToolUnavailable")
        session = str(kwargs.get("session_id") or self._context.session_id)
        provenance = Provenance(session, str(kwargs.get("tool_call_id") or ""), "tool", "model")
        self._flush_retrievals(store)
        try:
            if not isinstance(args, dict):
                raise ToolArgumentError("arguments must be a JSON object")
            result = run_tool(tool_name, ToolCall(store, args, provenance, self.home))
            if tool_name == "fact_store" and args.get("action") in ("add", "update", "remove"):
                self._bump()
        except MemoryportError as exc:
            result = exc.to_dict()
        except Exception as exc:  # the tool edge: a provider bug must not crash the turn
            log.exception("%s failed", tool_name)
            result = tool_error(f"{tool_name} failed: {exc}", type(exc).__name__)
        return json.dumps(result, ensure_ascii=False, default=str)

    # ------------------------------------------------------------------ recall
    def _generation(self) -> int:
        with self._lock:
            return self._writes

    def _bump(self) -> None:
        with self._lock:
            self._writes += 1

    def recall_items(self, query: str) -> tuple[list[Fact], list[TurnHit]]:
        """The facts and past turns recalled for ``query``, best first: exactly what
        ``prefetch`` renders (within its character budget) and what the LoCoMo benchmark
        scores (turns by their ``source_id``). Turns scoring under ``recall_floor`` times
        the best turn's score are left out."""
        store, turns = self.store, self.turns
        if store is None or not query.strip():
            return [], []
        n_facts, n_turns = self.settings.recall_facts, self.settings.recall_turns
        deadline = time.monotonic() + SYNC_WAIT
        hits: list[TurnHit] = []
        if turns is not None and n_turns:
            self._wait_for_sync("_storing", deadline)
            hits = turns.search(query, limit=n_turns, user_id=self._context.user_id or None)
        self._wait_for_sync("_syncing", deadline)  # and the facts it states
        facts = store.search(query, limit=n_facts) if n_facts else []
        if hits and self.settings.recall_floor > 0:
            floor = self.settings.recall_floor * max(h.score for h in hits)
            hits = [h for h in hits if h.score >= floor]
        return facts, hits

    def _recall(self, store: FactStore, query: str) -> str:
        facts, hits = self.recall_items(query)
        if facts:
            # Counted in memory: a write per recall would cost the turn a transaction.
            # Written with the next facts written, a tool call, compression, session end or
            # shutdown, or by a turn's sync once a batch waits (RETRIEVALS_BATCH / _AGE).
            with self._lock:
                if not self._retrievals:
                    self._retrieved_at = time.monotonic()
                self._retrievals.extend(f.id for f in facts)
        return render(facts, hits, self.settings.recall_chars)

    def _flush_retrievals(self, store: FactStore, *, due: bool = False) -> None:
        """Write the retrieval counts recall kept in memory (kept on failure); ``due``:
        only when :data:`RETRIEVALS_BATCH` ids or :data:`RETRIEVALS_AGE` seconds wait."""
        with self._lock:
            if due and len(self._retrievals) < RETRIEVALS_BATCH and (
                    time.monotonic() - self._retrieved_at < RETRIEVALS_AGE):
                return
            pending, self._retrievals = self._retrievals, []
        if not pending:
            return
        try:
            store.mark_retrieved(pending)
        except MemoryportError:
            log.warning("holographic could not count retrievals", exc_info=True)
            with self._lock:
                self._retrievals[:0] = pending

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """What :meth:`recall_items` returns for ``query`` (facts, then past turns),
        rendered within the character budget ("" in ``tools`` mode)."""
        store = self.store
        if store is None or not self.settings.inject or not query.strip():
            return ""
        key = session_id or self._context.session_id
        generation = self._generation()
        with self._lock:
            warm = self._warm.get(key)
            busy = self._syncing  # a turn being stored: recall afresh (it waits for it)
        if warm and not busy and warm[0] == query and warm[1] == generation:
            return warm[2]
        try:
            text = self._recall(store, query)
        except (MemoryportError, ValueError):
            log.warning("holographic recall failed", exc_info=True)
            return ""
        with self._lock:
            self._warm[key] = (query, generation, text)
        return text

    def _wait_for_sync(self, part: str, deadline: float) -> None:
        """Wait until no ``sync_turn`` is still at ``part`` (``"_storing"`` its turns, or
        ``"_syncing"`` at all), at most until ``deadline`` (``time.monotonic()``).

        A recall that starts while the previous turn is being stored thus sees that
        turn (and the facts it states), and the two do not run at once: on a 2-core
        CPU they slowed each other's SQLite and Python work by more than the rest of the
        sync takes (``benchmarks/bench_turn.py`` with no model wait). The turn search
        waits only for the turns; the retrieval counts and facts written after them
        are done by the time the fact search (second) starts."""
        with self._synced:
            while getattr(self, part):
                left = deadline - time.monotonic()
                if left <= 0 or not self._synced.wait(left):
                    return

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        """Drop every warmed recall; follow the new session id."""
        with self._lock:
            self._warm.clear()
        self._context = self._context.switched(new_session_id,
                                               str(kwargs.get("parent_session_id") or ""))

    # ------------------------------------------------------------------ writes
    def _writable(self) -> FactStore | None:
        if self._context.agent_context not in ("primary", ""):
            return None
        return self.store

    def _store_all(self, store: FactStore, items: list[FactInput], *,
                   catch_up: bool = False) -> int:
        """Store ``items`` in one transaction (one by one when the batch fails, so one bad
        fact does not lose the others); return how many were new. ``catch_up``: facts
        already recorded from their session (even retired since) are skipped."""
        if not items:
            return 0
        try:
            results = store.add_many(items, once_per_session=catch_up)
        except MemoryportError:
            results = []
            for item in items:
                try:
                    results += store.add_many([item], once_per_session=catch_up)
                except MemoryportError:
                    log.warning("holographic could not store a fact", exc_info=True)
        added = sum(result.status == "added" for result in results)
        if added:
            self._bump()
        return added

    def sync_turn(
        self, user_content: str, assistant_content: str, *, session_id: str = "",
        **kwargs: Any,
    ) -> None:
        """Store the turn (both sides, in the turn index) and the facts the user states
        in it. Keywords for imported conversations: ``timestamp`` (epoch seconds of the
        turn), ``speaker`` (who "I" is; default ``user``), ``assistant_speaker``
        (default ``assistant``) and ``source_id`` (the message id)."""
        with self._lock:
            self._storing += 1
            self._syncing += 1
        pending = True

        def stored() -> None:  # the turns are stored (or will not be): once per call
            nonlocal pending
            if pending:
                pending = False
                with self._synced:
                    self._storing -= 1
                    self._synced.notify_all()

        try:
            self._sync_turn(user_content, assistant_content, session_id, kwargs, stored)
        finally:
            stored()
            with self._synced:
                self._syncing -= 1
                self._synced.notify_all()

    def _sync_turn(self, user_content: str, assistant_content: str, session_id: str,
                   kwargs: dict[str, Any], stored: Callable[[], None]) -> None:
        store = self._writable()
        if store is None:
            return
        stamp = kwargs.get("timestamp")
        timestamp = float(stamp) if isinstance(stamp, int | float) else time.time()
        session = session_id or self._context.session_id or "default"
        source_id = str(kwargs.get("source_id") or "")
        speaker = str(kwargs.get("speaker") or "user")
        # The turns first: a recall waiting for them starts its turn search as soon as
        # they are stored (its fact search, second, waits for the rest of this sync).
        self._store_turns(session, speaker, str(kwargs.get("assistant_speaker") or "assistant"),
                          user_content, assistant_content, timestamp, source_id)
        stored()
        items: list[FactInput] = []
        if self.settings.auto_extract:
            provenance = Provenance(session, source_id, "turn", "extractor")
            items = facts_in_text(user_content or "", speaker=speaker, provenance=provenance,
                                  timestamp=timestamp, home=self.home)
        # Retrieval counts wait for a write of facts (or a batch): not a transaction per turn.
        self._flush_retrievals(store, due=not items)
        self._store_all(store, items)

    def _store_turns(self, session: str, speaker: str, assistant: str, user_text: str,
                     reply: str, timestamp: float, source_id: str) -> None:
        turns = self.turns
        if turns is None:
            return
        user_id = self._context.user_id or None
        rows = [TurnInput(session, speaker, text, timestamp, source_id, user_id)
                for speaker, text in ((speaker, user_text), (assistant, reply))
                if isinstance(text, str) and text.strip()]
        if not rows:
            return
        try:
            turns.add_turns(rows)
            self._bump()
        except (MemoryportError, ValueError):
            log.warning("holographic could not store a turn", exc_info=True)
            return
        try:
            # What the next recall's turn search would read first (the new turns' rows and
            # postings), read now: while that recall waits for these turns anyway (no wait
            # between turns) or, in an agent, while the user reads the reply.
            turns.catch_up()
        except MemoryportError:
            log.debug("holographic: the turn index will catch up at its next search",
                      exc_info=True)

    def _extract(self, messages: list[Message], source_kind: str) -> None:
        store = self._writable()
        if store is None or not self.settings.auto_extract or not isinstance(messages, list):
            return
        self._flush_retrievals(store)
        items = facts_in_messages(messages, session_id=self._context.session_id,
                                  source_kind=source_kind, home=self.home)
        self._store_all(store, items + self._llm_items(messages, source_kind), catch_up=True)

    def _llm_items(self, messages: list[Message], source_kind: str) -> list[FactInput]:
        """The llm extractor's facts (``extractor: llm``); [] when it is off or fails (the
        rules' facts are stored either way)."""
        config = self.settings.llm_config()
        if config is None:
            return []
        from memoryport.providers.holographic.llm_extract import LLMExtractError, llm_facts

        try:
            return llm_facts(messages, config=config, session_id=self._context.session_id,
                             source_kind=source_kind, home=self.home)
        except LLMExtractError as exc:
            log.warning("holographic: the llm extractor failed, keeping the rules' facts"
                        " only: %s", exc)
        except Exception as exc:  # never lose the rules' facts to an extractor bug
            log.warning("holographic: the llm extractor failed (%s), keeping the rules'"
                        " facts only", type(exc).__name__)
        return []

    def on_pre_compress(self, messages: list[Message]) -> str:
        """Keep the facts stated in the messages being compressed away."""
        self._extract(messages, "pre_compress")
        return ""

    def on_session_end(self, messages: list[Message]) -> None:
        """Keep the facts stated in the ended session."""
        self._extract(messages, "session_end")

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """Mirror a curated write: add adds, replace updates (or adds when the old entry is
        not here), remove retires the matching fact."""
        store = self._writable()
        if store is None:
            return
        meta = metadata or {}
        provenance = Provenance(str(meta.get("session_id") or self._context.session_id),
                                str(meta.get("tool_call_id") or ""), "curated_mirror",
                                str(meta.get("source") or "memory_tool"))
        category = "user_pref" if target == "user" else "general"
        self._flush_retrievals(store)
        try:
            self._mirror(store, action, category, content, meta, provenance)
        except MemoryportError:
            log.warning("holographic could not mirror a memory %s", action, exc_info=True)
        self._bump()

    def _mirror(self, store: FactStore, action: str, category: str, content: str,
                meta: dict[str, Any], provenance: Provenance) -> None:
        old_text = str(meta.get("previous") or meta.get("removed") or meta.get("old_text") or "")
        old = store.find_live(old_text) if old_text and action in ("replace", "remove") else None
        if action == "remove":
            if old is not None:
                store.remove(old.id, provenance=provenance)
        elif action == "replace" and old is not None and content.strip():
            store.update(old.id, content=content, provenance=provenance)
        elif action in ("add", "replace") and content.strip():
            store.add(FactInput(content, category, "", None, None, provenance,
                                source_text=content))

    # ------------------------------------------------------------------ portability
    def export(self, directory: Path, *, home: Path) -> dict[str, Any]:
        """``PortableProvider`` hook: write the facts and turns of ``home`` under
        ``directory`` (``memoryport export``; see ``providers.holographic.portable``)."""
        from memoryport.providers.holographic.portable import export_home

        return export_home(home, directory, DB_NAME)

    def import_(self, directory: Path, *, home: Path, source: str) -> dict[str, Any]:
        """``PortableProvider`` hook: restore (empty store) or merge what ``export``
        wrote; each fact written records ``source`` in an ``import`` revision (SQLite
        or PostgreSQL, as ``storage.backend`` says)."""
        from memoryport.providers.holographic.portable import import_home

        return import_home(home, directory, source=source, db_name=DB_NAME)

    def shutdown(self) -> None:
        """Write pending retrieval counts and close the store (idempotent)."""
        if self.store is not None:
            self._flush_retrievals(self.store)
        store, self.store = self.store, None
        turns, self.turns = self.turns, None
        with self._lock:
            self._warm.clear()
        if store is not None:
            store.close()
        if turns is not None:
            turns.close()
