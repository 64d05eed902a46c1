"""Providers written to the seed-01 interface proposal run unmodified.

The proposal (``MemoryProvider`` protocol with ``initialize(session_key, config)``,
``capabilities()``, ``enrich_turn``, ``on_memory_write(..., old_text)``,
``on_turn_complete`` and ``on_compress``) names the lifecycle differently from Hermes. At
registration ``_hooks.inspect_provider`` asks :func:`adapt` once which of the provider's
methods map onto which canonical hook, and wraps each in an adapter built here; nothing is
inspected per call.

Recognition is duck-typed: a provider is *seed-01 shaped* when it has a callable
``enrich_turn``, ``on_turn_complete`` or ``on_compress``, whether or not it subclasses
``memoryport.provider.MemoryProvider``. A seed-named method maps onto its hook only when the
provider does not implement the Hermes hook itself:

==========================================  =============================================
seed-01 method                              canonical hook (what the manager calls)
==========================================  =============================================
``initialize(session_key, config)``         ``initialize``: the session id and the
                                            provider's own ``config.yaml`` section
``enrich_turn(user_message, messages)``     ``prefetch``: the clean user message and the
                                            session's stored history; a ``str`` (or
                                            ``None``) or a list of ``(label, text)``
``on_turn_complete(user, assistant)``       ``sync_turn``: completed turns only
``on_compress(messages, compression_count)``  ``on_pre_compress``: plain-text messages
``on_memory_write(action, target,           ``on_memory_write``: ``old_text`` taken from
content, old_text)``                        the write's metadata
==========================================  =============================================

``capabilities()`` is honoured for every provider (see ``_capabilities``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memoryport.types import ContextPair, Message, flatten_content

__all__ = ["SEED01_METHODS", "Adapter", "LabelledContext", "adapt", "is_seed01_shaped"]

log = logging.getLogger(__name__)

SEED01_METHODS: dict[str, str] = {
    "enrich_turn": "prefetch",
    "on_turn_complete": "sync_turn",
    "on_compress": "on_pre_compress",
}
"""Seed-01 method name -> the canonical hook it is called through."""

Adapter = tuple[Callable[..., Any], bool]
"""An adapted hook: the callable taking the canonical arguments, and whether it is async."""

_MAX_LABEL = 80


@dataclass(frozen=True)
class LabelledContext:
    """Recall an ``enrich_turn`` returned as ``(label, text)`` pairs, labelled in the fence."""

    sections: tuple[tuple[str, str], ...]

    def pairs(self, provider: str) -> list[ContextPair]:
        """The non-empty sections as ``(label, text)``, each label prefixed by ``provider``."""
        out: list[ContextPair] = []
        for label, text in self.sections:
            if text.strip():
                out.append((provider if label in ("", provider) else f"{provider}: {label}", text))
        return out


def is_seed01_shaped(provider: Any) -> bool:
    """True when ``provider`` has any seed-01-only method (``enrich_turn`` and the like)."""
    return any(callable(getattr(provider, method, None)) for method in SEED01_METHODS)


def _positional_names(function: Callable[..., Any]) -> list[str] | None:
    """Names of the positional parameters (``None`` when the signature cannot be read)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params if p.kind in kinds]


def _wrap(
    function: Callable[..., Any],
    arguments: Callable[..., tuple[Any, ...]],
    result: Callable[[Any], Any] = lambda value: value,
) -> Adapter:
    """An adapter calling ``function(*arguments(canonical...))`` and mapping its result."""
    if inspect.iscoroutinefunction(function):

        async def adapted_async(*args: Any, **kwargs: Any) -> Any:
            return result(await function(*arguments(*args, **kwargs)))

        return adapted_async, True

    def adapted(*args: Any, **kwargs: Any) -> Any:
        return result(function(*arguments(*args, **kwargs)))

    return adapted, False


