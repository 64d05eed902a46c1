"""A loopback stand-in for the Supermemory API (a test double: Supermemory is a cloud
service), built from the ``supermemory`` SDK's own models.

Every answer is validated through the SDK's response model (``DocumentRef``,
``SearchResponse``, ``ProfileResponse``, ``ForgetResult``) and serialized with its
aliases, so the real SDK parses exactly what the real API would send in that shape.
Routes: ``POST /ns/{ns}/document``, ``POST /ns/{ns}/search``, ``POST /ns/{ns}/profile``,
``DELETE /ns/{ns}/memories``, ``DELETE /ns/{ns}/memories/semantic``; ``Authorization:
Bearer <key>`` is checked (401 quotes the header it got). One document becomes one
memory (no server-side extraction); a document re-sent with the same ``id`` replaces it.
Profile facts: ``static`` are memories stating a preference or a name, ``dynamic`` the
five newest others.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from supermemory.types import (
    DocumentRef,
    ForgetResult,
    ProfileResponse,
    SearchResponse,
)

from doubles.base_server import DoubleServer, Request, Response

__all__ = ["SupermemoryDouble"]

_WORDS = re.compile(r"[a-z0-9]+")
_STATIC = re.compile(r"\b(prefer|prefers|favou?rite|my name|i am|allergic)\b", re.I)


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.lower()) if len(w) > 2}


def _out(model: Any, data: dict[str, Any]) -> dict[str, Any]:
    return model.model_validate(data).dict(by_alias=True)  # type: ignore[no-any-return]


class SupermemoryDouble(DoubleServer):
    """Supermemory's namespaced API on 127.0.0.1, memories in a dict per namespace."""

    name = "supermemory"

    def __init__(self, api_key: str = "sm-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.memories: dict[str, dict[str, dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self.route("POST", "/ns/{ns}/document", self._add)
        self.route("POST", "/ns/{ns}/search", self._search)
        self.route("POST", "/ns/{ns}/profile", self._profile)
        self.route("DELETE", "/ns/{ns}/memories", self._forget)
        self.route("DELETE", "/ns/{ns}/memories/semantic", self._forget_matching)

    def _answer(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Response(401, {"error": "Unauthorized",
                                  "received": request.headers.get("authorization", "")})
        return super()._answer(request)

    def _add(self, request: Request) -> Any:
        body, space = request.body, self.memories.setdefault(request.params["ns"], {})
        if not isinstance(body.get("content"), str) or not body["content"].strip():
            return Response(400, {"error": "content is required"})
        doc_id = body.get("id") or f"doc_{next(self._ids)}"
        memory_id = next((k for k, m in space.items() if m["doc"] == doc_id),
                         f"mem_{next(self._ids)}")
        space[memory_id] = {"id": memory_id, "doc": doc_id, "memory": body["content"],
                            "metadata": body.get("metadata") or {},
                            "supporting": body.get("supportingContext")}
        return _out(DocumentRef, {"id": doc_id, "status": "queued"})

    def _matches(self, space: str, query: str) -> list[tuple[float, dict[str, Any]]]:
        wanted = _words(query)
        scored = []
        for memory in self.memories.get(space, {}).values():
            overlap = len(wanted & _words(memory["memory"]))
            if overlap:
                scored.append((overlap / max(1, len(wanted)), memory))
        return sorted(scored, key=lambda p: -p[0])

    def _search(self, request: Request) -> Any:
        body = request.body
        limit = int(body.get("limit") or 10)
        results = [{"id": m["id"], "memory": m["memory"], "metadata": m["metadata"],
                    "similarity": round(score, 3), "isLatest": True, "isInference": False,
                    "system": {"updatedAt": "2026-11-22T00:00:00Z"}}
                   for score, m in self._matches(request.params["ns"], body["query"])[:limit]]
        return _out(SearchResponse, {"results": results, "searchTime": 1.0})

    def _profile(self, request: Request) -> Any:
        rows = list(self.memories.get(request.params["ns"], {}).values())
        static = [{"id": m["id"], "memory": m["memory"]} for m in rows
                  if _STATIC.search(m["memory"])]
        dynamic = [{"id": m["id"], "memory": m["memory"]} for m in rows
                   if not _STATIC.search(m["memory"])][-5:]
        return _out(ProfileResponse, {"profile": {"static": static, "dynamic": dynamic,
                                                  "buckets": {}}})

    def _forget(self, request: Request) -> Any:
        space = self.memories.get(request.params["ns"], {})
        matches, errors = [], []
        for memory_id in request.body["ids"]:
            if memory_id in space:
                matches.append({"id": memory_id, "memory": space.pop(memory_id)["memory"]})
            else:
                errors.append({"id": memory_id, "error": "not found"})
        return _out(ForgetResult, {"count": len(matches), "errors": errors,
                                   "matches": matches})

    def _forget_matching(self, request: Request) -> Any:
        ns, body = request.params["ns"], request.body
        hits = [m for _, m in self._matches(ns, body["query"])]
        if not body.get("dryRun"):
            for memory in hits:
                self.memories[ns].pop(memory["id"], None)
        return _out(ForgetResult, {"count": len(hits), "errors": [],
                                   "matches": [{"id": m["id"], "memory": m["memory"]}
                                               for m in hits]})
