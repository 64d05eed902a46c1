"""A loopback test double of the Honcho v3 API: the subset the ``honcho-ai`` SDK calls for
the ``honcho`` provider, answering with the SDK's own response models' fields.

The Honcho server is not installable here (a git clone with Postgres+pgvector and LLM keys),
so the provider is tested through the real SDK against this double. It keeps workspaces,
peers, sessions (with per-peer observation config), messages, peer cards and conclusions
in memory; "representation" is the target's messages and conclusions, a session summary
counts and quotes its messages, and ``chat`` (the dialectic call) answers with what it
knows about the target, tagged with the reasoning level it was asked for. Every request is
recorded (``requests``), faults come from ``FaultyServer`` (slow, 5xx, malformed, drop).

Routes: ``POST /v3/workspaces``; under ``/v3/workspaces/{w}``: ``POST /peers``, ``POST
/sessions``, ``POST|PUT /sessions/{s}/peers``, ``PUT /sessions/{s}/peers/{p}/config``,
``POST /sessions/{s}/messages``, ``GET /sessions/{s}/context``, ``GET /peers/{p}/context``,
``GET|PUT /peers/{p}/card``, ``POST /peers/{p}/representation``, ``POST /peers/{p}/chat``,
``POST /peers/{p}/search``, ``POST /conclusions``.
"""

from __future__ import annotations

import itertools
import re
from typing import Any
from urllib.parse import parse_qs

from doubles.mentisdb_server import FaultyServer

__all__ = ["HonchoDouble"]

_NOW = "2026-11-22T00:00:00+00:00"
_ROUTE = re.compile(r"^/v3/workspaces/(?P<w>[^/]+)(?P<rest>/.*)?$")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


