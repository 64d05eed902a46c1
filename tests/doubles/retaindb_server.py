"""A loopback stand-in for RetainDB's HTTP API (a test double: RetainDB is a paid cloud
service with no offline server on the package registries).

Built from the API the Hermes RetainDB plugin and RetainDB's docs use: ``POST /v1/memory``,
``POST /v1/memory/search``, ``POST /v1/context/query`` (``context``, ``context_hash``,
``changed``; an unchanged context is not sent again when ``previous_context_hash``
matches), ``POST /v1/memory/ingest/session``, ``GET /v1/memory/profile/{user_id}``,
``DELETE /v1/memory/{id}``, with ``Authorization: Bearer <key>``. A wrong key gets 401
with a body that quotes the header it received, so tests can check that the provider
never repeats a secret. Search is word overlap: good enough to route, not to rank.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

from doubles.base_server import DoubleServer, Request, Response

__all__ = ["RetainDBDouble"]

_WORDS = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """Lower-case word set (words of one or two letters dropped)."""
    return {w for w in _WORDS.findall(text.lower()) if len(w) > 2}


class RetainDBDouble(DoubleServer):
    """RetainDB's API on 127.0.0.1 with its memories in a dict."""

    name = "retaindb"

    def __init__(self, api_key: str = "rdb-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.memories: dict[str, dict[str, Any]] = {}
        self.ingested: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self.route("POST", "/v1/memory", self._add)
        self.route("POST", "/v1/memory/search", self._search)
        self.route("POST", "/v1/context/query", self._context)
        self.route("POST", "/v1/memory/ingest/session", self._ingest)
        self.route("GET", "/v1/memory/profile/{user_id}", self._profile)
        self.route("DELETE", "/v1/memory/{memory_id}", self._delete)

    def _answer(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Response(401, {"error": "invalid api key",
                                  "received": request.headers.get("authorization", "")})
        return super()._answer(request)

    def _store(self, body: dict[str, Any], content: str, memory_type: str) -> dict[str, Any]:
        memory = {"id": f"mem_{next(self._ids)}", "content": content,
                  "memory_type": memory_type, "importance": body.get("importance", 0.5),
                  "project": body["project"], "user_id": body["user_id"],
                  "session_id": body.get("session_id", "")}
        self.memories[memory["id"]] = memory
        return memory

    def _add(self, request: Request) -> Any:
        body = request.body
        memory = self._store(body, body["content"], body.get("memory_type", "factual"))
        return {"memory": memory, "id": memory["id"]}

    def _ingest(self, request: Request) -> Any:
        body = request.body
        self.ingested.append(body)
        for message in body["messages"]:
            if message["role"] == "user":
                self._store(body, message["content"], "event")
        return {"ingested": len(body["messages"])}

    def _matches(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        query = words(body["query"])
        types = body.get("memory_types")
        scored = []
        for memory in self.memories.values():
            if memory["project"] != body["project"] or memory["user_id"] != body["user_id"]:
                continue
            if types and memory["memory_type"] not in types:
                continue
            overlap = len(query & words(memory["content"]))
            if overlap:
                scored.append({**memory, "score": overlap / max(1, len(query))})
        scored.sort(key=lambda m: -m["score"])
        return scored[: int(body.get("top_k", 8))]

    def _search(self, request: Request) -> Any:
        return {"results": self._matches(request.body)}

    def _context(self, request: Request) -> Any:
        results = self._matches(request.body)
        context = "\n".join(f"- [{m['memory_type']}] {m['content']}" for m in results)
        digest = hashlib.sha256(context.encode()).hexdigest()[:16]
        if request.body.get("previous_context_hash") == digest:
            return {"changed": False, "context_hash": digest}
        return {"changed": True, "context": context, "context_hash": digest,
                "results": results}

    def _profile(self, request: Request) -> Any:
        user, project = request.params["user_id"], request.query.get("project", [""])[0]
        rows = [m for m in self.memories.values()
                if m["user_id"] == user and m["project"] == project
                and m["memory_type"] in ("preference", "factual", "goal", "instruction")]
        return {"memories": rows}

    def _delete(self, request: Request) -> Any:
        memory_id = request.params["memory_id"]
        if memory_id not in self.memories:
            return Response(404, {"error": f"memory {memory_id} not found"})
        del self.memories[memory_id]
        return {"deleted": True}
