"""The official ``supermemory`` SDK (5.x, namespaced API), wrapped so every failure is
one :class:`BackendError` naming ``supermemory`` and never quoting the API key.

Calls used: ``add`` (``POST /ns/{ns}/document``), ``search`` (``POST /ns/{ns}/search``),
``profile`` (``POST /ns/{ns}/profile``), ``memories.forget`` (``DELETE /ns/{ns}/memories``)
and ``memories.forget_matching`` (``DELETE /ns/{ns}/memories/semantic``). The SDK's own
retries are off (``max_retries=0``): writes retry in the provider's outbox, and recall has
the turn's deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from memoryport.storage.jsonl_outbox import BackendError

__all__ = ["SupermemoryClient", "plain"]

T = TypeVar("T")
_RETRYABLE = {408, 425, 429}


def plain(value: Any) -> Any:
    """An SDK model as JSON-ready data (aliases as the API spells them)."""
    if hasattr(value, "dict"):
        return plain(value.dict(by_alias=True))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


class SupermemoryClient:
    """One SDK client (one connection pool) per provider."""

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float) -> None:
        from supermemory import Supermemory

        self._key = api_key
        self.base_url = base_url.rstrip("/")
        self.sdk = Supermemory(api_key=api_key, base_url=self.base_url, timeout=timeout_s,
                               max_retries=0)

    def close(self) -> None:
        """Close the connection pool."""
        http = getattr(getattr(self.sdk, "_client_wrapper", None), "httpx_client", None)
        inner = getattr(http, "httpx_client", None)
        if isinstance(inner, httpx.Client):
            inner.close()

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one SDK call; map every failure to :class:`BackendError`."""
        import supermemory
        from supermemory.core.api_error import ApiError
        from supermemory.core.parse_error import ParsingError

        try:
            return fn(*args, **kwargs)
        except (httpx.TimeoutException, supermemory.APITimeoutError):
            raise self._error(f"did not answer {what} in time", True) from None
        except (httpx.HTTPError, supermemory.APIConnectionError) as exc:
            raise self._error(f"is unreachable at {self.base_url} ({type(exc).__name__})",
                              True) from None
        except (ParsingError, supermemory.APIResponseValidationError, ValueError):
            raise self._error(f"answered {what} with a malformed body", True) from None
        except (ApiError, supermemory.SupermemoryError) as exc:
            raise self._status_error(what, exc) from None

    def _status_error(self, what: str, exc: Exception) -> BackendError:
        status = int(getattr(exc, "status_code", 0) or 0)
        if status < 400:
            return self._error(f"answered {what} with a malformed body", True)
        body = getattr(exc, "body", None)
        detail = str(body)[:200].replace(self._key, "***") if body else ""
        hint = " (check SUPERMEMORY_API_KEY)" if status in (401, 403) else ""
        return self._error(f"answered HTTP {status} to {what}{hint}"
                           + (f": {detail}" if detail else ""),
                           status >= 500 or status in _RETRYABLE, status)

    def _error(self, text: str, retryable: bool, status: int = 0) -> BackendError:
        return BackendError(f"supermemory {text}", provider="supermemory",
                            retryable=retryable, status=status)

    # ------------------------------------------------------------------ endpoints
    def add(self, namespace: str, content: str, **kwargs: Any) -> Any:
        """Store a document (memories are extracted from it server-side)."""
        return plain(self.call("add", self.sdk.add, namespace, content=content, **kwargs))

    def search(self, namespace: str, query: str, *, limit: int, mode: str) -> Any:
        """Semantic search; ``mode`` is hybrid, memories or chunks."""
        return plain(self.call("search", self.sdk.search, namespace, query=query,
                               limit=limit, search_mode=mode))

    def profile(self, namespace: str) -> Any:
        """The profile: static and dynamic facts."""
        return plain(self.call("profile", self.sdk.profile, namespace))

    def forget(self, namespace: str, ids: list[str]) -> Any:
        """Forget memories by id."""
        return plain(self.call("forget", self.sdk.memories.forget, namespace, ids=ids))

    def forget_matching(self, namespace: str, query: str) -> Any:
        """Forget the memories matching ``query``."""
        return plain(self.call("forget", self.sdk.memories.forget_matching, namespace,
                               query=query, dry_run=False))
