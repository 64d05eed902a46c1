"""Pause memory: stop all memory writes and/or recall injection for a home until resumed.

The switch is a small file, ``<home>/pause.json``, so every process and every shell on the
home honours it (the agent, the CLI, the MCP server, the UI): ``Memory`` reads it (one
``stat`` per check, the file is re-read only when it changed) and

- with **writes** paused, refuses memory tool writes with a clear tool error (reads such
  as ``session_search`` or a ``fact_store`` search still run) and holds every completed
  turn's provider sync in the audit file (``held_syncs``) instead of delivering it; the
  first turn that ends after the resume delivers the held syncs of its user first, in
  order. The session transcript itself is still stored (it is the conversation record;
  forget it from the Sessions page or ``memoryport sessions forget``);
- with **recall** paused, injects no ``<memory-context>`` block into any turn (providers
  are not asked to prefetch).

``memoryport status`` and the UI show the state.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from memoryport.admin.audit import audit_log, is_read_call, log_path, record
from memoryport.errors import MemoryportError, MemoryStoreError, tool_error_json
from memoryport.providers.curated.backends import uses_postgres
from memoryport.storage.audit import HeldSync
from memoryport.types import SessionContext

__all__ = [
    "PAUSE_FILE",
    "MemoryPaused",
    "PauseState",
    "check_writes",
    "is_read_call",
    "pause",
    "pause_state",
    "refuse_tool",
    "resume",
    "sync_or_hold",
]

log = logging.getLogger(__name__)

PAUSE_FILE = "pause.json"
"""The switch's file name under the home."""

RESUME_HINT = (
    "resume them with `memoryport resume`, on the Pause page of `memoryport ui`, or with "
    "memoryport.admin.pause.resume(home)"
)


class MemoryPaused(MemoryStoreError):
    """A write refused because memory writes are paused (nothing was changed)."""


@dataclass(frozen=True)
class PauseState:
    """What is paused, since when and by which shell."""

    writes: bool = False
    recall: bool = False
    since: float = 0.0
    by: str = ""
    reason: str = ""

    @property
    def active(self) -> bool:
        """True when anything is paused."""
        return self.writes or self.recall

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON (``active`` included)."""
        return {**asdict(self), "active": self.active}


_cache: dict[Path, tuple[tuple[int, int, int], PauseState]] = {}
_cache_lock = threading.Lock()


@functools.lru_cache(maxsize=64)
def _path(home: Path) -> Path:
    return Path(home) / PAUSE_FILE  # kept per home: read at every turn


def pause_state(home: Path) -> PauseState:
    """The home's pause state (nothing paused when there is no readable pause file)."""
    path = _path(home)
    try:
        info = os.stat(path)
    except OSError:
        return PauseState()
    key = (info.st_ino, info.st_mtime_ns, info.st_size)  # each write is a new inode
    with _cache_lock:
        cached = _cache.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        state = PauseState(
            writes=bool(data.get("writes")), recall=bool(data.get("recall")),
            since=float(data.get("since") or 0.0), by=str(data.get("by") or ""),
            reason=str(data.get("reason") or ""),
        )
    except (OSError, ValueError, AttributeError):
        # A damaged switch fails safe: writes stay paused until someone resumes.
        state = PauseState(writes=True, by="(unreadable pause.json)")
    with _cache_lock:
        _cache[path] = (key, state)
    return state


def pause(home: Path, *, writes: bool = True, recall: bool = False, by: str = "cli",
          reason: str = "") -> PauseState:
    """Pause memory writes and/or recall for every shell on ``home``; return the state.

    ``writes=False, recall=False`` is a resume. The file is replaced atomically.
    """
    if not writes and not recall:
        return resume(home, by=by)
    state = PauseState(writes=writes, recall=recall, since=time.time(), by=by, reason=reason)
    path = _path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{PAUSE_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(state)), encoding="utf-8")
    os.replace(tmp, path)
    record(home, by, "write", "pause", target=_what(state))
    return state


def resume(home: Path, *, by: str = "cli") -> PauseState:
    """Lift every pause on ``home``; held syncs go out with the next completed turn."""
    path = _path(home)
    if path.exists():
        path.unlink()
        record(home, by, "write", "resume")
    return PauseState()


def _what(state: PauseState) -> str:
    return "+".join(name for name, on in (("writes", state.writes), ("recall", state.recall))
                    if on)


def refuse_tool(home: Path, name: str, args: Any) -> str | None:
    """The tool error to return instead of running a write while writes are paused, or
    None when the call may run."""
    state = pause_state(home)
    if not state.writes or is_read_call(name, args):
        return None
    return tool_error_json(
        f"Memory writes are paused (since {_when(state.since)}, by {state.by or '?'}): the "
        f"{name!r} call was not run and nothing was changed. Tell the user; {RESUME_HINT}.",
        "MemoryPaused",
    )


def check_writes(home: Path, what: str = "the change") -> None:
    """``MemoryPaused`` (nothing done) while memory writes are paused: for shell writes
    that do not go through a tool (a restore, a whole-file edit, forgetting history)."""
    state = pause_state(home)
    if state.writes:
        raise MemoryPaused(
            f"Memory writes are paused (since {_when(state.since)}, by {state.by or '?'}); "
            f"{what} was not made: {RESUME_HINT}"
        )


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts)) if ts else "?"


SyncFn = Callable[..., None]


def sync_or_hold(home: Path, sync: SyncFn, query: str, response: str, *, session_id: str,
                 context: SessionContext | None, messages: list[Any]) -> bool:
    """Deliver a completed turn's provider sync, or hold it while writes are paused.

    When writes are not paused, the syncs held for this context's user are delivered
    first (oldest first), then this one. Returns True when this turn was held.
    """
    user = context.user_id if context is not None else ""
    if pause_state(home).writes:
        payload = {"query": query, "response": response, "messages": messages}
        try:
            audit_log(home).hold(user, session_id, payload)
        except MemoryportError as exc:  # the turn is stored; only its sync is lost
            log.warning("writes are paused and the sync of a turn of %s could not be held "
                        "(%s); providers will not see that turn", session_id, exc)
        return True
    for held in _claim(home, user):
        held_context = replace(context, session_id=held.session_id) if context else None
        sync(held.payload["query"], held.payload["response"], session_id=held.session_id,
             context=held_context, messages=held.payload.get("messages") or [])
    sync(query, response, session_id=session_id, context=context, messages=messages)
    return False


def _claim(home: Path, user: str) -> list[HeldSync]:
    """The syncs held for ``user`` (claimed: no other process delivers them); none when
    there is no audit file yet or it cannot be read (they stay for the next turn)."""
    if not log_path(home).exists() and not uses_postgres(home):
        return []
    try:
        audit = audit_log(home)
        return audit.claim_held(user) if audit.has_held(user) else []
    except MemoryportError as exc:
        log.warning("held syncs could not be read (%s); they go out with a later turn", exc)
        return []
