"""RetainDB's HTTP API over ``httpx`` (RetainDB publishes no Python SDK).

Endpoints (the cloud API at ``https://api.retaindb.com`` and RetainDB Server share them):
``POST /v1/memory`` (store one), ``POST /v1/memory/search`` (hybrid search),
``POST /v1/context/query`` (packed context; ``previous_context_hash`` asks for a delta),
``POST /v1/memory/ingest/session`` (conversation messages), ``GET
/v1/memory/profile/{user_id}`` and ``DELETE /v1/memory/{id}``. Authentication is
``Authorization: Bearer <RETAINDB_API_KEY>``.

Every failure is a :class:`BackendError` whose message names ``retaindb`` and never
contains the API key (the backend's own error text is quoted with the key masked).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from memoryport.storage.jsonl_outbox import BackendError

__all__ = ["RetainDBClient", "redact"]

_RETRYABLE = {408, 425, 429}


def redact(text: str, *secrets: str) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class RetainDBClient:
    """A thin synchronous client; one ``httpx.Client`` (connection pool) per provider."""

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self._http = httpx.Client(
            base_url=self.base_url, timeout=httpx.Timeout(timeout_s),
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "memoryport-retaindb"},
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def request(self, method: str, path: str, *, json: Any = None,
                params: dict[str, str] | None = None) -> Any:
        """One call; the decoded JSON answer, or :class:`BackendError`."""
        try:
            response = self._http.request(method, path, json=json, params=params)
        except httpx.TimeoutException:
            raise BackendError(f"retaindb did not answer {method} {path} in time",
                               provider="retaindb", retryable=True) from None
        except httpx.HTTPError as exc:
            raise BackendError(
                f"retaindb is unreachable at {self.base_url} ({type(exc).__name__})",
                provider="retaindb", retryable=True) from None
        if response.status_code >= 400:
            detail = redact(response.text[:200], self._key).strip()
            hint = " (check RETAINDB_API_KEY)" if response.status_code in (401, 403) else ""
            raise BackendError(
                f"retaindb answered HTTP {response.status_code} to {method} {path}{hint}"
                + (f": {detail}" if detail else ""), provider="retaindb",
                retryable=response.status_code >= 500 or response.status_code in _RETRYABLE,
                status=response.status_code)
        try:
            return response.json() if response.content else {}
        except ValueError:
            raise BackendError(f"retaindb answered {method} {path} with a malformed body",
                               provider="retaindb", retryable=True) from None

    # ------------------------------------------------------------------ endpoints
    def add_memory(self, body: dict[str, Any]) -> Any:
        """``POST /v1/memory``."""
        return self.request("POST", "/v1/memory", json=body)

    def search(self, body: dict[str, Any]) -> Any:
        """``POST /v1/memory/search``."""
        return self.request("POST", "/v1/memory/search", json=body)

    def context(self, body: dict[str, Any]) -> Any:
        """``POST /v1/context/query``."""
        return self.request("POST", "/v1/context/query", json=body)

    def ingest_session(self, body: dict[str, Any]) -> Any:
        """``POST /v1/memory/ingest/session``."""
        return self.request("POST", "/v1/memory/ingest/session", json=body)

    def profile(self, user_id: str, project: str) -> Any:
        """``GET /v1/memory/profile/{user_id}``."""
        return self.request("GET", f"/v1/memory/profile/{quote(user_id, safe='')}",
                            params={"project": project})

    def forget(self, memory_id: str) -> Any:
        """``DELETE /v1/memory/{id}``."""
        return self.request("DELETE", f"/v1/memory/{quote(memory_id, safe='')}")
