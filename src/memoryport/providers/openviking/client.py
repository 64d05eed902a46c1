"""OpenViking's HTTP API (``/api/v1``) over ``httpx``.

Every answer is an envelope ``{"status": "ok"|"error", "result", "error": {"code",
"message"}}``. Calls used: ``POST /search/find``, ``GET /content/abstract|overview|read``
(the three tiers), ``GET /fs/ls``, ``POST /content/write``, ``POST /resources``,
``POST /sessions/{id}/messages`` and ``POST /sessions/{id}/commit``; ``GET /health``
(server root) for ``status()``. The key, when set,
goes in ``X-API-Key``; the user in ``X-OpenViking-User``. Every failure is one
:class:`BackendError` naming ``openviking`` and never quoting the key.
"""

from __future__ import annotations

from typing import Any

import httpx

from memoryport.storage.jsonl_outbox import BackendError

__all__ = ["OpenVikingClient"]

_RETRYABLE = {408, 425, 429}


class OpenVikingClient:
    """One connection pool to one OpenViking server."""

    def __init__(self, endpoint: str, api_key: str, *, timeout_s: float) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._key = api_key
        headers = {"User-Agent": "memoryport-openviking"}
        if api_key:
            headers["X-API-Key"] = api_key
        self._http = httpx.Client(base_url=f"{self.endpoint}/api/v1", headers=headers,
                                  timeout=httpx.Timeout(timeout_s))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def call(self, method: str, path: str, *, user: str, json: Any = None,
             params: dict[str, Any] | None = None) -> Any:
        """One call; the envelope's ``result``, or :class:`BackendError`."""
        what = f"{method} {path}"
        try:
            response = self._http.request(method, path, json=json, params=params,
                                          headers={"X-OpenViking-User": user})
        except httpx.TimeoutException:
            raise self._error(f"did not answer {what} in time", True) from None
        except httpx.HTTPError as exc:
            raise self._error(f"is unreachable at {self.endpoint} ({type(exc).__name__})",
                              True) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        status = response.status_code
        if status >= 400 or (isinstance(body, dict) and body.get("status") == "error"):
            message = error.get("message") if isinstance(error, dict) else response.text[:200]
            hint = " (check OPENVIKING_API_KEY)" if status in (401, 403) else ""
            detail = str(message or "").replace(self._key or "\x00", "***").strip()[:200]
            raise self._error(f"answered HTTP {status} to {what}{hint}"
                              + (f": {detail}" if detail else ""),
                              status >= 500 or status in _RETRYABLE, status)
        if not isinstance(body, dict) or "result" not in body:
            raise self._error(f"answered {what} with a malformed body", True)
        return body["result"]

    def health(self) -> Any:
        """``GET /health`` (at the server root, outside ``/api/v1`` and its envelope): the
        server's ``{"status", "healthy", "version"}``, or :class:`BackendError`."""
        try:
            response = self._http.get(f"{self.endpoint}/health")
            body = response.json()
        except httpx.TimeoutException:
            raise self._error("did not answer GET /health in time", True) from None
        except httpx.HTTPError as exc:
            raise self._error(f"is unreachable at {self.endpoint} ({type(exc).__name__})",
                              True) from None
        except ValueError:
            body = None
        if response.status_code >= 400 or not isinstance(body, dict):
            raise self._error(f"answered GET /health with HTTP {response.status_code}",
                              response.status_code >= 500, response.status_code)
        return body

    @staticmethod
    def _error(text: str, retryable: bool, status: int = 0) -> BackendError:
        return BackendError(f"openviking {text}", provider="openviking", retryable=retryable,
                            status=status)
