"""The ``hindsight-client`` SDK, called so that it needs no thread or loop of its own.

The SDK's sync methods use whatever event loop the calling thread has, with an
``aiohttp`` session bound to it, which breaks when the manager calls a provider from
different worker threads. So each calling thread (the manager's lane and queue threads)
gets its own private event loop and SDK client, kept for the provider's life, and each
call runs the SDK's async method (``aretain``, ``arecall``, ``areflect``) on it with
``run_until_complete`` under one overall timeout. The SDK's own capacity retries are off
(``max_attempts=1``): writes retry in the provider's outbox, and recall has the turn's
deadline. Every failure becomes one :class:`BackendError` naming ``hindsight``, never
quoting the API key.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from memoryport.storage.jsonl_outbox import BackendError

__all__ = ["HindsightClient", "plain"]

T = TypeVar("T")
_RETRYABLE = {408, 425, 429}


def plain(value: Any) -> Any:
    """An SDK model as JSON-ready data."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


class HindsightClient:
    """Calls on one Hindsight server (cloud or self-hosted)."""

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._opened: list[tuple[asyncio.AbstractEventLoop, Any]] = []
        self._lock = threading.Lock()

    def _loop_and_client(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        from hindsight_client import Hindsight

        loop = getattr(self._local, "loop", None)
        if loop is None or loop.is_closed():
            loop = asyncio.new_event_loop()
            client = Hindsight(base_url=self.base_url, api_key=self._key or None,
                               timeout=self.timeout_s, max_attempts=1)
            self._local.loop, self._local.client = loop, client
            with self._lock:
                self._opened.append((loop, client))
        return loop, self._local.client

    def call(self, what: str, op: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``op(client)`` on this thread's loop and client; map failures."""
        try:
            loop, client = self._loop_and_client()
            return loop.run_until_complete(asyncio.wait_for(op(client), self.timeout_s))
        except Exception as exc:
            raise self._error(what, exc) from None

    def close(self) -> None:
        """Close every thread's client and loop (those not running right now)."""
        with self._lock:
            opened, self._opened = self._opened, []
        for loop, client in opened:
            if loop.is_running() or loop.is_closed():
                continue
            try:
                loop.run_until_complete(client.aclose())
            except Exception:  # closing is best effort: the server may be gone
                pass
            loop.close()

    def _error(self, what: str, exc: Exception) -> BackendError:
        import aiohttp
        from hindsight_client_api.exceptions import ApiException

        if isinstance(exc, asyncio.TimeoutError | TimeoutError):
            return self._make(f"did not answer {what} in time", True)
        if isinstance(exc, ApiException) and exc.status:
            status = int(exc.status)
            detail = str(exc.body or "")[:200].replace(self._key or "\x00", "***").strip()
            hint = " (check HINDSIGHT_API_KEY)" if status in (401, 403) else ""
            return self._make(f"answered HTTP {status} to {what}{hint}"
                              + (f": {detail}" if detail else ""),
                              status >= 500 or status in _RETRYABLE, status)
        if isinstance(exc, aiohttp.ClientError | ConnectionError):
            return self._make(f"is unreachable at {self.base_url} ({type(exc).__name__})",
                              True)
        return self._make(f"answered {what} with a malformed body ({type(exc).__name__})",
                          True)

    @staticmethod
    def _make(text: str, retryable: bool, status: int = 0) -> BackendError:
        return BackendError(f"hindsight {text}", provider="hindsight", retryable=retryable,
                            status=status)

    # ------------------------------------------------------------------ calls
    def retain(self, bank: str, content: str, **kwargs: Any) -> Any:
        """Store ``content`` in ``bank`` (facts and entities are extracted server-side)."""
        return plain(self.call("retain", lambda c: c.aretain(bank, content, **kwargs)))

    def recall(self, bank: str, query: str, *, budget: str, max_tokens: int) -> Any:
        """The memories of ``bank`` matching ``query``."""
        return plain(self.call("recall", lambda c: c.arecall(
            bank, query, budget=budget, max_tokens=max_tokens)))

    def reflect(self, bank: str, query: str, *, budget: str) -> Any:
        """A synthesized answer from ``bank``'s memories."""
        return plain(self.call("reflect", lambda c: c.areflect(bank, query, budget=budget)))
