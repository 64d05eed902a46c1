"""Registration-time inspection of a provider's hooks.

When a provider is registered, the manager asks this module once which hooks the provider
overrides, whether each is ``async def``, and how to call it: older Hermes providers use
narrower signatures (``on_memory_write(action, target, content)``, ``sync_turn(user,
assistant)`` without ``**kwargs``) and the manager must not break them. Each hook becomes a
``BoundHook`` whose ``call`` passes only what the function accepts (pluggy's subset-of-
arguments idea), so no signature is inspected per call.

Providers written to the seed-01 proposal (``enrich_turn``, ``on_turn_complete``,
``on_compress``, ``initialize(session_key, config)``, ``on_memory_write(..., old_text)``) are
recognised here too and their methods are bound through the adapters of ``_seed01``.

Some keywords exist only for those adapters (:data:`ADAPTER_KEYWORDS`: a provider's own
config section, the session history getter, the compression count). They are never passed
to a Hermes-shaped hook, not even through ``**kwargs``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryport.manager._seed01 import adapt
from memoryport.provider import MemoryProvider

__all__ = [
    "ADAPTER_KEYWORDS",
    "HOOKS",
    "BoundHook",
    "HookSpec",
    "ProviderProfile",
    "inspect_provider",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HookSpec:
    """The canonical call shape of one hook: leading positional names, then keywords."""

    name: str
    positional: tuple[str, ...]
    keywords: tuple[str, ...] = ()


HOOKS: dict[str, HookSpec] = {
    spec.name: spec
    for spec in (
        HookSpec("is_available", ()),
        HookSpec("initialize", ("session_id",)),
        HookSpec("get_tool_schemas", ()),
        HookSpec("handle_tool_call", ("tool_name", "args")),
        HookSpec("system_prompt_block", ()),
        HookSpec("prefetch", ("query",), ("session_id",)),
        HookSpec("queue_prefetch", ("query",), ("session_id",)),
        HookSpec("sync_turn", ("user_content", "assistant_content"), ("session_id", "messages")),
        HookSpec("on_turn_start", ("turn_number", "message")),
        HookSpec("on_session_end", ("messages",)),
        HookSpec(
            "on_session_switch",
            ("new_session_id",),
            ("parent_session_id", "reset", "reason"),
        ),
        HookSpec("on_pre_compress", ("messages",)),
        HookSpec("on_memory_write", ("action", "target", "content", "metadata")),
        HookSpec("on_delegation", ("task", "result"), ("child_session_id",)),
        HookSpec("shutdown", ()),
        HookSpec("capabilities", ()),
    )
}

ADAPTER_KEYWORDS = frozenset({"provider_config", "history", "compression_count"})
"""Keywords the manager passes for seed-01 adapters only (see the module docstring)."""

_POSITIONAL_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True)
class BoundHook:
    """One provider hook, inspected once. ``call(*args, **kwargs)`` adapts to its signature.

    Attributes:
        name: the hook name.
        overridden: False when the provider inherits the base class no-op (or lacks the hook).
        is_async: True when the hook is ``async def``; ``call`` then returns a coroutine.
        n_positional: how many of the canonical positional arguments the function takes.
        keywords: keyword names it accepts (``None`` means any, through ``**kwargs``).
        wants_context: True when it declares a ``context`` parameter: it then receives the
            ``SessionContext``; other hooks never see it (Hermes-shaped keywords only).
        adapted: True for a seed-01 adapter (``_seed01``): it receives every keyword,
            ``ADAPTER_KEYWORDS`` included; no other hook ever sees those.
    """

    name: str
    function: Callable[..., Any] | None
    overridden: bool
    is_async: bool
    n_positional: int
    keywords: frozenset[str] | None
    wants_context: bool = False
    adapted: bool = False

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Call the hook with the canonical arguments, dropping what it does not accept."""
        if self.function is None:
            return None
        spec = HOOKS[self.name]
        positional = args[: self.n_positional]
        for extra_name, extra_value in zip(
            spec.positional[self.n_positional :], args[self.n_positional :], strict=False
        ):
            kwargs.setdefault(extra_name, extra_value)
        if self.keywords is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self.keywords}
        elif not self.adapted:
            if not self.wants_context:
                kwargs.pop("context", None)
            for key in ADAPTER_KEYWORDS.intersection(kwargs):
                del kwargs[key]
        return self.function(*positional, **kwargs)


@dataclass(frozen=True)
class ProviderProfile:
    """What the manager learned about a provider when it was registered.

    ``shape`` is ``"hermes"`` or ``"seed01"`` (some hooks bound through seed-01 adapters).
    """

    name: str
    hooks: dict[str, BoundHook]
    shape: str = "hermes"

    def overrides(self, hook: str) -> bool:
        """True when the provider implements ``hook`` itself."""
        bound = self.hooks.get(hook)
        return bool(bound and bound.overridden)

    @property
    def async_hooks(self) -> list[str]:
        """Names of the hooks written as ``async def``."""
        return [name for name, hook in self.hooks.items() if hook.is_async]


def _is_overridden(provider: Any, hook: str) -> bool:
    if not isinstance(provider, MemoryProvider):
        return True
    base = getattr(MemoryProvider, hook, None)
    own = getattr(type(provider), hook, None)
    return own is not base


def _bind(provider: Any, hook: str) -> BoundHook:
    function = getattr(provider, hook, None)
    if function is None or not callable(function):
        return BoundHook(hook, None, False, False, 0, frozenset())
    spec = HOOKS[hook]
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        log.debug("cannot inspect %s.%s; passing every argument", type(provider).__name__, hook)
        return BoundHook(
            hook, function, _is_overridden(provider, hook), False, len(spec.positional), None
        )
    var_positional = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params)
    positional_params = [p for p in params if p.kind in _POSITIONAL_KINDS]
    n_positional = (
        len(spec.positional)
        if var_positional
        else min(len(spec.positional), len(positional_params))
    )
    keywords: frozenset[str] | None = (
        None
        if var_keyword
        else frozenset(p.name for p in params if p.kind in _KEYWORD_KINDS) - ADAPTER_KEYWORDS
    )
    return BoundHook(
        name=hook,
        function=function,
        overridden=_is_overridden(provider, hook),
        is_async=inspect.iscoroutinefunction(function),
        n_positional=n_positional,
        keywords=keywords,
        wants_context=any(p.name == "context" and p.kind in _KEYWORD_KINDS for p in params),
    )


def inspect_provider(provider: Any, name: str) -> ProviderProfile:
    """Inspect every hook of ``provider`` once and return its profile.

    Hooks of a seed-01 shaped provider are bound through their adapters (``_seed01``).
    """
    hooks = {hook: _bind(provider, hook) for hook in HOOKS}
    adapters = adapt(provider, lambda hook: hooks[hook].overridden)
    for hook, (function, is_async) in adapters.items():
        positional = len(HOOKS[hook].positional)
        hooks[hook] = BoundHook(hook, function, True, is_async, positional, None, adapted=True)
    return ProviderProfile(name=name, hooks=hooks, shape="seed01" if adapters else "hermes")
