"""``capabilities()``: what a provider declares once, after ``initialize``, frozen for the session.

Any provider may define ``capabilities() -> dict`` (the seed-01 proposal's member). The
manager calls it once per provider, right after that provider's ``initialize``; later calls
never happen and later changes to the returned dict are ignored. Keys (both optional;
unknown keys are ignored so providers can declare more than this version understands):

``tool_names``
    A collection of tool names: only those of the provider's own tools are offered to the
    model and routed. Absent means every tool its ``get_tool_schemas()`` lists.
``suppresses_local_writes``
    ``True`` (both curated targets), ``False``, or per target ``{"memory": bool, "user":
    bool}``. For a suppressed target the curated ``memory`` tool skips the local file write
    but still reports the write to every provider's ``on_memory_write``; with both targets
    suppressed, ``Memory.local_writes_suppressed`` is True and the reference agent skips
    its background memory review.

A malformed value is logged (naming the provider, the key and what is expected) and
treated as absent; the provider stays registered.

The suppressed targets reach the curated-memory provider without it knowing any other
provider: a provider with a ``set_suppressed_targets(targets: frozenset[str])`` method (the
bundled curated provider) receives the union of every other provider's suppressed targets
once, after all providers are initialized.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memoryport.manager._slot import ProviderSlot
from memoryport.types import ToolSchema

__all__ = [
    "CURATED_TARGETS",
    "Capabilities",
    "CapabilityTable",
    "SuppressibleWriter",
    "parse_capabilities",
]

log = logging.getLogger("memoryport.manager")

CURATED_TARGETS = frozenset({"memory", "user"})
"""The curated-memory targets ``suppresses_local_writes`` can name."""


@runtime_checkable
class SuppressibleWriter(Protocol):
    """A provider whose local writes other providers may suppress (curated memory)."""

    def set_suppressed_targets(self, targets: frozenset[str]) -> None:
        """Receive the targets whose local write to skip (reported to listeners anyway)."""


@dataclass(frozen=True)
class Capabilities:
    """One provider's frozen capabilities (the defaults when it declares none)."""

    tool_names: frozenset[str] | None = None
    suppressed_targets: frozenset[str] = frozenset()

    def offered(self, schemas: list[ToolSchema]) -> list[ToolSchema]:
        """The schemas whose tools this provider lets the model see."""
        if self.tool_names is None:
            return schemas
        return [s for s in schemas if s.get("name") in self.tool_names]


def _tool_names(value: Any, provider: str) -> frozenset[str] | None:
    if isinstance(value, str) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        log.warning(
            "provider %r: capabilities()['tool_names'] must be a set or list of tool names, "
            "got %s; offering all of its tools",
            provider,
            type(value).__name__,
        )
        return None
    given = list(value)
    names = [name for name in given if isinstance(name, str) and name]
    if len(names) != len(given):
        log.warning("provider %r: capabilities()['tool_names'] has non-string names", provider)
    return frozenset(names)


def _suppressed(value: Any, provider: str) -> frozenset[str]:
    if isinstance(value, bool):
        return CURATED_TARGETS if value else frozenset()
    if isinstance(value, Mapping):
        unknown = [key for key in value if key not in CURATED_TARGETS]
        flags = [value.get(target) for target in CURATED_TARGETS if target in value]
        if not unknown and all(isinstance(flag, bool) for flag in flags):
            return frozenset(t for t in CURATED_TARGETS if value.get(t) is True)
    log.warning(
        "provider %r: capabilities()['suppresses_local_writes'] must be a bool or "
        '{"memory": bool, "user": bool}, got %r; local writes are kept',
        provider,
        value,
    )
    return frozenset()


def parse_capabilities(value: Any, provider: str) -> Capabilities:
    """``capabilities()``'s answer as :class:`Capabilities`; malformed parts become defaults."""
    if value is None:
        return Capabilities()
    if not isinstance(value, Mapping):
        log.warning(
            "provider %r: capabilities() must return a dict, got %s; using the defaults",
            provider,
            type(value).__name__,
        )
        return Capabilities()
    tools = _tool_names(value["tool_names"], provider) if "tool_names" in value else None
    suppressed = (
        _suppressed(value["suppresses_local_writes"], provider)
        if "suppresses_local_writes" in value
        else frozenset()
    )
    return Capabilities(tools, suppressed)


class CapabilityTable:
    """Every provider's capabilities, read once after its ``initialize`` and then frozen."""

    def __init__(self) -> None:
        self._by_name: dict[str, Capabilities] = {}

    def get(self, provider: str) -> Capabilities:
        """The frozen capabilities of ``provider`` (defaults before it was read)."""
        return self._by_name.get(provider, Capabilities())

    def read(self, provider: str, call: Callable[[], Any]) -> None:
        """Call ``capabilities()`` through ``call`` once; never again for this provider."""
        if provider in self._by_name:
            return
        try:
            self._by_name[provider] = parse_capabilities(call(), provider)
        except Exception as exc:
            log.warning("provider %r: capabilities() failed: %r; using the defaults", provider, exc)
            self._by_name[provider] = Capabilities()

    def suppressed_by_others(self, provider: str) -> frozenset[str]:
        """Targets suppressed by any provider other than ``provider``."""
        targets: frozenset[str] = frozenset()
        for name, caps in self._by_name.items():
            if name != provider:
                targets |= caps.suppressed_targets
        return targets

    def freeze(self, slots: list[ProviderSlot], run: Callable[[Callable[[], Any]], Any]) -> None:
        """Read each initialized provider's ``capabilities()`` once (through ``run``, which
        applies the deadline), then :meth:`publish` the suppressed targets."""
        for slot in slots:
            if not slot.initialized or slot.name in self._by_name:
                continue
            hook = slot.profile.hooks["capabilities"]
            if hook.overridden:
                self.read(slot.name, functools.partial(run, hook.call))
            else:
                self._by_name[slot.name] = Capabilities()
        self.publish((slot.name, slot.provider) for slot in slots)

    @property
    def suppressed_targets(self) -> frozenset[str]:
        """The curated targets some provider suppresses local writes for."""
        return self.suppressed_by_others("")

    def publish(self, providers: Iterable[tuple[str, Any]]) -> None:
        """Hand each ``SuppressibleWriter`` the targets the *other* providers suppress."""
        for name, provider in providers:
            if isinstance(provider, SuppressibleWriter):
                try:
                    provider.set_suppressed_targets(self.suppressed_by_others(name))
                except Exception as exc:
                    log.warning("provider %r: set_suppressed_targets failed: %r", name, exc)
