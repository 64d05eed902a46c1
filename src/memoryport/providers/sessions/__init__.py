"""The built-in ``sessions`` provider: exposes ``session_search`` over a ``SessionStore``.

It never writes messages and never closes the store: ``Memory`` owns the store, persists
turns through it and closes it. The live session (whose lineage recall skips) and the user
scope come from the ``SessionContext`` the manager passes with each tool call, so a call
made right after a session switch already sees the new session. Used on its own, it falls
back to a ``session_id`` keyword, then to the context it was initialized with.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from memoryport.errors import MemoryportError, ToolArgumentError, tool_error, tool_error_json
from memoryport.provider import MemoryProvider, mark_builtin
from memoryport.providers.sessions.tool import SESSION_SEARCH_SCHEMA, ToolContext, session_search
from memoryport.storage.sessions.base import SessionStore
from memoryport.types import SessionContext, ToolSchema

__all__ = ["SessionSearchProvider", "create_sessions_provider"]

log = logging.getLogger("memoryport.providers.sessions")


class SessionSearchProvider(MemoryProvider):
    """Recall over the full conversation history (``session_search``)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._initial = SessionContext()

    @property
    def name(self) -> str:
        """Always ``"sessions"``."""
        return "sessions"

    def is_available(self) -> bool:
        """True: the store is embedded, nothing to configure."""
        return True

    def initialize(
        self, session_id: str, *, context: SessionContext | None = None, **kwargs: Any
    ) -> None:
        """Keep the context (the default when a tool call brings none)."""
        self._initial = context or SessionContext.from_kwargs(session_id, **kwargs)

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The ``session_search`` schema."""
        return [SESSION_SEARCH_SCHEMA]

    def handle_tool_call(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        context: SessionContext | None = None,
        **kwargs: Any,
    ) -> str:
        """Run ``session_search``; every failure comes back in the one tool-error shape
        (``{"success": false, "error", "error_type"}``, see ``memoryport.errors``).

        The live session and the user scope are the ``context``'s (the manager passes it);
        without one, a ``session_id`` keyword names the live session and the context from
        ``initialize`` gives the rest.
        """
        if tool_name != "session_search":
            return tool_error_json(f"sessions has no tool {tool_name!r}", "ToolNotFound")
        if context is None:
            live = kwargs.get("session_id")
            context = self._initial
            if isinstance(live, str) and live:
                context = context.switched(live, context.parent_session_id)
        tool_context = ToolContext(context.session_id, context.user_id or None)
        try:
            if not isinstance(args, dict):
                raise ToolArgumentError("arguments must be a JSON object")
            result = session_search(self.store, args, tool_context)
        except MemoryportError as exc:
            result = exc.to_dict()
        except Exception as exc:  # the tool edge: never let a provider bug crash the turn
            log.exception("session_search failed")
            result = tool_error(f"session_search failed: {exc}", type(exc).__name__)
        return json.dumps(result, ensure_ascii=False)


def create_sessions_provider(store: SessionStore) -> SessionSearchProvider:
    """Create the built-in sessions provider over ``store`` (marked as built-in)."""
    provider = SessionSearchProvider(store)
    mark_builtin(provider)
    return provider