class HonchoDouble(FaultyServer):
    """Honcho v3, in memory. ``messages[(w, s)]``, ``cards[(w, observer, target)]``,
    ``conclusions[w]``, ``chats`` (every dialectic call), ``session_peers[(w, s)]``."""

    def __init__(self) -> None:
        super().__init__()
        self.workspaces: set[str] = set()
        self.peers: set[tuple[str, str]] = set()
        self.sessions: set[tuple[str, str]] = set()
        self.session_peers: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.messages: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.cards: dict[tuple[str, str, str], list[str]] = {}
        self.conclusions: dict[str, list[dict[str, Any]]] = {}
        self.chats: list[dict[str, Any]] = []
        self.summaries_enabled = True
        self._ids = itertools.count(1)

    # ------------------------------------------------------------------ helpers
    def _message(self, w: str, s: str, item: dict[str, Any]) -> dict[str, Any]:
        return {"id": f"m{next(self._ids)}", "content": item["content"],
                "peer_id": item["peer_id"], "session_id": s, "workspace_id": w,
                "metadata": item.get("metadata") or {}, "created_at": _NOW,
                "token_count": max(1, len(item["content"]) // 4)}

    def all_messages(self, w: str, peer: str | None = None) -> list[dict[str, Any]]:
        """Every stored message of workspace ``w`` (of ``peer`` only, when given)."""
        with self.lock:
            rows = [m for (ws, _), ms in self.messages.items() if ws == w for m in ms]
        return [m for m in rows if peer is None or m["peer_id"] == peer]

    def representation(self, w: str, target: str, query: str = "") -> str:
        """What the double "knows" about ``target``: conclusions, then its messages."""
        facts = [c["content"] for c in self.conclusions.get(w, []) if c["observed_id"] == target]
        said = [m["content"] for m in self.all_messages(w, target)]
        lines = facts + said
        if query:
            wanted = _words(query)
            lines = [line for line in lines if wanted & _words(line)] or lines[:3]
        return "\n".join(f"- {line}" for line in lines[:20])

    def _summary(self, w: str, s: str) -> dict[str, Any] | None:
        rows = self.messages.get((w, s), [])
        if not rows or not self.summaries_enabled:
            return None
        text = f"{len(rows)} messages so far; it began with: {rows[0]['content'][:80]}"
        return {"content": text, "message_id": rows[-1]["id"], "summary_type": "short",
                "created_at": _NOW, "token_count": len(text) // 4}

    # ------------------------------------------------------------------ routing
    def handle(self, method: str, path: str, query: str, body: Any) -> tuple[int, Any]:
        """Route one SDK request."""
        params = {k: v[-1] for k, v in parse_qs(query).items()}
        if method == "POST" and path == "/v3/workspaces":
            self.workspaces.add(body["id"])
            return 200, {"id": body["id"], "uid": "u-" + body["id"], "metadata": {},
                         "configuration": {}, "created_at": _NOW}
        match = _ROUTE.match(path)
        if match is None or match["w"] not in self.workspaces:
            return 404, {"detail": f"no such workspace or route: {path}"}
        w, rest = match["w"], match["rest"] or ""
        for pattern, handler in self._routes():
            found = re.fullmatch(pattern, f"{method} {rest}")
            if found:
                return handler(w, body or {}, params, *found.groups())
        return 404, {"detail": f"no route {method} {path}"}

    def _routes(self) -> list[tuple[str, Any]]:
        return [
            (r"POST /peers", self._peer),
            (r"POST /sessions", self._session),
            (r"(?:POST|PUT) /sessions/([^/]+)/peers", self._add_peers),
            (r"PUT /sessions/([^/]+)/peers/([^/]+)/config", self._peer_config),
            (r"POST /sessions/([^/]+)/messages", self._add_messages),
            (r"GET /sessions/([^/]+)/context", self._session_context),
            (r"GET /peers/([^/]+)/context", self._peer_context),
            (r"GET /peers/([^/]+)/card", self._get_card),
            (r"PUT /peers/([^/]+)/card", self._set_card),
            (r"POST /peers/([^/]+)/representation", self._representation),
            (r"POST /peers/([^/]+)/chat", self._chat),
            (r"POST /peers/([^/]+)/search", self._search),
            (r"POST /conclusions", self._conclude),
        ]

    def _peer(self, w: str, body: dict[str, Any], params: dict[str, str]) -> tuple[int, Any]:
        with self.lock:
            self.peers.add((w, body["id"]))
        return 200, {"id": body["id"], "uid": None, "workspace_id": w, "created_at": _NOW,
                     "metadata": body.get("metadata") or {},
                     "configuration": body.get("configuration") or {}}

    def _session(self, w: str, body: dict[str, Any], params: dict[str, str]) -> tuple[int, Any]:
        with self.lock:
            self.sessions.add((w, body["id"]))
            self.session_peers.setdefault((w, body["id"]), {}).update(body.get("peers") or {})
        return 200, {"id": body["id"], "uid": None, "is_active": True, "workspace_id": w,
                     "metadata": body.get("metadata") or {}, "configuration": {},
                     "created_at": _NOW}

    def _add_peers(self, w: str, body: Any, params: dict[str, str], s: str) -> tuple[int, Any]:
        with self.lock:
            self.session_peers.setdefault((w, s), {}).update(body if isinstance(body, dict)
                                                             else {})
        return 200, {}

    def _peer_config(self, w: str, body: dict[str, Any], params: dict[str, str], s: str,
                     p: str) -> tuple[int, Any]:
        with self.lock:
            self.session_peers.setdefault((w, s), {})[p] = body
        return 200, {}

    def _add_messages(self, w: str, body: dict[str, Any], params: dict[str, str],
                      s: str) -> tuple[int, Any]:
        if (w, s) not in self.sessions:
            return 404, {"detail": f"session {s} not found"}
        with self.lock:
            rows = [self._message(w, s, item) for item in body["messages"]]
            self.messages.setdefault((w, s), []).extend(rows)
        return 200, rows

    def _session_context(self, w: str, body: Any, params: dict[str, str],
                         s: str) -> tuple[int, Any]:
        target = params.get("peer_target")
        rows = self.messages.get((w, s), [])
        tokens = int(params.get("tokens") or 100000)
        kept, used = [], 0
        for row in reversed(rows):
            if used + row["token_count"] > tokens:
                break
            kept.insert(0, row)
            used += row["token_count"]
        summary = self._summary(w, s) if params.get("summary", "true") != "false" else None
        card = self.cards.get((w, target, target), []) if target else None
        return 200, {"id": s, "messages": kept, "summary": summary,
                     "peer_representation": self.representation(w, target) if target else None,
                     "peer_card": card}

    def _peer_context(self, w: str, body: Any, params: dict[str, str],
                      p: str) -> tuple[int, Any]:
        target = params.get("target") or p
        return 200, {"peer_id": p, "target_id": target,
                     "representation": self.representation(w, target),
                     "peer_card": self.cards.get((w, target, target), [])}

    def _get_card(self, w: str, body: Any, params: dict[str, str], p: str) -> tuple[int, Any]:
        target = params.get("target") or p
        return 200, {"peer_card": self.cards.get((w, target, target)) or None}

    def _set_card(self, w: str, body: dict[str, Any], params: dict[str, str],
                  p: str) -> tuple[int, Any]:
        target = params.get("target") or p
        self.cards[(w, target, target)] = list(body["peer_card"])
        return 200, {"peer_card": list(body["peer_card"])}

    def _representation(self, w: str, body: dict[str, Any], params: dict[str, str],
                        p: str) -> tuple[int, Any]:
        target = body.get("target") or p
        return 200, {"representation": self.representation(w, target,
                                                           body.get("search_query") or "")}

    def _chat(self, w: str, body: dict[str, Any], params: dict[str, str],
              p: str) -> tuple[int, Any]:
        target = body.get("target") or p
        level = body.get("reasoning_level") or "low"
        with self.lock:
            self.chats.append({"workspace": w, "peer": p, **body})
        known = self.representation(w, target, body["query"])
        if not known:
            return 200, {"content": None}
        return 200, {"content": f"[{level}] About {target}:\n{known}"}

    def _search(self, w: str, body: dict[str, Any], params: dict[str, str],
                p: str) -> tuple[int, Any]:
        wanted = _words(body.get("query") or "")
        hits = [m for m in self.all_messages(w) if wanted & _words(m["content"])]
        return 200, hits[: int(body.get("limit") or 10)]

    def _conclude(self, w: str, body: dict[str, Any], params: dict[str, str]) -> tuple[int, Any]:
        out = []
        with self.lock:
            for item in body["conclusions"]:
                row = {"id": f"c{next(self._ids)}", "content": item["content"],
                       "observer_id": item["observer_id"], "observed_id": item["observed_id"],
                       "session_id": item.get("session_id"), "level": "explicit",
                       "source_ids": None, "times_derived": 1, "created_at": _NOW}
                self.conclusions.setdefault(w, []).append(row)
                out.append(row)
        return 200, out

