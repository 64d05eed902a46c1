"""``RemoteProvider``: the scaffolding the bundled remote providers share.

Hindsight, Supermemory, OpenViking, RetainDB and ByteRover each read one config section,
hold a home and a session context, send their writes through a durable JSONL
:class:`~memoryport.storage.jsonl_outbox.Outbox` on the manager's queue, and answer
unknown or unready tool calls in the one error shape. This base class owns those parts;
each provider keeps only what is its own (client, scoping, tools, recall).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from memoryport.config import get_secret, load_config
from memoryport.config.schema import ConfigField
from memoryport.errors import ConfigError, MemoryportError, tool_error, tool_error_json
from memoryport.provider import MemoryProvider
from memoryport.storage.jsonl_outbox import BackendError, Outbox
from memoryport.types import SessionContext

__all__ = ["RemoteProvider", "RemoteSettings"]


class RemoteSettings(Protocol):
    """What the base class reads from a provider's checked settings."""

    @property
    def retry_attempts(self) -> int:
        """Attempts per queued write."""

    @property
    def retry_backoff_s(self) -> float:
        """First retry delay."""

    @property
    def retry_cooldown_s(self) -> float:
        """Seconds after a failed round before writes wait through backoff again."""

    @property
    def tools(self) -> bool:
        """True when the provider's tools are offered."""


S = TypeVar("S", bound=RemoteSettings)
H = TypeVar("H")


class RemoteProvider(MemoryProvider, Generic[S]):
    """A remote provider named *name* whose settings *parse* reads from its section."""

    def __init__(self, name: str, schema: list[ConfigField], settings: S,
                 parse: Callable[[Mapping[str, Any]], S], home: Path | None,
                 log: logging.Logger) -> None:
        self._name = name
        self._schema = schema
        self._parse = parse
        self._log = log
        self.settings: S = settings
        self.home = home
        self.outbox: Outbox | None = None
        self._context = SessionContext()

    @property
    def name(self) -> str:
        """The provider's name (its ``memory.provider`` value and config section)."""
        return self._name

    def get_config_schema(self) -> list[ConfigField]:
        """A copy of the provider's settings schema (drives ``memoryport setup NAME``)."""
        return [f.copy() for f in self._schema]

    def check_config(self, values: dict[str, Any]) -> list[str]:
        """Every problem the provider's settings parser finds in *values* (the schema's
        checks and its own rules, such as id formats)."""
        try:
            self._parse(values)
        except ConfigError as exc:
            return exc.problems or [str(exc)]
        return []

    def _secret_set(self, env_var: str) -> bool:
        """True when *env_var* is set in the environment or the home's ``.env``."""
        if self.home is None:
            return False
        try:
            return get_secret(self.home, env_var) is not None
        except MemoryportError:
            return False

    def _begin(self, session_id: str, kwargs: dict[str, Any]) -> tuple[SessionContext, Path]:
        """Start ``initialize``: the session context, its home and fresh settings.

        Raises ``ConfigError`` without a home or on bad settings, before anything changes.
        """
        context = SessionContext.from_kwargs(session_id, **kwargs)
        if context.home is None:
            raise ConfigError(f"{self._name} needs the home directory (initialize's home kwarg)")
        self.settings = self._parse(load_config(context.home).provider_section(self._name))
        return context, context.home

    def _open_outbox(self, home: Path, send: Callable[[dict[str, Any]], Any]) -> Outbox:
        """The durable outbox under ``<home>/<name>``, retrying as the settings say."""
        self.outbox = Outbox(home / self._name, send, attempts=self.settings.retry_attempts,
                             backoff_s=self.settings.retry_backoff_s,
                             cooldown_s=self.settings.retry_cooldown_s, log=self._log)
        return self.outbox

    def _tool_target(self, tool_name: str, tools: Collection[str], handle: H | None) -> H | str:
        """*handle* (the client a tool call runs on) when the call can run, else the
        tool-error JSON saying why not: an unknown tool, tools off, or not initialized."""
        if tool_name not in tools or not self.settings.tools:
            return tool_error_json(f"{self._name} has no tool {tool_name!r}", "ToolNotFound",
                                   backend=self._name)
        if handle is None:
            return tool_error_json(f"{self._name} is not initialized (or was shut down)",
                                   "ToolUnavailable", backend=self._name)
        return handle

    def _tool_json(self, run: Callable[[], Any]) -> str:
        """The JSON answer of a tool call: *run*'s result, or the one error shape naming
        this backend when it raises a backend or memoryport error."""
        try:
            result: Any = run()
        except BackendError as exc:
            result = tool_error(str(exc), "BackendError", backend=self._name)
        except MemoryportError as exc:
            result = {**exc.to_dict(), "backend": self._name}
        return json.dumps(result, ensure_ascii=False, default=str)
