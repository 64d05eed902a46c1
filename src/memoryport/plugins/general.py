"""Hermes general plugins: find them, read ``plugins.enabled``, load the enabled ones.

Hermes loads general plugins (tools and lifecycle hooks, not memory providers) from
``$HERMES_HOME/plugins/<name>/`` (``plugin.yaml`` + ``__init__.py`` with ``register(ctx)``)
and from the entry-point group ``hermes_agent.plugins``. memoryport looks in the same two
places (``<home>/plugins/<name>/`` for the home), lists them without importing them, and
loads only the plugins named in ``config.yaml``::

    plugins:
      enabled: [hindsight]
      entries:                 # optional: what ctx.get_config(key) reads, as in Hermes
        hindsight: {settings: {}}

Each enabled plugin becomes one ``HermesPluginProvider`` (``hermes_general``) that the
manager runs next to the built-in memory and the ``memory.provider`` plugin. A plugin
that fails to import, raises in ``register(ctx)`` or registers nothing is reported
(``GeneralLoadResult.error``, ``memoryport plugins``, ``memoryport status``) and skipped;
it never stops the agent.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from memoryport.config import Config, load_config, save_config
from memoryport.errors import ConfigError, PluginError
from memoryport.plugins import hermes_compat
from memoryport.plugins.discovery import (
    FOLDER_SOURCES,
    ProviderInfo,
    installed_entry_points,
    project_plugin_dirs,
    user_plugin_dirs,
)
from memoryport.plugins.hermes_general import (
    FIRED_HOOKS,
    HermesPluginContext,
    HermesPluginProvider,
    PluginRunner,
    guard_plugin_logs,
    redact_secrets,
)
from memoryport.plugins.loader import _forget_modules, _import_user_dir, _user_module_name
from memoryport.plugins.manifest import (
    PluginManifest,
    validate_plugin_name,
)

__all__ = [
    "CONFIG_SECTION",
    "DEFAULT_TIMEOUT_S",
    "GENERAL_ENTRY_POINT_GROUP",
    "GeneralDiscovery",
    "GeneralLoadResult",
    "GeneralPluginInfo",
    "discover_general",
    "enabled_plugins",
    "general_report",
    "load_enabled",
    "load_general",
    "plugin_settings",
    "plugin_timeout",
    "set_enabled",
]

logger = logging.getLogger(__name__)

GENERAL_ENTRY_POINT_GROUP = "hermes_agent.plugins"
"""Hermes' entry-point group for general (tool and hook) plugins."""

CONFIG_SECTION = "plugins"
"""The ``config.yaml`` section: ``plugins.enabled`` (names), ``plugins.timeout_s``."""

DEFAULT_TIMEOUT_S = 60.0
"""Longest a single call into a plugin may take before it counts as failed."""


@dataclass(frozen=True)
class GeneralPluginInfo:
    """One general plugin found on disk or in an installed distribution (not imported)."""

    name: str
    source: str  # "user", "project" or "entry_point"
    manifest: PluginManifest
    path: Path | None = None
    entry_point: str = ""
    distribution: str = ""

    @property
    def location(self) -> str:
        """A directory, or ``distribution (module:attr)``."""
        if self.entry_point:
            return f"{self.distribution} ({self.entry_point})"
        return str(self.path)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "source": self.source,
            "location": self.location,
            "version": self.manifest.version,
            "description": self.manifest.description,
        }


@dataclass
class GeneralDiscovery:
    """General plugins by name (user folders first, then entry points) and problems."""

    plugins: dict[str, GeneralPluginInfo] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> GeneralPluginInfo | None:
        """The plugin called ``name``, or None."""
        return self.plugins.get(name)

    def _add(self, info: GeneralPluginInfo) -> None:
        current = self.plugins.get(info.name)
        if current is None:
            self.plugins[info.name] = info
        else:
            self.problems.append(
                f"general plugin {info.name!r} from {info.location} is shadowed by "
                f"{current.location}; keeping the {current.source} one"
            )


def _user_plugins(home: Path, found: GeneralDiscovery) -> None:
    for entry, manifest in user_plugin_dirs(home, "general", found.problems, "general plugin"):
        found._add(GeneralPluginInfo(entry.name, "user", manifest, path=entry))
    for entry, manifest in project_plugin_dirs("general", found.problems, "general plugin"):
        found._add(GeneralPluginInfo(entry.name, "project", manifest, path=entry))


def _entry_point_plugins(
    found: GeneralDiscovery, eps: Sequence[metadata.EntryPoint] | None
) -> None:
    group = GENERAL_ENTRY_POINT_GROUP
    listed = list(eps) if eps is not None else installed_entry_points(group)
    for ep in sorted(listed, key=lambda e: (e.name, e.value)):
        try:
            validate_plugin_name(ep.name)
        except PluginError as exc:
            found.problems.append(f"entry point {ep.name!r} in {GENERAL_ENTRY_POINT_GROUP}: {exc}")
            continue
        dist = ep.dist
        meta = dist.metadata if dist is not None else None
        manifest = PluginManifest(
            name=ep.name,
            version=dist.version if dist is not None else "",
            description=(meta["Summary"] or "") if meta is not None else "",
        )
        found._add(
            GeneralPluginInfo(
                ep.name,
                "entry_point",
                manifest,
                entry_point=ep.value,
                distribution=meta["Name"] if meta is not None else "",
            )
        )


