"""Import the active provider plugin and turn it into a provider instance.

A plugin module may take either Hermes shape:

* ``register(ctx)`` calling ``ctx.register_memory_provider(provider)``; the provider may
  subclass ``MemoryProvider`` or only match its shape (name, is_available, initialize,
  get_tool_schemas);
* no ``register``: the module's ``MemoryProvider`` subclass is instantiated. Classes
  defined in the module itself win over classes from its submodules, which win over
  imported ones; ties are broken by class name, so the choice is deterministic.

An entry point may also point straight at a ``register`` function or a provider class.
A plugin that fails to import never raises out of ``load_provider``: the result is None
and the error, with its traceback, is recorded (``load_errors()``) for ``status``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import re
import sys
import threading
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, cast

from memoryport.config import profile_name
from memoryport.errors import ConfigError, PluginError
from memoryport.plugins import hermes_compat
from memoryport.plugins.ctx_tools import RegisteredTool, attach_tools
from memoryport.plugins.discovery import FOLDER_SOURCES, Discovery, ProviderInfo, discover
from memoryport.provider import MemoryProvider

__all__ = [
    "REQUIRED_MEMBERS",
    "LoadResult",
    "PluginContext",
    "load",
    "load_errors",
    "load_provider",
    "pick_provider_class",
    "shape_problems",
]

logger = logging.getLogger(__name__)

REQUIRED_MEMBERS = ("name", "is_available", "initialize", "get_tool_schemas")
"""What an object needs to be accepted as a provider when it does not subclass."""

_USER_PACKAGE = "_memoryport_user_plugins"

_errors_lock = threading.Lock()
_load_errors: dict[str, str] = {}


@dataclass
class LoadResult:
    """Outcome of loading one plugin: a provider, or an error with its traceback."""

    name: str
    provider: MemoryProvider | None = None
    info: ProviderInfo | None = None
    error: str = ""
    traceback: str = ""
    warnings: list[str] = field(default_factory=list)
    module: types.ModuleType | None = None

    @property
    def ok(self) -> bool:
        """True when a provider was produced."""
        return self.provider is not None


class PluginContext:
    """The ``ctx`` handed to ``register(ctx)``.

    ``register_memory_provider`` and ``register_tool`` are captured: the tools are routed
    through the registered provider's tool table (``ctx_tools.attach_tools``), as Hermes
    hands them to the model. The other Hermes registration calls (``register_hook``,
    ``register_cli_command``, ``register_skill`` ...) are accepted and ignored, because
    memoryport only hosts memory providers.
    """

    def __init__(self, home: Path, plugin: str) -> None:
        self.home = home
        self.hermes_home = str(home)
        self.plugin = plugin
        self.profile_name = profile_name(home)
        self.providers: list[Any] = []
        self.tools: list[RegisteredTool] = []
        self.ignored: list[str] = []

    def register_memory_provider(self, provider: Any) -> None:
        """Record the provider this plugin offers."""
        self.providers.append(provider)

    def register_tool(self, *args: Any, **kwargs: Any) -> None:
        """Record a tool (Hermes' signature: name, toolset, schema, handler, check_fn, ...)."""
        self.tools.append(RegisteredTool.from_call(*args, **kwargs))

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("register_"):
            raise AttributeError(name)

        def ignored(*args: Any, **kwargs: Any) -> None:
            self.ignored.append(name)

        return ignored


def shape_problems(obj: Any) -> list[str]:
    """Why ``obj`` does not satisfy the provider contract (empty when it does)."""
    problems = [f"missing {m!r}" for m in REQUIRED_MEMBERS if not hasattr(obj, m)]
    for member in REQUIRED_MEMBERS[1:]:
        if hasattr(obj, member) and not callable(getattr(obj, member)):
            problems.append(f"{member!r} is not callable")
    if not problems and not isinstance(getattr(obj, "name", None), str):
        problems.append("'name' is not a string")
    return problems


def _is_provider_class(obj: Any) -> bool:
    return (
        isinstance(obj, type)
        and issubclass(obj, MemoryProvider)
        and obj is not MemoryProvider
        and not inspect.isabstract(obj)
    )


def pick_provider_class(module: types.ModuleType) -> type[MemoryProvider] | None:
    """Return the module's provider class: own classes first, then submodules', then imported."""
    own = module.__name__

    def rank(cls: type[Any]) -> tuple[int, str]:
        origin = cls.__module__
        tier = 0 if origin == own else 1 if origin.startswith(own + ".") else 2
        return tier, cls.__qualname__

    candidates = [obj for obj in vars(module).values() if _is_provider_class(obj)]
    return min(candidates, key=rank) if candidates else None


def _from_module(module: types.ModuleType, ctx: PluginContext, result: LoadResult) -> Any:
    register = getattr(module, "register", None)
    if callable(register):
        provider = _call_register(register, ctx, result)
        if provider is not None:
            return provider
    cls = pick_provider_class(module)
    if cls is None:
        raise PluginError(
            f"plugin {result.name!r}: module {module.__name__} has no register(ctx) that "
            "registers a provider and no MemoryProvider subclass",
            plugin=result.name,
        )
    return cls()


def _call_register(register: Callable[..., Any], ctx: PluginContext, result: LoadResult) -> Any:
    try:
        returned = register(ctx)
    except Exception:
        if not ctx.providers:
            raise
        result.warnings.append(
            "register(ctx) raised after registering a provider; keeping it:\n"
            + traceback.format_exc()
        )
        returned = None
    if len(ctx.providers) > 1:
        result.warnings.append(
            f"register(ctx) registered {len(ctx.providers)} providers; using the first"
        )
    if ctx.providers:
        return ctx.providers[0]
    if returned is not None and not shape_problems(returned):
        return returned
    return None


def _from_object(obj: Any, ctx: PluginContext, result: LoadResult) -> Any:
    if isinstance(obj, types.ModuleType):
        result.module = obj
        return _from_module(obj, ctx, result)
    if isinstance(obj, type):
        return obj()
    if not shape_problems(obj):
        return obj
    if callable(obj):
        provider = _call_register(obj, ctx, result)
        if provider is not None:
            return provider
    raise PluginError(
        f"plugin {result.name!r}: entry point gave {obj!r}, which neither is a provider nor "
        "registers one",
        plugin=result.name,
    )


def _user_module_name(info: ProviderInfo) -> str:
    assert info.path is not None
    digest = hashlib.sha256(str(info.path.resolve()).encode()).hexdigest()[:12]
    safe = re.sub(r"\W", "_", info.name)
    return f"{_USER_PACKAGE}.{safe}_{digest}"


def _import_user_dir(info: ProviderInfo) -> types.ModuleType:
    """Import ``<home>/plugins/<name>/`` as a package with its own synthetic name."""
    assert info.path is not None
    if _USER_PACKAGE not in sys.modules:
        parent = types.ModuleType(_USER_PACKAGE, "User provider plugins loaded by memoryport.")
        parent.__path__ = []
        sys.modules[_USER_PACKAGE] = parent
    name = _user_module_name(info)
    if name in sys.modules:
        return sys.modules[name]
    hermes_compat.register_plugin_package(name)
    spec = importlib.util.spec_from_file_location(
        name, info.path / "__init__.py", submodule_search_locations=[str(info.path)]
    )
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot import {info.path}", plugin=info.name)
    hermes_compat.wrap_loader(spec)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _resolve(info: ProviderInfo, home: Path, result: LoadResult) -> Any:
    ctx = PluginContext(home, info.name)
    if info.source in FOLDER_SOURCES:
        module = _import_user_dir(info)
        result.module = module
        provider = _from_module(module, ctx, result)
    elif info.entry_point:
        if info.hermes_style:
            hermes_compat.register_plugin_package(info.module.partition(".")[0])
        ep = metadata.EntryPoint(name=info.name, value=info.entry_point, group="")
        provider = _from_object(ep.load(), ctx, result)
    else:
        module = importlib.import_module(info.module)
        result.module = module
        provider = _from_module(module, ctx, result)
    if ctx.ignored:
        result.warnings.append(
            f"ignored Hermes registrations: {', '.join(sorted(set(ctx.ignored)))}"
        )
    if ctx.tools and provider is not None and not shape_problems(provider):
        provider = attach_tools(provider, ctx.tools)
    return provider


def _forget_modules(before: set[str], prefixes: list[str]) -> None:
    """Drop modules of a failed plugin from ``sys.modules`` so a retry starts clean."""
    for name in list(sys.modules):
        if name in before:
            continue
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            del sys.modules[name]


def _record(name: str, message: str) -> None:
    with _errors_lock:
        if message:
            _load_errors[name] = message
        else:
            _load_errors.pop(name, None)


def load(name: str, home: Path, *, discovery: Discovery | None = None) -> LoadResult:
    """Import plugin ``name`` and build its provider; never raises for plugin faults."""
    result = LoadResult(name=name)
    found = discovery if discovery is not None else discover(home)
    info = found.get(name)
    if info is None:
        known = ", ".join(found.providers) or "none"
        result.error = f"provider {name!r} is not installed (installed: {known})"
        _record(name, result.error)
        return result
    result.info = info
    before = set(sys.modules)
    prefixes = [info.module.partition(".")[0]] if info.module else []
    if info.source in FOLDER_SOURCES:
        prefixes = [_user_module_name(info)]
    hermes_compat.set_active_home(home)
    for hidden in found.shadowed:
        if hidden.name == name and hidden.module and hidden.hermes_style:
            # a user folder wrapping the installed package: its lazy Hermes imports work too
            hermes_compat.register_plugin_package(hidden.module.partition(".")[0])
    try:
        if info.hermes_style:
            with hermes_compat.hermes_shims():
                provider = _resolve(info, home, result)
        else:
            provider = _resolve(info, home, result)
        problems = shape_problems(provider)
        if problems:
            raise PluginError(
                f"plugin {name!r} produced {type(provider).__name__}, which does not match "
                f"the MemoryProvider contract: {'; '.join(problems)}",
                plugin=name,
            )
    except BaseException as exc:  # a plugin must never take the agent down
        if isinstance(exc, KeyboardInterrupt):
            raise
        _forget_modules(before, prefixes)
        result.error = f"{type(exc).__name__}: {exc}"
        # A configuration error already says what is wrong and how to fix it: no traceback.
        result.traceback = "" if isinstance(exc, ConfigError) else traceback.format_exc()
        _record(name, result.traceback or result.error)
        logger.warning("could not load memory provider %r: %s", name, result.error)
        return result
    result.provider = cast(MemoryProvider, provider)
    if getattr(provider, "name", name) != name:
        result.warnings.append(f"plugin {name!r} provides a provider named {provider.name!r}")
    for warning in result.warnings:
        logger.warning("provider %r: %s", name, warning)
    _record(name, "")
    return result


def load_provider(
    name: str, home: Path, *, discovery: Discovery | None = None
) -> MemoryProvider | None:
    """Return plugin ``name``'s provider, or None (the error is kept in ``load_errors()``)."""
    return load(name, home, discovery=discovery).provider


def load_errors() -> dict[str, str]:
    """Tracebacks of the plugins whose last load failed, by plugin name."""
    with _errors_lock:
        return dict(_load_errors)
