"""The HTTP calls the ``mentisdb`` provider makes (``httpx``), with errors that name the
daemon's URL and never a credential."""

from __future__ import annotations

from typing import Any

from memoryport.errors import ProviderError

__all__ = ["MentisClient"]


class MentisClient:
    """``POST /v1/search``, ``POST /v1/thoughts`` and ``GET /health`` on one daemon."""

    def __init__(self, url: str, shown_url: str, api_key: str, timeout_s: float) -> None:
        import httpx

        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.shown_url = shown_url
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        import httpx

        where = f"mentisdb at {self.shown_url}{path}"
        try:
            response = self._http.request(method, path, json=body)
        except httpx.TimeoutException:
            raise ProviderError(f"{where}: no answer within the timeout (is the daemon"
                                " overloaded? raise mentisdb.timeout_s)", provider="mentisdb"
                                ) from None
        except httpx.HTTPError as exc:
            raise ProviderError(f"{where}: {type(exc).__name__} (is mentisdbd running?"
                                " start it with: mentisdbd &)", provider="mentisdb") from None
        if response.status_code >= 400:
            raise ProviderError(f"{where}: HTTP {response.status_code}", provider="mentisdb")
        try:
            return response.json() if response.content else {}
        except ValueError:
            raise ProviderError(f"{where}: the answer is not valid JSON (HTTP"
                                f" {response.status_code}, {len(response.content)} bytes)",
                                provider="mentisdb") from None

    def search(self, query: str, limit: int, chain_key: str) -> list[dict[str, Any]]:
        """The thoughts matching ``query``, best first."""
        data = self._request("POST", "/v1/search",
                             {"query": query, "limit": limit, "chain_key": chain_key})
        thoughts = data.get("thoughts") if isinstance(data, dict) else None
        if not isinstance(thoughts, list):
            raise ProviderError(f"mentisdb at {self.shown_url}/v1/search: the answer has no"
                                " 'thoughts' list", provider="mentisdb")
        return [t for t in thoughts if isinstance(t, dict) and isinstance(t.get("content"), str)]

    def append(self, body: dict[str, Any]) -> None:
        """Append one thought (``content``, ``thought_type``, ``chain_key``, ``tags``)."""
        self._request("POST", "/v1/thoughts", body)

    def health(self) -> dict[str, Any]:
        """``GET /health`` (raises ``ProviderError`` naming the URL when unreachable)."""
        data = self._request("GET", "/health")
        return data if isinstance(data, dict) else {"status": data}

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()