def discover_general(
    home: Path, *, entry_points: Sequence[metadata.EntryPoint] | None = None
) -> GeneralDiscovery:
    """Every general plugin for ``home``, from metadata only (no plugin code runs).

    ``entry_points`` replaces the installed ``hermes_agent.plugins`` entry points (tests).
    """
    found = GeneralDiscovery()
    _user_plugins(home, found)
    _entry_point_plugins(found, entry_points)
    return found


def _section(config: Config) -> dict[str, Any]:
    return config.provider_section(CONFIG_SECTION)


def enabled_plugins(config: Config) -> list[str]:
    """``plugins.enabled`` as a list of names (a comma-separated string is accepted).

    Raises ``ConfigError`` when the value is neither a list of names nor a string.
    """
    raw = _section(config).get("enabled") or []
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",")]
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise ConfigError(
            f"plugins.enabled must be a list of plugin names, got {raw!r}; set it with: "
            "memoryport config set plugins.enabled '[hindsight]'"
        )
    return list(dict.fromkeys(n.strip() for n in raw if n.strip()))


def plugin_timeout(config: Config) -> float:
    """``plugins.timeout_s`` (seconds, > 0), else ``DEFAULT_TIMEOUT_S``."""
    raw = _section(config).get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw <= 3600:
        raise ConfigError(
            f"plugins.timeout_s must be a number of seconds between 0 and 3600, got {raw!r}"
        )
    return float(raw)


def plugin_settings(config: Config, name: str) -> dict[str, Any]:
    """``plugins.entries.<name>.settings`` (Hermes' per-plugin settings), else ``{}``."""
    entries = _section(config).get("entries")
    entry = entries.get(name) if isinstance(entries, dict) else None
    settings = entry.get("settings") if isinstance(entry, dict) else None
    return dict(settings) if isinstance(settings, dict) else {}


@dataclass
class GeneralLoadResult:
    """Outcome of loading one general plugin."""

    name: str
    info: GeneralPluginInfo | None = None
    provider: HermesPluginProvider | None = None
    error: str = ""
    traceback: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the plugin registered something and is ready to run."""
        return self.provider is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``memoryport plugins`` and ``status`` show)."""
        data: dict[str, Any] = {"name": self.name, "loaded": self.ok}
        if self.info is not None:
            data.update(
                source=self.info.source,
                location=self.info.location,
                version=self.info.manifest.version,
            )
        if self.provider is not None:
            data.update(
                tools=self.provider.tool_names,
                hooks=self.provider.hook_names,
                inactive_hooks=self.provider.inactive_hooks,
            )
        if self.error:
            data["error"] = self.error
        data["warnings"] = list(self.warnings)
        return data


def _import_target(info: GeneralPluginInfo) -> Any:
    """The plugin's module (user folder) or the object its entry point names."""
    if info.source in FOLDER_SOURCES:
        return _import_user_dir(ProviderInfo(info.name, "user", info.manifest, path=info.path))
    hermes_compat.register_plugin_package(_module_prefix(info))
    return metadata.EntryPoint(name=info.name, value=info.entry_point, group="").load()


def _module_prefix(info: GeneralPluginInfo) -> str:
    """The top-level module name the plugin's code is imported under."""
    if info.source in FOLDER_SOURCES:
        return _user_module_name(ProviderInfo(info.name, "user", info.manifest, path=info.path))
    return info.entry_point.partition(":")[0].partition(".")[0]


def _register(
    info: GeneralPluginInfo,
    home: Path,
    runner: PluginRunner,
    timeout: float,
    settings: dict[str, Any],
) -> HermesPluginContext:
    with hermes_compat.hermes_shims():
        target = _import_target(info)
    guard_plugin_logs(_module_prefix(info))  # backend errors it logs may quote credentials
    register = target if callable(target) else getattr(target, "register", None)
    if not callable(register):
        raise PluginError(
            f"general plugin {info.name!r} ({info.location}) has no register(ctx) function",
            plugin=info.name,
        )
    ctx = HermesPluginContext(home, info.manifest, settings)
    runner.call(register, ctx, timeout=timeout)
    return ctx


def _warnings(ctx: HermesPluginContext) -> list[str]:
    warnings = []
    if ctx.ignored:
        warnings.append(f"ignored Hermes calls: {', '.join(sorted(set(ctx.ignored)))}")
    never = sorted(set(ctx.hooks) - FIRED_HOOKS)
    if never:
        warnings.append(f"hooks memoryport never fires: {', '.join(never)}")
    return warnings


