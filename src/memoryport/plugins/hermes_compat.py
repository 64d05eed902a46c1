"""Run providers written for Hermes unmodified: stand-ins for the Hermes modules they import.

Supported imports (see docs/plugins.md):

=============================  =========================================================
``agent.memory_provider``      ``MemoryProvider`` (memoryport's base class),
                               ``spawn_context_thread``, ``ctx_bound``,
                               ``is_trivial_prompt``, ``is_core_memory_provider``,
                               ``RecallStatus``
``hermes_constants``           ``get_hermes_home()`` (the active, profile-scoped
                               memoryport home), ``display_hermes_home()``
``tools.registry``             ``tool_error(message, **extra)``, ``tool_result(data, **kw)``
=============================  =========================================================

How long the stand-ins exist (the trade-off):

* While a Hermes-style plugin is being loaded they are put in ``sys.modules`` under the
  names above, unless a real module of that name is already imported or importable (a
  real Hermes installation always wins). Afterwards the names that were added are
  removed again, so the rest of the process never sees a fake ``agent`` or ``tools``.
* Plugins may also import these names lazily, inside methods, long after loading. For
  that, every module of a Hermes-style plugin package is executed with its own
  ``__builtins__`` whose ``__import__`` serves the stand-ins for exactly these names. A
  plain ``import`` / ``from ... import`` statement in plugin code therefore keeps working;
  ``importlib.import_module("tools.registry")`` called later from plugin code does not.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import re
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport.config import profile_name, resolve_home
from memoryport.provider import MemoryProvider

__all__ = [
    "AGENT_WORKSPACE",
    "SHIM_NAMES",
    "get_active_home",
    "hermes_shims",
    "initialize_kwargs",
    "register_plugin_package",
    "set_active_home",
    "shim_builtins",
    "shim_modules",
    "wrap_loader",
]

SHIM_NAMES = ("agent", "agent.memory_provider", "hermes_constants", "tools", "tools.registry")
"""Module names memoryport stands in for while Hermes-style plugins run."""

AGENT_WORKSPACE = "hermes"
"""``agent_workspace`` passed to ``initialize``: the value Hermes passes, so providers that
namespace their data by workspace find what they stored under Hermes."""

_OPTIONAL_IDENTITY = ("user_id_alt", "user_name", "chat_name")

_state_lock = threading.Lock()
_active_home: Path | None = None


def initialize_kwargs(
    home: Path, documented: dict[str, Any], given: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every keyword Hermes passes to ``initialize``, for providers that require them.

    ``documented`` is ``InitContext.to_kwargs()``; ``given`` are the caller's extra
    keywords (``user_name``, ``chat_name``, the CLI's ``warning_callback`` and
    ``status_callback`` ...), which win. Added when missing: ``agent_identity`` (the
    profile name, ``default`` for the root home), ``agent_workspace``
    (``AGENT_WORKSPACE``), and ``user_id_alt`` / ``user_name`` / ``chat_name`` as ``""``,
    so ``kwargs["user_name"]`` in a plugin never raises.
    """
    kwargs: dict[str, Any] = {
        "agent_identity": profile_name(home),
        "agent_workspace": AGENT_WORKSPACE,
        **{key: "" for key in _OPTIONAL_IDENTITY},
    }
    kwargs.update(documented)
    kwargs.update(given or {})
    return kwargs


def set_active_home(home: Path) -> None:
    """Set the home ``hermes_constants.get_hermes_home()`` returns (done by the loader)."""
    global _active_home
    with _state_lock:
        _active_home = home


def get_active_home() -> Path:
    """The home of the last loaded plugin, else the one resolved from the environment."""
    with _state_lock:
        home = _active_home
    return home if home is not None else resolve_home()


# --------------------------------------------------------------------------- shim content

_TRIVIAL_RE = re.compile(
    r"^\s*(?:y|yes|no|n|ok|okay|k|thanks|thank you|thx|ty|hi|hello|hey|lgtm|sure|cool"
    r"|great|nice|done|continue|go on|go ahead)\s*[.!?]*\s*$",
    re.IGNORECASE,
)


def is_trivial_prompt(text: str | None) -> bool:
    """True for empty input, ``/``-commands and one-word acknowledgements."""
    stripped = (text or "").strip()
    return not stripped or stripped.startswith("/") or bool(_TRIVIAL_RE.match(stripped))


def is_core_memory_provider(name: str | None) -> bool:
    """True for names meaning "built-in memory only"."""
    return (name or "").strip().lower() in ("", "default", "builtin", "built-in", "none")


