"""Tools a Hermes plugin registers with ``ctx.register_tool(...)`` inside ``register(ctx)``.

Hermes hands such tools to the model next to the provider's own. memoryport routes them
through the provider's tool table instead: the loaded provider's ``get_tool_schemas()``
also lists them and its ``handle_tool_call()`` dispatches them to their handlers, so the
manager, the agent and ``providers show --check`` see one provider with every tool.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memoryport.errors import ProviderError

__all__ = ["RegisteredTool", "attach_tools"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RegisteredTool:
    """One ``ctx.register_tool(name, toolset, schema, handler, ...)`` call, as Hermes takes it."""

    name: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    toolset: str = ""
    check_fn: Callable[[], Any] | None = None
    requires_env: tuple[str, ...] = ()
    is_async: bool = False

    @classmethod
    def from_call(
        cls,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: Sequence[str] | None = None,
        is_async: bool = False,
        description: str = "",
        **_ignored: Any,
    ) -> RegisteredTool:
        """Build from the arguments of Hermes' ``PluginContext.register_tool``."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"register_tool: name must be a non-empty string, got {name!r}")
        if not callable(handler):
            raise TypeError(f"register_tool({name!r}): handler is not callable")
        spec = dict(schema) if isinstance(schema, dict) else {}
        spec.setdefault("name", name)
        if description and not spec.get("description"):
            spec["description"] = description
        spec.setdefault("parameters", {"type": "object", "properties": {}})
        return cls(
            name=name,
            schema=spec,
            handler=handler,
            toolset=str(toolset or ""),
            check_fn=check_fn,
            requires_env=tuple(requires_env or ()),
            is_async=is_async,
        )

    def available(self) -> bool:
        """Hermes' gate: every ``requires_env`` variable is set and ``check_fn()`` is true."""
        if any(not os.environ.get(var) for var in self.requires_env):
            return False
        if self.check_fn is None:
            return True
        try:
            return bool(self.check_fn())
        except Exception as exc:  # a failing check hides the tool, as in Hermes
            logger.warning("tool %r: check_fn raised %r; tool hidden", self.name, exc)
            return False

    def invoke(self, args: Any, **kwargs: Any) -> Any:
        """Call ``handler(args, **kwargs)`` as Hermes does, passing only the keywords it
        accepts; the raw result (an awaitable for an ``async def`` handler) is returned."""
        try:
            params = inspect.signature(self.handler).parameters.values()
        except (TypeError, ValueError):
            params = None
        if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params):
            names = {p.name for p in params}
            kwargs = {k: v for k, v in kwargs.items() if k in names}
        return self.handler(args, **kwargs)

    def call(self, args: Any, **kwargs: Any) -> str:
        """Run the handler (an awaitable result is awaited); return a JSON string."""
        result = self.invoke(args, **kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return result if isinstance(result, str) else json.dumps(result, default=str)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _routing_methods(
    tools: dict[str, RegisteredTool],
    own_schemas: Callable[[], Any],
    own_call: Callable[..., Any] | None,
) -> tuple[Callable[[], list[dict[str, Any]]], Callable[..., str]]:
    def get_tool_schemas() -> list[dict[str, Any]]:
        schemas = [dict(s) for s in (own_schemas() or [])]
        taken = {s.get("name") for s in schemas}
        for tool in tools.values():
            if tool.name in taken:
                logger.warning("ctx tool %r is shadowed by the provider's own", tool.name)
            elif tool.available():
                schemas.append(dict(tool.schema))
        return schemas

    def handle_tool_call(tool_name: str, args: Any, **kwargs: Any) -> str:
        own_names = {s.get("name") for s in (own_schemas() or [])}
        tool = tools.get(tool_name)
        if tool is not None and tool_name not in own_names:
            return tool.call(args, **kwargs)
        if own_call is None:
            raise ProviderError(
                f"tool {tool_name!r} is listed by the plugin but nothing handles it: "
                "register it with ctx.register_tool(...) or implement handle_tool_call",
                hook="handle_tool_call",
            )
        result: str = own_call(tool_name, args, **kwargs)
        return result

    return get_tool_schemas, handle_tool_call


def attach_tools(provider: Any, registered: Sequence[RegisteredTool]) -> Any:
    """Make ``provider`` offer ``registered`` tools through its own tool table.

    The provider keeps its identity and class hierarchy (``isinstance`` still holds): it
    becomes an instance of a small subclass whose ``get_tool_schemas`` and
    ``handle_tool_call`` also cover the registered tools. Objects whose class cannot be
    changed get the two methods as instance attributes instead.
    """
    if not registered:
        return provider
    tools = {t.name: t for t in registered}
    own_call = getattr(provider, "handle_tool_call", None)
    schemas, call = _routing_methods(tools, provider.get_tool_schemas, own_call)
    base = type(provider)
    namespace = {
        "__module__": base.__module__,
        "__qualname__": base.__qualname__,
        "__doc__": base.__doc__,
        "get_tool_schemas": lambda self: schemas(),
        "handle_tool_call": lambda self, tool_name, args, **kw: call(tool_name, args, **kw),
        "ctx_tools": property(lambda self: dict(tools)),
    }
    try:
        provider.__class__ = type(base.__name__, (base,), namespace)
    except TypeError:
        provider.get_tool_schemas = schemas
        provider.handle_tool_call = call
    return provider
