"""Who is calling: the identity of an MCP request and one ``Memory`` per client.

Every request is tagged with an :class:`Identity` (user id + client key) by the server's
middleware; handlers look up the client's :class:`ClientState` in the :class:`ClientPool`.

- **user id**: the user a bearer token is bound to (``--tokens-file``), else the
  ``memoryport/user_id`` key of the request's ``_meta``, else the server's ``--user``. A
  client holding a user-bound token that claims another user in ``_meta`` is refused.
- **client key**: the ``memoryport/session_id`` key of ``_meta`` (the client picks its
  session), else the streamable-HTTP ``mcp-session-id`` header (one per connected client),
  else ``"default"`` (stdio: one client per process).

Each (user, client) pair gets its own ``Memory`` (``memoryport.open(home, user_id=...)``),
so sessions are per client and the session store, curated files and providers are scoped
to the user: no client sees another user's data.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memoryport.api import Memory
from memoryport.turn import Turn

__all__ = [
    "META_SESSION_KEY",
    "META_USER_KEY",
    "SESSION_HEADER",
    "ClientPool",
    "ClientState",
    "Identity",
    "IdentityError",
    "current_identity",
    "resolve_identity",
]

META_USER_KEY = "memoryport/user_id"
"""``_meta`` key a client sets to name its user (refused when a token binds another)."""
META_SESSION_KEY = "memoryport/session_id"
"""``_meta`` key a client sets to pick its session id (its client key)."""
SESSION_HEADER = "mcp-session-id"
"""The streamable-HTTP header naming a connected client's session."""


class IdentityError(ValueError):
    """The request's identity is contradictory (a token bound to another user)."""


@dataclass(frozen=True)
class Identity:
    """The user a request acts for and the client (session) it belongs to."""

    user_id: str
    client_key: str


current_identity: contextvars.ContextVar[Identity | None] = contextvars.ContextVar(
    "memoryport_mcp_identity", default=None
)
"""Set by the server middleware for the duration of one request."""


def _bearer(headers: Mapping[str, str]) -> str:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 200:
        raise IdentityError(f"_meta {what!r} must be a string of at most 200 characters")
    return value.strip()


def resolve_identity(
    headers: Mapping[str, str] | None,
    meta: Mapping[str, Any] | None,
    *,
    tokens: Mapping[str, str],
    default_user: str,
) -> Identity:
    """The identity of one request (see the module docstring for the precedence)."""
    heads = {k.lower(): v for k, v in (headers or {}).items()}
    extra = meta or {}
    token_user = tokens.get(_bearer(heads), "") if tokens else ""
    claimed = _text(extra.get(META_USER_KEY), META_USER_KEY)
    if token_user and claimed and claimed != token_user:
        raise IdentityError(
            f"this bearer token is bound to another user than {claimed!r}; drop "
            f"{META_USER_KEY!r} from _meta or use that user's token"
        )
    user = token_user or claimed or default_user
    session = _text(extra.get(META_SESSION_KEY), META_SESSION_KEY)
    if session:
        key = f"session:{session}"
    elif heads.get(SESSION_HEADER):
        key = f"http:{heads[SESSION_HEADER]}"
    else:
        key = "default"
    return Identity(user, key)


@dataclass
class ClientState:
    """One client's memory: its ``Memory`` (own session) and the turn ``recall`` opened."""

    memory: Memory
    session_hint: str = ""
    pending: Turn | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class ClientPool:
    """One started ``Memory`` per (user, client), at most ``max_clients`` (least recently
    used ones are closed: their session ends and providers are shut down)."""

    def __init__(self, opener: Callable[[str], Memory], max_clients: int = 64) -> None:
        self._opener = opener
        self._max = max_clients
        self._clients: OrderedDict[Identity, ClientState] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def peek(self, identity: Identity) -> ClientState | None:
        """The client's state when its memory is open already (never blocks on I/O)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the MCP server is shutting down")
            state = self._clients.get(identity)
            if state is not None:
                self._clients.move_to_end(identity)
            return state

    def get(self, identity: Identity) -> ClientState:
        """The client's state, opening its ``Memory`` and session on first use."""
        return self.peek(identity) or self._open(identity)

    def _open(self, identity: Identity) -> ClientState:
        memory = self._opener(identity.user_id)
        session = identity.client_key.removeprefix("session:")
        chosen = session if identity.client_key.startswith("session:") else None
        try:
            memory.start_session(chosen, source="mcp")
        except BaseException:
            memory.close()
            raise
        state = ClientState(memory, session_hint=chosen or "")
        evicted: list[ClientState] = []
        with self._lock:
            existing = self._clients.get(identity)
            if existing is not None:  # opened twice at once: keep the first
                evicted.append(state)
                state = existing
            else:
                self._clients[identity] = state
                while len(self._clients) > self._max:
                    evicted.append(self._clients.popitem(last=False)[1])
        for old in evicted:
            old.memory.close()
        return state

    def identities(self) -> list[Identity]:
        """The clients with an open memory, least recently used first."""
        with self._lock:
            return list(self._clients)

    def close_all(self) -> None:
        """Close every client's memory (sessions end, queued syncs delivered). Idempotent."""
        with self._lock:
            self._closed = True
            states = list(self._clients.values())
            self._clients.clear()
        for state in states:
            state.memory.close()
