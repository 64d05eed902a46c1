"""One Honcho connection per (profile, workspace, user): the ``honcho-ai`` SDK calls the
provider makes, with peers and sessions cached, and errors that name the server's URL and
never the API key.

Hermes reused one module-level client across profiles and wrote into the wrong workspace;
here every provider instance builds its own clients (``Links``), keyed by URL, workspace and
a digest of the key, so two profiles in one process never share one.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from memoryport.errors import ProviderError
from memoryport.providers.honcho.config import HonchoConfig

__all__ = ["BaseContext", "Link", "Links"]

T = TypeVar("T")


@dataclass(frozen=True)
class BaseContext:
    """Layer 1 of the injected context."""

    summary: str = ""
    user_representation: str = ""
    user_card: tuple[str, ...] = ()
    ai_representation: str = ""
    ai_card: tuple[str, ...] = ()

    def render(self) -> str:
        """The five parts in the seed's order, empty parts left out."""
        parts = [("## Session summary", self.summary),
                 ("## User representation", self.user_representation),
                 ("## User peer card", "\n".join(f"- {c}" for c in self.user_card)),
                 ("## AI self-representation", self.ai_representation),
                 ("## AI identity card", "\n".join(f"- {c}" for c in self.ai_card))]
        return "\n\n".join(f"{title}\n{text.strip()}" for title, text in parts if text.strip())


class Link:
    """The SDK client of one workspace, with its peers and sessions."""

    def __init__(self, config: HonchoConfig, timeout: float) -> None:
        from honcho import Honcho  # type: ignore[import-untyped]

        self.config = config
        self.url = config.url
        self._secret = config.api_key
        self.client = Honcho(api_key=config.api_key or None, base_url=config.url,
                             workspace_id=config.workspace, timeout=timeout, max_retries=0)
        self._peers: dict[str, Any] = {}
        self._sessions: dict[str, Any] = {}
        self._lock = threading.Lock()

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one SDK call; any failure becomes a ``ProviderError`` naming the URL."""
        try:
            return fn()
        except ProviderError:
            raise
        except Exception as exc:
            status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
            detail = f"HTTP {status}" if status else type(exc).__name__
            message = f"honcho at {self.url}: {what} failed ({detail})"
            if self._secret:
                message = message.replace(self._secret, "***")
            raise ProviderError(message, provider="honcho") from None

    def peer(self, peer_id: str) -> Any:
        """The peer (get-or-create once per link)."""
        with self._lock:
            found = self._peers.get(peer_id)
        if found is None:
            found = self.call(f"peer {peer_id!r}", lambda: self.client.peer(peer_id))
            with self._lock:
                self._peers[peer_id] = found
        return found

    def session(self, name: str, user: str, ai: str) -> Any:
        """The session (created once with both peers and their observation settings)."""
        with self._lock:
            found = self._sessions.get(name)
        if found is not None:
            return found
        from honcho.api_types import SessionPeerConfig  # type: ignore[import-untyped]

        obs = self.config.observation
        peers = [(user, SessionPeerConfig(observe_me=obs["user"]["observeMe"],
                                          observe_others=obs["user"]["observeOthers"])),
                 (ai, SessionPeerConfig(observe_me=obs["ai"]["observeMe"],
                                        observe_others=obs["ai"]["observeOthers"]))]
        found = self.call(f"session {name!r}", lambda: self.client.session(name, peers=peers))
        with self._lock:
            self._sessions[name] = found
        return found

    # ------------------------------------------------------------------ reads
    def base_context(self, name: str, user: str, ai: str, tokens: int | None) -> BaseContext:
        """Summary, user representation and card (session context), AI's own (peer
        context): two requests."""
        session = self.session(name, user, ai)
        ctx = self.call("session context", lambda: session.context(
            summary=True, tokens=tokens, peer_target=user, peer_perspective=ai))
        own = self.call("AI peer context", lambda: self.peer(ai).context())
        summary = ctx.summary.content if ctx.summary is not None else ""
        return BaseContext(summary, ctx.peer_representation or "", tuple(ctx.peer_card or ()),
                           own.representation or "", tuple(own.peer_card or ()))

    def chat(self, observer: str, target: str | None, query: str, session: str | None,
             level: str) -> str:
        """The dialectic call (an LLM on the server): ``observer`` asked about ``target``."""
        peer = self.peer(observer)
        answer = self.call("dialectic chat", lambda: peer.chat(
            query, target=target, session=session, reasoning_level=level))
        return answer if isinstance(answer, str) else ""

    def card(self, observer: str, target: str | None) -> list[str]:
        """The peer card of ``target`` (``observer``'s own when None)."""
        peer = self.peer(observer)
        return list(self.call("peer card", lambda: peer.get_card(target=target)) or [])

    def representation(self, observer: str, target: str | None, query: str) -> str:
        """``observer``'s representation of ``target``, searched by ``query``."""
        peer = self.peer(observer)
        return str(self.call("representation", lambda: peer.representation(
            target=target, search_query=query or None)) or "")

    def session_context(self, name: str, user: str, ai: str, target: str,
                        tokens: int | None) -> dict[str, Any]:
        """The full session context: summary, representation, card and messages."""
        session = self.session(name, user, ai)
        ctx = self.call("session context", lambda: session.context(
            summary=True, tokens=tokens, peer_target=target))
        return {"summary": ctx.summary.content if ctx.summary is not None else "",
                "representation": ctx.peer_representation or "",
                "card": list(ctx.peer_card or []),
                "messages": [{"peer": m.peer_id, "content": m.content} for m in ctx.messages]}

    # ------------------------------------------------------------------ writes
    def add_messages(self, name: str, user: str, ai: str,
                     messages: list[dict[str, Any]]) -> None:
        """Store ``[{peer, content, metadata}]`` in the session."""
        session = self.session(name, user, ai)
        made = [self.peer(m["peer"]).message(m["content"], metadata=m.get("metadata") or None)
                for m in messages]
        self.call("add messages", lambda: session.add_messages(made))

    def conclude(self, observer: str, target: str, content: str, session: str | None) -> None:
        """A persistent conclusion of ``observer`` about ``target``."""
        peer = self.peer(observer)
        item: dict[str, Any] = {"content": content}
        if session:
            item["session_id"] = session
        view = peer.conclusions_of(target) if target != observer else peer.conclusions
        self.call("conclusion", lambda: view.create([item]))


class Links:
    """The links of one provider instance, keyed by URL, workspace and key digest."""

    def __init__(self) -> None:
        self._links: dict[tuple[str, str, str], Link] = {}
        self._lock = threading.Lock()

    def get(self, config: HonchoConfig, timeout: float) -> Link:
        """The link for ``config`` (made on first use)."""
        digest = hashlib.sha256(config.api_key.encode()).hexdigest()[:16]
        key = (config.url, config.workspace, digest)
        with self._lock:
            link = self._links.get(key)
            if link is None:
                link = self._links[key] = Link(config, timeout)
        return link

    def close(self) -> None:
        """Forget every link (their HTTP pools close with them)."""
        with self._lock:
            links, self._links = list(self._links.values()), {}
        for link in links:
            close = getattr(getattr(link.client, "_http", None), "close", None)
            if callable(close):
                close()
