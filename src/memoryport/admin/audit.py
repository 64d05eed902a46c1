"""The audit log for shells and the core: record every read and write of memory, query it.

Each shell passes its label (``Memory.platform``: ``cli``, ``mcp``, ``ui``, ``api``,
the agent's platform): ``Memory`` records every tool call (``memory`` writes with the
revision id they made, ``session_search`` and provider tools) and every recall injection
(a read: which provider's items were shown to the model in which turn); the UI records
its page reads and its writes. Recording never breaks the caller: a failure is logged
and the call goes on. Storage: ``memoryport.storage.audit`` (``<home>/audit.db``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryport.errors import MemoryportError
from memoryport.providers.curated.backends import audit_log_for, uses_postgres
from memoryport.storage.audit import DB_NAME, DEFAULT_RETENTION_DAYS, AuditEvent, AuditLog
from memoryport.types import ContextPair, SessionContext

__all__ = [
    "DB_NAME",
    "DEFAULT_RETENTION_DAYS",
    "AuditEvent",
    "audit_log",
    "events",
    "is_read_call",
    "log_path",
    "log_recall",
    "log_tool_call",
    "parse_since",
    "record",
    "retention_days",
    "set_retention_days",
]

log = logging.getLogger(__name__)

EXCERPT = 300
"""Characters of each recalled item kept in a recall event's detail."""

READ_ACTIONS = frozenset({
    "search", "probe", "related", "reason", "contradict", "list", "history", "why", "get",
    "read", "query", "recall", "find", "show", "status", "lookup", "fetch",
})
"""A provider tool call whose ``action`` is one of these reads memory (runs when paused)."""

READ_TOOLS = frozenset({"session_search"})
"""Tools that only read."""

OPEN_LOGS = 8
"""Audit files kept open per process (the least recently used beyond this are closed;
a closed one reopens on its next use)."""

_logs: OrderedDict[tuple[Path, int], AuditLog] = OrderedDict()
_logs_lock = threading.Lock()


@functools.lru_cache(maxsize=64)
def log_path(home: Path) -> Path:
    """``<home>/audit.db`` (the path object kept per home: asked for at every turn)."""
    return Path(home) / DB_NAME


def audit_log(home: Path) -> AuditLog:
    """The audit log of ``home``, kept open per process (created on first use)."""
    key = (log_path(home), os.getpid())
    with _logs_lock:
        found = _logs.get(key)
        if found is None:
            found = _logs[key] = audit_log_for(home)
        _logs.move_to_end(key)
        while len(_logs) > OPEN_LOGS:
            _, evicted = _logs.popitem(last=False)
            evicted.close()
        return found


def record(home: Path, shell: str, kind: str, action: str, *, target: str = "",
           session_id: str = "", user_id: str = "", revision: str = "",
           detail: str = "") -> None:
    """Append one event; a failure is logged, never raised (auditing must not stop a turn)."""
    try:
        audit_log(home).append(shell=shell or "api", kind=kind, action=action, target=target,
                               session_id=session_id, user_id=user_id, revision=revision,
                               detail=detail)
    except Exception as exc:  # any failure: auditing must never stop a turn or a write
        log.warning("audit: could not record %s %s: %s", kind, action, exc)


def is_read_call(name: str, args: Any) -> bool:
    """True when a tool call only reads memory (``session_search``; a provider tool whose
    ``action`` is a read such as ``search`` or ``list``)."""
    if name in READ_TOOLS:
        return True
    if name == "memory":
        return False
    action = args.get("action") if isinstance(args, Mapping) else None
    if isinstance(action, str):
        return action.strip().lower() in READ_ACTIONS
    return any(word in name.lower() for word in ("search", "recall", "list", "query"))


def _latest_revision(curated: Any, target: str) -> str:
    store = getattr(curated, "store", None)
    try:
        number = store.latest_rev(target) if store is not None else None
    except (MemoryportError, OSError, ValueError):
        return ""
    return f"{target}:{number}" if number is not None else ""


def _targets(args: Any) -> list[str]:
    if not isinstance(args, Mapping):
        return []
    found = [str(args.get("target") or "memory")] if args.get("action") else []
    for op in args.get("operations") or []:
        if isinstance(op, Mapping):
            found.append(str(op.get("target") or args.get("target") or "memory"))
    return list(dict.fromkeys(found))


def log_tool_call(home: Path, shell: str, context: SessionContext, name: str, args: Any,
                  result: str, curated: Any = None) -> None:
    """Record one tool call: a read, or a write with the revision a ``memory`` write made
    (``refused`` when the tool said ``success: false``)."""
    try:
        parsed = json.loads(result)
    except ValueError:
        parsed = {}
    failed = isinstance(parsed, dict) and parsed.get("success") is False
    kind = "read" if is_read_call(name, args) else "write"
    action = name if not isinstance(args, Mapping) else (
        f"{name}.{args['action']}" if isinstance(args.get("action"), str) else name)
    targets = _targets(args) if name == "memory" else []
    revision = "" if failed or not targets else ",".join(
        r for r in (_latest_revision(curated, t) for t in targets) if r)
    detail = json.dumps(args, ensure_ascii=False, default=str)[:EXCERPT * 2]
    if failed:
        detail = f"refused: {parsed.get('error', '')}"[:EXCERPT * 2]
    record(home, shell, kind, action if not failed else f"{action} (refused)",
           target=",".join(targets), session_id=context.session_id, user_id=context.user_id,
           revision=revision, detail=detail)


def log_recall(home: Path, shell: str, context: SessionContext, turn: int,
               contexts: Sequence[ContextPair]) -> None:
    """Record a recall injection as a read: the turn, and each provider's item excerpt."""
    if not contexts:
        return
    items = [{"provider": p, "text": t[:EXCERPT]} for p, t in contexts]
    record(home, shell, "read", "recall", target=",".join(p for p, _ in contexts),
           session_id=context.session_id, user_id=context.user_id,
           detail=json.dumps({"turn": turn, "items": items}, ensure_ascii=False))


_RELATIVE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_since(text: str, now: float | None = None) -> float:
    """``"30m"``, ``"12h"``, ``"7d"``, ``"2w"`` ago, or an ISO date / date-time (UTC when no
    zone) as a Unix time. ``ValueError`` saying what is accepted otherwise."""
    now = time.time() if now is None else now
    match = _RELATIVE.match(text)
    if match:
        return now - int(match.group(1)) * _UNITS[match.group(2)]
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"invalid time {text!r}: use a duration such as 30m, 12h, 7d, 2w or an ISO date "
            "such as 2026-01-31 or 2026-01-31T08:00"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def events(home: Path, *, since: float | None = None, shell: str | None = None,
           kind: str | None = None, action: str | None = None, limit: int = 100,
           offset: int = 0) -> list[AuditEvent]:
    """Recorded events newest first (nothing is created when there is no log yet)."""
    if not (Path(home) / DB_NAME).exists() and not uses_postgres(home):
        return []
    return audit_log(home).events(since=since, shell=shell, kind=kind, action=action,
                                  limit=limit, offset=offset)


def retention_days(home: Path) -> int:
    """Days events are kept (0: forever; ``DEFAULT_RETENTION_DAYS`` until set)."""
    if not (Path(home) / DB_NAME).exists() and not uses_postgres(home):
        return DEFAULT_RETENTION_DAYS
    return audit_log(home).retention_days()


def set_retention_days(home: Path, days: int) -> int:
    """Keep events ``days`` days (0: forever); prune now; return the events removed."""
    return audit_log(home).set_retention_days(days)