def _recall(value: Any) -> Any:
    """``enrich_turn``'s answer as the manager's recall: text, or labelled sections."""
    if value is None or isinstance(value, str | bytes | bytearray):
        return value
    if isinstance(value, list | tuple) and all(
        isinstance(item, list | tuple) and len(item) == 2 for item in value
    ):
        sections = tuple(
            (str(label)[:_MAX_LABEL], text if isinstance(text, str) else str(text or ""))
            for label, text in value
        )
        return LabelledContext(sections)
    raise TypeError(
        f"enrich_turn returned {type(value).__name__}; expected str, None or a list of "
        "(label, text) pairs"
    )


def plain_messages(messages: Any) -> list[Message]:
    """``messages`` as ``{"role": str, "content": str}`` dicts (the seed's ``on_compress``)."""
    out: list[Message] = []
    for message in messages if isinstance(messages, list | tuple) else []:
        if isinstance(message, Mapping):
            out.append(
                {
                    "role": str(message.get("role") or ""),
                    "content": flatten_content(message.get("content")),
                }
            )
    return out


def _history(history: Any) -> list[Message]:
    """The conversation for ``enrich_turn``: a list, or what a zero-argument getter returns."""
    value = history() if callable(history) else history
    return [dict(m) for m in value] if isinstance(value, list | tuple) else []


def _initialize_args(provider: Any) -> Callable[..., tuple[Any, ...]]:
    """``initialize``'s arguments: the session id and the provider's own config section.

    ``provider_config`` is that section, or a getter ``section(name)`` (``Memory`` passes
    ``Config.provider_section``) asked with the provider's ``name``.
    """

    def arguments(session_id: str, provider_config: Any = None, **_: Any) -> tuple[Any, ...]:
        section = provider_config
        if callable(section):
            section = section(str(getattr(provider, "name", "")))
        return session_id, dict(section) if isinstance(section, Mapping) else {}

    return arguments


def _enrich_args(query: str, history: Any = None, **_: Any) -> tuple[Any, ...]:
    return query, _history(history)


def _turn_args(user_content: str, assistant_content: str, **_: Any) -> tuple[Any, ...]:
    return user_content, assistant_content


def _compress_args(messages: Any, compression_count: int = 0, **_: Any) -> tuple[Any, ...]:
    return plain_messages(messages), compression_count


def _write_args(
    action: str, target: str, content: str, metadata: Any = None, **_: Any
) -> tuple[Any, ...]:
    old_text = metadata.get("old_text") if isinstance(metadata, Mapping) else None
    return action, target, content, old_text


def _contribution(value: Any) -> str:
    """``on_compress`` returns None in the proposal; a string is kept as a contribution."""
    return value if isinstance(value, str) else ""


def adapt(provider: Any, implements: Callable[[str], bool]) -> dict[str, Adapter]:
    """The canonical hooks of a seed-01 shaped ``provider``, adapted; ``{}`` for other shapes.

    ``implements(hook)`` tells whether the provider implements a canonical hook itself (then
    its seed-01 twin is not mapped onto it).
    """
    if not is_seed01_shaped(provider):
        return {}
    adapters: dict[str, Adapter] = {}
    mapped: dict[str, tuple[Callable[..., tuple[Any, ...]], Callable[[Any], Any]]] = {
        "prefetch": (_enrich_args, _recall),
        "sync_turn": (_turn_args, lambda value: None),
        "on_pre_compress": (_compress_args, _contribution),
    }
    for method, hook in SEED01_METHODS.items():
        function = getattr(provider, method, None)
        if callable(function) and not implements(hook):
            arguments, result = mapped[hook]
            adapters[hook] = _wrap(function, arguments, result)
    initialize = getattr(provider, "initialize", None)
    names = _positional_names(initialize) if callable(initialize) else None
    if callable(initialize) and names is not None and len(names) >= 2:
        adapters["initialize"] = _wrap(initialize, _initialize_args(provider))
    write = getattr(provider, "on_memory_write", None)
    names = _positional_names(write) if callable(write) else None
    if callable(write) and names is not None and names[3:4] == ["old_text"]:
        adapters["on_memory_write"] = _wrap(write, _write_args)
    return adapters
