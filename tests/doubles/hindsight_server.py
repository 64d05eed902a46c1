"""A loopback stand-in for the Hindsight API (a test double: the real server, the
``hindsight-api`` package, needs torch and downloaded embedding/reranker models), built
from ``hindsight-client``'s own request and response models.

Request bodies are parsed with the SDK's request models (``RetainRequest``,
``RecallRequest``, ``ReflectRequest``; a body they reject gets 422) and every answer is
built through its response models (``RetainResponse``, ``RecallResponse``,
``ReflectResponse``). Routes: ``POST /v1/default/banks/{bank}/memories`` (retain),
``POST .../memories/recall``, ``POST .../reflect``. Banks are created on first retain, as
Hindsight does. When ``api_key`` is set, ``Authorization: Bearer <key>`` is checked (401
quotes the header it got). One retained item is one memory (no fact extraction); recall is
word overlap; reflect joins the matching memories into a short answer.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from hindsight_client_api.models.recall_request import RecallRequest
from hindsight_client_api.models.recall_response import RecallResponse
from hindsight_client_api.models.reflect_request import ReflectRequest
from hindsight_client_api.models.reflect_response import ReflectResponse
from hindsight_client_api.models.retain_request import RetainRequest
from hindsight_client_api.models.retain_response import RetainResponse

from doubles.base_server import DoubleServer, Request, Response

__all__ = ["HindsightDouble"]

_WORDS = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.lower()) if len(w) > 2}


class HindsightDouble(DoubleServer):
    """The Hindsight API on 127.0.0.1; banks of memories in a dict."""

    name = "hindsight"

    def __init__(self, api_key: str = "") -> None:
        super().__init__()
        self.api_key = api_key
        self.banks: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        base = "/v1/default/banks/{bank}"
        self.route("POST", base + "/memories", self._retain)
        self.route("POST", base + "/memories/recall", self._recall)
        self.route("POST", base + "/reflect", self._reflect)

    def _answer(self, request: Request) -> Response:
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Response(401, {"detail": "invalid token",
                                  "received": request.headers.get("authorization", "")})
        return super()._answer(request)

    def _retain(self, request: Request) -> Any:
        body = RetainRequest.from_dict(request.body)
        assert body is not None
        bank = self.banks.setdefault(request.params["bank"], [])
        for item in body.items:
            bank.append({"id": f"fact_{next(self._ids)}", "text": str(item.content.actual_instance),
                         "context": item.context, "document_id": item.document_id,
                         "metadata": item.metadata})
        return RetainResponse.from_dict({
            "success": True, "bank_id": request.params["bank"], "items_count": len(body.items),
            "async": bool(body.var_async)}).to_dict()  # type: ignore[union-attr]

    def _matches(self, bank: str, query: str) -> list[dict[str, Any]]:
        wanted = _words(query)
        scored = [(len(wanted & _words(m["text"])), m) for m in self.banks.get(bank, [])]
        return [m for score, m in sorted(scored, key=lambda p: -p[0]) if score]

    def _recall(self, request: Request) -> Any:
        body = RecallRequest.from_dict(request.body)
        assert body is not None
        budget = body.max_tokens or 4096
        results, used = [], 0
        for memory in self._matches(request.params["bank"], body.query):
            used += len(memory["text"].split())
            if used > budget:
                break
            results.append({"id": memory["id"], "text": memory["text"], "type": "world",
                            "context": memory["context"], "document_id": memory["document_id"]})
        return RecallResponse.from_dict({"results": results}).to_dict()  # type: ignore[union-attr]

    def _reflect(self, request: Request) -> Any:
        body = ReflectRequest.from_dict(request.body)
        assert body is not None
        hits = self._matches(request.params["bank"], body.query)
        text = ("From what I remember: " + "; ".join(m["text"] for m in hits[:3])) if hits \
            else "I have no memories about that."
        return ReflectResponse.from_dict({"text": text}).to_dict()  # type: ignore[union-attr]