def ctx_bound(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fn`` so it runs in a copy of the caller's context variables."""
    context = contextvars.copy_context()

    @functools.wraps(fn)
    def bound(*args: Any, **kwargs: Any) -> Any:
        return context.copy().run(fn, *args, **kwargs)

    return bound


def spawn_context_thread(
    target: Callable[..., Any],
    *,
    name: str | None = None,
    daemon: bool = True,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
) -> threading.Thread:
    """Return an unstarted thread that runs ``target`` in a copy of the caller's context."""
    bound = ctx_bound(target)
    return threading.Thread(
        target=bound, name=name, daemon=daemon, args=tuple(args), kwargs=kwargs or {}
    )


@dataclass(frozen=True)
class RecallStatus:
    """How many items a provider recalled this turn (Hermes' status-line data)."""

    provider_label: str
    count: int
    glyph: str = "\U0001f9e0"


def get_hermes_home() -> Path:
    """The active memoryport home, profile-scoped (Hermes' ``HERMES_HOME``)."""
    return get_active_home()


def display_hermes_home() -> str:
    """The active home for display, with the user's home directory shortened to ``~``."""
    home = str(get_active_home())
    user = str(Path.home())
    return "~" + home[len(user) :] if home.startswith(user) else home


def tool_error(message: Any, **extra: Any) -> str:
    """A JSON tool result reporting an error: ``{"error": message, **extra}``."""
    return json.dumps({"error": str(message), **extra}, ensure_ascii=False)


def tool_result(data: Any = None, **kwargs: Any) -> str:
    """A JSON tool result: ``data`` if given, else the keyword arguments."""
    return json.dumps(data if data is not None else kwargs, ensure_ascii=False, default=str)


def _module(name: str, doc: str, attrs: dict[str, Any], package: bool = False) -> types.ModuleType:
    module = types.ModuleType(name, doc)
    module.__dict__.update(attrs)
    module.__dict__["__memoryport_shim__"] = True
    if package:
        module.__path__ = []
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    return module


@functools.cache
def shim_modules() -> dict[str, types.ModuleType]:
    """The stand-in modules, created once per process and shared by every plugin."""
    memory_provider = _module(
        "agent.memory_provider",
        "memoryport stand-in for Hermes' agent.memory_provider.",
        {
            "MemoryProvider": MemoryProvider,
            "spawn_context_thread": spawn_context_thread,
            "ctx_bound": ctx_bound,
            "is_trivial_prompt": is_trivial_prompt,
            "is_core_memory_provider": is_core_memory_provider,
            "RecallStatus": RecallStatus,
        },
    )
    registry = _module(
        "tools.registry",
        "memoryport stand-in for Hermes' tools.registry.",
        {"tool_error": tool_error, "tool_result": tool_result},
    )
    constants = _module(
        "hermes_constants",
        "memoryport stand-in for Hermes' hermes_constants.",
        {"get_hermes_home": get_hermes_home, "display_hermes_home": display_hermes_home},
    )
    agent = _module(
        "agent", "memoryport stand-in package.", {"memory_provider": memory_provider}, True
    )
    tools = _module("tools", "memoryport stand-in package.", {"registry": registry}, True)
    return {
        "agent": agent,
        "agent.memory_provider": memory_provider,
        "hermes_constants": constants,
        "tools": tools,
        "tools.registry": registry,
    }


@functools.cache
def _real_module_available(top: str) -> bool:
    """True when a real module ``top`` can be imported (e.g. running inside Hermes)."""
    existing = sys.modules.get(top)
    if existing is not None:
        return not getattr(existing, "__memoryport_shim__", False)
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    # A bare directory on sys.path (a namespace package) is not a real module.
    return spec is not None and spec.origin is not None


def _should_shim(name: str) -> bool:
    if name not in SHIM_NAMES:
        return False
    current = sys.modules.get(name)
    if current is not None and not getattr(current, "__memoryport_shim__", False):
        return False
    return not _real_module_available(name.partition(".")[0])


@contextlib.contextmanager
def hermes_shims() -> Iterator[list[str]]:
    """Install the stand-ins in ``sys.modules`` for the duration; yields the names added."""
    added: list[str] = []
    modules = shim_modules()
    for name in SHIM_NAMES:
        if name not in sys.modules and _should_shim(name):
            sys.modules[name] = modules[name]
            added.append(name)
    try:
        yield added
    finally:
        for name in added:
            if sys.modules.get(name) is modules[name]:
                del sys.modules[name]


# --------------------------------------------------------------------------- lazy imports


def _shim_import(
    name: str,
    globals: dict[str, Any] | None = None,
    locals: dict[str, Any] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> Any:
    if level == 0 and name in SHIM_NAMES and name not in sys.modules and _should_shim(name):
        modules = shim_modules()
        return modules[name] if fromlist else modules[name.partition(".")[0]]
    return builtins.__import__(name, globals, locals, fromlist or (), level)


@functools.cache
def _builtins_dict() -> dict[str, Any]:
    namespace = dict(builtins.__dict__)
    namespace["__import__"] = _shim_import
    return namespace


def shim_builtins() -> dict[str, Any]:
    """The ``__builtins__`` given to Hermes-style plugin modules (import serves the shims)."""
    return _builtins_dict()


class _ShimLoader(importlib.abc.Loader):
    """Delegating loader that executes the module with ``shim_builtins()``."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = shim_builtins()
        self._inner.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def wrap_loader(spec: importlib.machinery.ModuleSpec) -> importlib.machinery.ModuleSpec:
    """Make ``spec`` load its module with the shim-aware ``__builtins__``."""
    if spec.loader is not None and not isinstance(spec.loader, _ShimLoader):
        spec.loader = _ShimLoader(spec.loader)
    return spec


class _PluginPackageFinder(importlib.abc.MetaPathFinder):
    """Wraps the loaders of modules inside registered Hermes-style plugin packages."""

    def __init__(self) -> None:
        self.prefixes: set[str] = set()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname == p or fullname.startswith(p + ".") for p in self.prefixes):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return wrap_loader(spec)
        return None


_finder = _PluginPackageFinder()


def register_plugin_package(package: str) -> None:
    """Route future imports of ``package`` and its submodules through the shim loader."""
    with _state_lock:
        _finder.prefixes.add(package)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
