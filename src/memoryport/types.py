"""Frozen dataclasses and aliases shared by every layer."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeAlias

__all__ = [
    "ContextPair",
    "InitContext",
    "JSONDict",
    "Message",
    "SessionContext",
    "ToolSchema",
    "alias_home",
    "flatten_content",
    "valid_text",
    "valid_utf8",
]

JSONDict: TypeAlias = dict[str, Any]
"""A JSON object as Python sees it."""

ToolSchema: TypeAlias = dict[str, Any]
"""An OpenAI function schema: ``{"name", "description", "parameters"}``."""

Message: TypeAlias = dict[str, Any]
"""An OpenAI-style chat message: ``{"role": ..., "content": ...}``."""

ContextPair: TypeAlias = tuple[str, str]
"""A ``(label, text)`` pair of recalled context from one provider."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` as valid UTF-8: lone surrogates become U+FFFD, a surrogate pair written as
    two code points is joined into its character; nothing else changes.

    Text from JSON (``"\\ud800"``), a broken decoder or undecodable command-line bytes can
    hold lone surrogates, which cannot be written as UTF-8. The one place every layer (the
    turn, curated memory, the session store, import) makes text valid.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def valid_utf8(value: Any) -> Any:
    """``value`` with every string in it (dict keys too, lists, tuples) made valid UTF-8
    (:func:`valid_text`); tuples become lists, other values are returned unchanged."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_utf8(k): valid_utf8(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_utf8(v) for v in value]
    return value


def alias_home(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``home`` and ``hermes_home`` set to the same string (whichever was
    given, ``home`` first); unchanged when neither is. The one place the alias is made."""
    out = dict(kwargs)
    home = out.get("home") or out.get("hermes_home")
    if home:
        out["home"] = out["hermes_home"] = str(home)
    return out


@dataclass(frozen=True)
class SessionContext:
    """The one session context: who, where and which session. ``Memory`` owns it (frozen;
    a new one is made at every switch) and the manager passes it with every hook.

    A hook that declares a ``context`` parameter receives this object; every other hook
    gets the Hermes keywords it accepts instead (``session_id=...``; ``initialize`` gets
    ``to_kwargs()``, where ``hermes_home`` is always the same as ``home``, so providers
    written for Hermes find their storage root).

    Attributes:
        home: profile-scoped home directory; providers must keep their data under it.
        platform: where the agent runs: ``cli``, ``api``, ``mcp``, ``telegram``, ...
        user_id: the end user the session belongs to (multi-tenant scoping).
        agent_identity: the agent profile / persona name.
        agent_workspace: the agent's working directory, if any.
        parent_session_id: the session this one continues (compression, branch).
        session_title: a human-readable session label.
        chat_id / chat_type / thread_id: gateway chat coordinates.
        gateway_session_key: the gateway's own key for the conversation.
        agent_context: ``primary`` (default), ``subagent``, ``cron`` or ``flush``;
            providers should skip writes for non-primary contexts.
        session_id: the live session ("" before a session starts); ``initialize`` and
            ``on_session_switch`` also receive it positionally.
        extra: any other keyword arguments, passed through unchanged.
    """

    home: Path | None = None
    platform: str = "cli"
    user_id: str = ""
    agent_identity: str = ""
    agent_workspace: str = ""
    parent_session_id: str = ""
    session_title: str = ""
    chat_id: str = ""
    chat_type: str = ""
    thread_id: str = ""
    gateway_session_key: str = ""
    agent_context: str = "primary"
    session_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_kwargs(self) -> dict[str, Any]:
        """Return the ``initialize`` kwargs: ``home`` as str plus ``hermes_home``, ``platform``,
        ``agent_context``, and every other field that is set (empty ones are left out, as
        Hermes does, so providers see only what is known). ``session_id`` is not among
        them: ``initialize`` takes it positionally."""
        values = asdict(self)
        extra = values.pop("extra")
        home = values.pop("home")
        values.pop("session_id")
        always = ("platform", "agent_context")
        kwargs: dict[str, Any] = {k: v for k, v in values.items() if v or k in always}
        if home is not None:
            kwargs["home"] = str(home)
        kwargs.update(extra)
        return alias_home(kwargs)

    @classmethod
    def from_kwargs(cls, session_id: str = "", **kwargs: Any) -> SessionContext:
        """Build from ``initialize`` kwargs; ``hermes_home`` is accepted as an alias of ``home``."""
        known = {f for f in cls.__dataclass_fields__ if f not in ("extra", "home", "session_id")}
        kwargs = alias_home(kwargs)
        home_value = kwargs.pop("home", None)
        kwargs.pop("hermes_home", None)
        fields = {k: kwargs.pop(k) for k in list(kwargs) if k in known}
        return cls(
            home=Path(home_value) if home_value else None,
            session_id=session_id,
            extra=kwargs,
            **fields,
        )

    def switched(self, session_id: str, parent_session_id: str = "") -> SessionContext:
        """This context for another session (``parent_session_id`` for a linked one)."""
        return replace(
            self, session_id=session_id, parent_session_id=parent_session_id, session_title=""
        )


InitContext = SessionContext
"""The former name of :class:`SessionContext` (the ``initialize`` keywords)."""


def flatten_content(content: Any) -> str:
    """Turn message content (str, None, or a list of multimodal parts) into text.

    A part's ``text`` is kept; a part without text becomes ``[type]`` (e.g. ``[image_url]``);
    parts are joined with newlines. Anything else is ``str()``-ed.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                parts.append(str(text) if text is not None else f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)
