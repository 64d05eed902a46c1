"""The built-in ``sessions`` provider: exposes ``session_search`` over a ``SessionStore``.

It never writes messages and never closes the store: ``Memory`` owns the store, persists
turns through it and closes it. It learns the live session id from ``initialize`` and
``on_session_switch`` (so recall skips the current lineage) and the user scope from the
``user_id`` initialize kwarg.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from memoryport._builtin import mark_builtin
from memoryport.errors import MemoryportError
from memoryport.provider import MemoryProvider
from memoryport.providers.sessions.tool import SESSION_SEARCH_SCHEMA, ToolContext, session_search
from memoryport.storage.sessions.base import SessionStore
from memoryport.types import InitContext, ToolSchema

__all__ = ["SessionSearchProvider", "create_sessions_provider"]

log = logging.getLogger("memoryport.providers.sessions")


class SessionSearchProvider(MemoryProvider):
    """Recall over the full conversation history (``session_search``)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.session_id = ""
        self.user_id: str | None = None

    @property
    def name(self) -> str:
        """Always ``"sessions"``."""
        return "sessions"

    def is_available(self) -> bool:
        """True: the store is embedded, nothing to configure."""
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Remember the live session id and the user scope."""
        context = InitContext.from_kwargs(**kwargs)
        self.session_id = session_id
        self.user_id = context.user_id or None

    def get_tool_schemas(self) -> list[ToolSchema]:
        """The ``session_search`` schema."""
        return [SESSION_SEARCH_SCHEMA]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run ``session_search``; every failure comes back as ``{"success": false, "error"}``.

        The live session (whose lineage recall skips) is the ``session_id`` keyword the
        caller passes (``Memory.call_tool`` always does), falling back to the id learned
        from ``initialize``/``on_session_switch``: the manager delivers switches in the
        background, so right after a switch ``self.session_id`` may still be the old one.
        """
        if tool_name != "session_search":
            return json.dumps({"success": False, "error": f"sessions has no tool {tool_name!r}"})
        live = kwargs.get("session_id")
        context = ToolContext(
            live if isinstance(live, str) and live else self.session_id, self.user_id
        )
        try:
            if not isinstance(args, dict):
                raise MemoryportError("arguments must be a JSON object")
            result = session_search(self.store, args, context)
        except MemoryportError as exc:
            result = {"success": False, "error": str(exc), "error_type": type(exc).__name__}
        except Exception as exc:  # the tool edge: never let a provider bug crash the turn
            log.exception("session_search failed")
            result = {
                "success": False,
                "error": f"session_search failed: {exc}",
                "error_type": type(exc).__name__,
            }
        return json.dumps(result, ensure_ascii=False)

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        reason: str = "",
        **kwargs: Any,
    ) -> None:
        """Track the new live session id."""
        self.session_id = new_session_id


def create_sessions_provider(store: SessionStore) -> SessionSearchProvider:
    """Create the built-in sessions provider over ``store`` (marked as built-in)."""
    provider = SessionSearchProvider(store)
    mark_builtin(provider)
    return provider
