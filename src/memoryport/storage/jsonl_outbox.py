"""A durable, ordered write queue in JSONL that sends on every put, with retry and backoff
(no thread of its own; used by the hindsight, supermemory, openviking, retaindb and
byterover providers; ``outbox`` is the SQLite variant flushed by the provider).

Writes (turns, mirrored memory writes) are appended to ``outbox.jsonl`` under the
provider's directory in the home before they are sent, and removed only once the backend
accepted them. A write hook (running on the manager's ordered background queue) calls
:meth:`Outbox.put`, which sends everything pending in order: a transient failure
(connection refused or dropped, timeout, 408/429/5xx, an unreadable answer) is retried
with exponential backoff ``attempts`` times; what still fails stays on disk and is sent
first by the next write, by ``shutdown`` and by the next process. A permanent failure
(any other 4xx) is not retried: the item moves to ``rejected.jsonl`` beside it, with the
reason, so nothing is dropped silently. After a failed round the outbox waits
``cooldown_s`` before it sleeps through backoff again, so a down backend never holds
the queue for long.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryport._fs import ensure_private_dir
from memoryport.errors import ProviderError

__all__ = ["BackendError", "Outbox"]


class BackendError(ProviderError):
    """The backend failed a call. ``retryable``: worth sending again later."""

    def __init__(self, message: str, *, provider: str, retryable: bool, status: int = 0) -> None:
        super().__init__(message, provider=provider)
        self.retryable = retryable
        self.status = status


class Outbox:
    """Pending writes in order, on disk; ``send(item)`` delivers one (raising
    :class:`BackendError` on failure)."""

    def __init__(self, directory: Path, send: Callable[[dict[str, Any]], Any], *,
                 attempts: int = 3, backoff_s: float = 0.5, cooldown_s: float = 30.0,
                 log: logging.Logger | None = None) -> None:
        self.path = ensure_private_dir(directory) / "outbox.jsonl"
        self.rejected_path = directory / "rejected.jsonl"
        self._send = send
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.cooldown_s = cooldown_s
        self._log = log or logging.getLogger(__name__)
        self._lock = threading.RLock()
        self._failed_at = 0.0
        self.sent = 0
        self.pending: list[dict[str, Any]] = self._read()

    def _read(self) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        items: list[dict[str, Any]] = []
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a torn last line from a crash mid-write
            if isinstance(item, dict):
                items.append(item)
        return items

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(i, ensure_ascii=False) + "\n" for i in self.pending)
        os.replace(tmp, self.path)

    def put(self, item: dict[str, Any]) -> int:
        """Queue ``item`` (on disk) and send everything pending; return how many were sent."""
        with self._lock:
            self.pending.append(item)
            self._save()
        return self.flush()

    def flush(self, *, patient: bool = True) -> int:
        """Send the pending items in order; stop at the first that still fails after the
        retries (``patient=False``: one attempt each, no sleeping, e.g. at shutdown)."""
        with self._lock:
            cooling = time.monotonic() - self._failed_at < self.cooldown_s
            tries = self.attempts if patient and not cooling else 1
            done = 0
            while self.pending:
                if not self._deliver(self.pending[0], tries):
                    self._failed_at = time.monotonic()
                    break
                self.pending.pop(0)
                self._save()
                done += 1
            self.sent += done
            return done

    def _deliver(self, item: dict[str, Any], tries: int) -> bool:
        for attempt in range(tries):
            try:
                self._send(item)
                return True
            except BackendError as exc:
                if not exc.retryable:
                    self._reject(item, str(exc))
                    return True
                self._log.warning("%s (attempt %d of %d; %d writes pending)", exc,
                                  attempt + 1, tries, len(self.pending))
            if attempt + 1 < tries:
                time.sleep(self.backoff_s * (2 ** attempt))
        return False

    def _reject(self, item: dict[str, Any], reason: str) -> None:
        self._log.error("%s: the write was refused and kept in %s", reason, self.rejected_path)
        fd = os.open(self.rejected_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"reason": reason, "item": item}, ensure_ascii=False) + "\n")