def load_general(
    name: str,
    home: Path,
    *,
    discovery: GeneralDiscovery | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    settings: dict[str, Any] | None = None,
) -> GeneralLoadResult:
    """Import general plugin ``name``, run its ``register(ctx)``; never raises for its faults.

    ``settings`` is what ``ctx.get_config(key)`` reads (``plugins.entries.<name>.settings``).
    """
    result = GeneralLoadResult(name=name)
    found = discovery if discovery is not None else discover_general(home)
    info = found.get(name)
    if info is None:
        known = ", ".join(found.plugins) or "none"
        result.error = f"general plugin {name!r} is not installed (installed: {known})"
        return result
    result.info = info
    hermes_compat.set_active_home(home)
    runner = PluginRunner(name)
    before = set(sys.modules)
    try:
        ctx = _register(info, home, runner, timeout_s, settings or {})
    except BaseException as exc:  # a plugin must never take the agent down
        if isinstance(exc, KeyboardInterrupt):
            raise
        runner.stop()
        _forget_modules(before, [_module_prefix(info)])  # a fixed plugin loads cleanly later
        result.error = redact_secrets(f"{type(exc).__name__}: {exc}")
        result.traceback = redact_secrets(traceback.format_exc())
        logger.warning("could not load general plugin %r: %s", name, result.error)
        return result
    result.warnings = _warnings(ctx)
    if not (ctx.tools or ctx.hooks):
        runner.stop()
        result.error = (
            f"general plugin {name!r} registered no tools and no hooks; it is usually not "
            "configured (see its README for the settings or environment variables it needs)"
        )
        return result
    if not (ctx.tools or set(ctx.hooks) & FIRED_HOOKS):
        runner.stop()
        result.error = (
            f"general plugin {name!r} registered only hooks memoryport never fires "
            f"({', '.join(sorted(ctx.hooks))}): nothing to run"
        )
        return result
    result.provider = HermesPluginProvider(name, ctx, runner, timeout_s)
    return result


_CLASH = (
    "{name!r} is both memory.provider and in plugins.enabled; their tools would clash: "
    "keep one (memoryport config set memory.provider '' or remove it from plugins.enabled)"
)


def load_enabled(config: Config, home: Path) -> list[GeneralLoadResult]:
    """Load every plugin in ``plugins.enabled``; a bad setting is reported, not raised."""
    try:
        names, timeout = enabled_plugins(config), plugin_timeout(config)
    except ConfigError as exc:
        logger.warning("%s", exc)
        return [GeneralLoadResult(name=CONFIG_SECTION, error=str(exc))]
    if not names:
        return []
    found = discover_general(home)
    results = []
    for name in names:
        if name == config.memory.provider:
            results.append(GeneralLoadResult(name=name, error=_CLASH.format(name=name)))
            continue
        settings = plugin_settings(config, name)
        results.append(
            load_general(name, home, discovery=found, timeout_s=timeout, settings=settings)
        )
    for result in results:
        if result.error:
            logger.warning("general plugin %r not loaded: %s", result.name, result.error)
    return results


def general_report(home: Path, config: Config, *, check: bool = True) -> dict[str, Any]:
    """What ``memoryport plugins list`` and ``status`` show about general plugins.

    ``{"enabled": [...], "plugins": [...], "count": n, "problems": [...]}``: one row per
    installed plugin (``enabled``; with ``check``, enabled ones are loaded to report
    ``loaded``, ``tools``, ``hooks``, ``inactive_hooks``, ``warnings`` or ``error``), plus
    a row with ``installed: false`` for an enabled name that is not installed.
    """
    found = discover_general(home)
    problems = list(found.problems)
    try:
        enabled = enabled_plugins(config)
        plugin_timeout(config)
    except ConfigError as exc:
        enabled, problems = [], [*problems, str(exc)]
    loads = {r.name: r for r in load_enabled(config, home)} if check and enabled else {}
    rows: list[dict[str, Any]] = []
    for name, info in found.plugins.items():
        row: dict[str, Any] = {**info.to_dict(), "installed": True, "enabled": name in enabled}
        if name in loads:
            row.update({k: v for k, v in loads[name].to_dict().items() if k != "name"})
        rows.append(row)
    for name in enabled:
        if name not in found.plugins:
            rows.append(
                {
                    "name": name,
                    "installed": False,
                    "enabled": True,
                    "error": loads[name].error if name in loads else "not installed",
                }
            )
    for result in loads.values():
        if result.provider is not None:
            result.provider.shutdown()
    return {"enabled": enabled, "plugins": rows, "count": len(rows), "problems": problems}


def set_enabled(home: Path, name: str, enabled: bool) -> list[str]:
    """Add ``name`` to (or remove it from) ``plugins.enabled`` in ``config.yaml``.

    Enabling a plugin that is not installed raises ``PluginError`` and changes nothing.
    Returns the new list.
    """
    names = enabled_plugins(load_config(home))
    if enabled and name not in names:
        found = discover_general(home)
        if found.get(name) is None:
            known = ", ".join(found.plugins) or "none"
            raise PluginError(
                f"general plugin {name!r} is not installed (installed: {known}); install "
                "its package into this Python environment, or copy its folder to "
                f"{home / 'plugins' / name}",
                plugin=name,
            )
        names.append(name)
    elif not enabled:
        names = [n for n in names if n != name]
    save_config(home, {CONFIG_SECTION: {"enabled": names}})
    return names
