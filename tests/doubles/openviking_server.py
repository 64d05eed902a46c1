"""Loopback servers for the ``openviking`` provider's tests.

:class:`OpenVikingDouble` stands in for OpenViking's HTTP API (``/api/v1``), modelled on
the real ``openviking`` 0.5.2 server's OpenAPI schema and answers (recorded from a real
server started offline here): the ``{"status", "result", "error": {"code", "message"}}``
envelope, ``POST /search/find`` (``memories`` / ``resources`` / ``skills`` with ``uri``,
``score``, ``abstract``), ``GET /content/abstract|overview|read``, ``GET /fs/ls``,
``POST /content/write``, ``POST /resources`` (URLs only), ``POST
/sessions/{id}/messages`` (creates the session) and ``POST /sessions/{id}/commit``
(extraction: each user message becomes a memory under
``viking://user/<user>/memories/``). Search is word overlap; the abstract is the first
sentence and the overview the first 300 characters (the real server asks its model).

:class:`FakeModels` is a loopback OpenAI-compatible server for the *real* OpenViking
server: ``/v1/embeddings`` returns bag-of-words vectors (hashed words, normalized, so
texts sharing words are near) and ``/v1/chat/completions`` answers summarization prompts
with the first sentence of the text it was given.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from typing import Any

from doubles.base_server import DoubleServer, Request, Response

__all__ = ["FakeModels", "OpenVikingDouble"]

_WORDS = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.lower()) if len(w) > 2}


def _ok(result: Any) -> dict[str, Any]:
    return {"status": "ok", "result": result, "error": None, "telemetry": None,
            "profile": None}


def _err(status: int, code: str, message: str) -> Response:
    return Response(status, {"status": "error", "result": None,
                             "error": {"code": code, "message": message, "details": {}}})


class OpenVikingDouble(DoubleServer):
    """OpenViking's API on 127.0.0.1 with its files and sessions in dicts."""

    name = "openviking"

    def __init__(self, api_key: str = "") -> None:
        super().__init__()
        self.api_key = api_key
        self.files: dict[str, str] = {}
        self.sessions: dict[str, list[dict[str, Any]]] = {}
        self.resources: list[dict[str, Any]] = []
        self._n = itertools.count(1)
        self.route("GET", "/health", lambda r: {"status": "ok", "healthy": True,
                                                "version": "0.5.2"})
        api = "/api/v1"
        self.route("POST", api + "/search/find", self._find)
        for tier in ("abstract", "overview", "read"):
            self.route("GET", f"{api}/content/{tier}", self._tier(tier))
        self.route("GET", api + "/fs/ls", self._ls)
        self.route("POST", api + "/content/write", self._write)
        self.route("POST", api + "/resources", self._resource)
        self.route("POST", api + "/sessions/{sid}/messages", self._message)
        self.route("POST", api + "/sessions/{sid}/commit", self._commit)

    def _answer(self, request: Request) -> Response:
        if self.api_key and request.headers.get("x-api-key") != self.api_key:
            return _err(401, "UNAUTHENTICATED",
                        f"invalid API key {request.headers.get('x-api-key', '')}")
        return super()._answer(request)

    @staticmethod
    def abstract(text: str) -> str:
        """The first sentence, at most 120 characters."""
        return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:120]

    def _find(self, request: Request) -> Any:
        body = request.body
        targets = body.get("target_uri") or [""]
        targets = [targets] if isinstance(targets, str) else targets
        wanted = _words(body.get("query", ""))
        found: dict[str, list[dict[str, Any]]] = {"memories": [], "resources": [],
                                                  "skills": []}
        for uri, text in self.files.items():
            if not any(uri.startswith(t) for t in targets):
                continue
            score = len(wanted & _words(text)) / max(1, len(wanted))
            if score:
                kind = "memories" if "/memories/" in uri else "resources"
                found[kind].append({"context_type": kind[:-1], "uri": uri, "level": 2,
                                    "score": score, "abstract": self.abstract(text)})
        limit = int(body.get("limit") or 10)
        for rows in found.values():
            rows.sort(key=lambda r: -r["score"])
            del rows[limit:]
        return _ok({**found, "total": sum(len(v) for v in found.values())})

    def _tier(self, tier: str) -> Any:
        def answer(request: Request) -> Any:
            uri = request.query.get("uri", [""])[0]
            if uri not in self.files:
                return _err(404, "NOT_FOUND", f"File not found: {uri}")
            text = self.files[uri]
            return _ok({"abstract": self.abstract(text), "overview": text[:300],
                        "read": text}[tier])
        return answer

    def _ls(self, request: Request) -> Any:
        uri = request.query.get("uri", [""])[0].rstrip("/") + "/"
        rows = [{"uri": u, "size": len(t), "isDir": False, "abstract": ""}
                for u, t in sorted(self.files.items()) if u.startswith(uri)]
        return {**_ok(rows), "has_more": False}

    def _write(self, request: Request) -> Any:
        body = request.body
        if not str(body.get("uri", "")).startswith("viking://") or "content" not in body:
            return _err(422, "INVALID_ARGUMENT", "uri and content are required")
        self.files[body["uri"]] = body["content"]
        return _ok({"uri": body["uri"], "written_bytes": len(body["content"].encode()),
                    "semantic_status": "queued", "vector_status": "queued"})

    def _resource(self, request: Request) -> Any:
        path = str(request.body.get("path") or "")
        if not path.startswith(("http://", "https://")):
            return _err(403, "PERMISSION_DENIED", "HTTP server only accepts remote resource"
                        " URLs or temp-uploaded files")
        self.resources.append(request.body)
        return _ok({"root_uri": f"viking://resources/{next(self._n)}", "status": "queued"})

    def _message(self, request: Request) -> Any:
        messages = self.sessions.setdefault(request.params["sid"], [])
        messages.append({**request.body, "user": request.headers.get("x-openviking-user")})
        return _ok({"session_id": request.params["sid"], "message_count": len(messages)})

    def _commit(self, request: Request) -> Any:
        sid = request.params["sid"]
        messages = self.sessions.get(sid, [])
        for message in messages:
            if message["role"] == "user":
                user = message.get("user") or "default"
                digest = hashlib.sha256(message["content"].encode()).hexdigest()[:8]
                self.files[f"viking://user/{user}/memories/{digest}.md"] = message["content"]
        return _ok({"session_id": sid, "status": "accepted", "archived": bool(messages)})


class FakeModels(DoubleServer):
    """An OpenAI-compatible embeddings and chat server for the real OpenViking server."""

    name = "fake-models"
    dimension = 64

    def __init__(self) -> None:
        super().__init__()
        self.route("POST", "/v1/embeddings", self._embed)
        self.route("POST", "/v1/chat/completions", self._chat)

    def vector(self, text: str) -> list[float]:
        """Hashed bag of words, L2-normalized."""
        vec = [0.0] * self.dimension
        for word in _words(text):
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def _embed(self, request: Request) -> Any:
        items = request.body.get("input")
        items = [items] if isinstance(items, str) else items
        return {"object": "list", "model": request.body.get("model"),
                "data": [{"object": "embedding", "index": i, "embedding": self.vector(str(t))}
                         for i, t in enumerate(items)],
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    def _chat(self, request: Request) -> Any:
        prompt = str(request.body.get("messages", [{}])[-1].get("content", ""))
        lines = [ln.strip() for ln in prompt.splitlines() if ln.strip()]
        first = OpenVikingDouble.abstract(lines[-1] if lines else "")
        content = json.dumps({"abstract": first, "overview": first, "memories": []})
        return {"id": "fake", "object": "chat.completion", "created": 0,
                "model": request.body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
