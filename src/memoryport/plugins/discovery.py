"""Find provider plugins without importing them.

Sources, highest precedence first:

1. bundled providers: ``memoryport/providers/<name>/plugin.yaml`` (those marked
   ``builtin: true`` are memoryport's own built-ins and are not listed);
2. user plugin directories ``<home>/plugins/<name>/`` (``__init__.py`` + ``plugin.yaml``;
   folders holding a Hermes general plugin instead, see ``plugin_dir_kind``, are left to
   ``memoryport.plugins.general``);
3. entry points in the group ``memoryport.providers``;
4. entry points in Hermes' group ``hermes_agent.memory_providers``.

User folders come before entry points, as in Hermes: installers write
``<home>/plugins/<name>/`` precisely to wrap or configure the installed package of the
same name. On a name clash the higher-precedence provider wins and the other is reported.
Only ``plugin.yaml`` files and distribution metadata are read here; no plugin code runs.
A user or entry-point ``plugin.yaml`` that cannot be parsed is reported and the plugin is
still listed (Hermes reads the file for metadata only).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from memoryport.errors import PluginError
from memoryport.plugins.manifest import (
    PluginManifest,
    read_manifest,
    read_manifest_lenient,
    validate_plugin_name,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "FOLDER_SOURCES",
    "HERMES_ENTRY_POINT_GROUP",
    "PROJECT_PLUGIN_SWITCHES",
    "SOURCES",
    "Discovery",
    "ProviderInfo",
    "bundled_providers_dir",
    "discover",
    "plugin_dir_kind",
    "project_plugin_dirs",
    "project_plugin_roots",
    "user_plugin_dirs",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "memoryport.providers"
"""Entry-point group for memoryport provider packages."""

HERMES_ENTRY_POINT_GROUP = "hermes_agent.memory_providers"
"""Hermes' entry-point group; packages written for Hermes are found here."""

SOURCES = ("bundled", "user", "project", "entry_point", "hermes_entry_point")
"""Discovery sources in precedence order (a checked-out project cannot shadow a provider
that is bundled or installed in the home)."""

FOLDER_SOURCES = ("user", "project")
"""Sources whose plugins are folders imported under a synthetic package name."""

PROJECT_PLUGIN_SWITCHES = ("MEMORYPORT_ENABLE_PROJECT_PLUGINS", "HERMES_ENABLE_PROJECT_PLUGINS")
"""Environment variables that opt in to project plugins (``./.memoryport/plugins/`` and
Hermes' ``./.hermes/plugins/`` under the current directory); off by default, because a
repository checked out from elsewhere should not run code just by being the working
directory."""

_HEURISTIC_BYTES = 8192


@dataclass(frozen=True)
class ProviderInfo:
    """One discovered provider, described from metadata only.

    Attributes:
        name: the plugin name (directory or entry-point name); the ``memory.provider`` value.
        source: one of ``SOURCES``.
        manifest: the parsed ``plugin.yaml`` (or one synthesised from package metadata).
        path: the plugin directory, when known.
        module: the module to import (bundled and entry points); empty for user dirs.
        entry_point: ``module:attr`` value of the entry point, if any.
        distribution: the installed distribution that provides it, if any.
    """

    name: str
    source: str
    manifest: PluginManifest
    path: Path | None = None
    module: str = ""
    entry_point: str = ""
    distribution: str = ""

    @property
    def hermes_style(self) -> bool:
        """True when the plugin may be written for Hermes (gets the compatibility shims)."""
        return self.source != "bundled"

    @property
    def location(self) -> str:
        """Human-readable origin: a directory or ``distribution (module:attr)``."""
        if self.entry_point:
            return f"{self.distribution} ({self.entry_point})"
        return str(self.path or self.module)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "source": self.source,
            "location": self.location,
            "version": self.manifest.version,
            "description": self.manifest.description,
            "manifest": self.manifest.to_dict(),
        }


@dataclass
class Discovery:
    """The result of ``discover``: providers by name (precedence order) and problems found."""

    providers: dict[str, ProviderInfo] = field(default_factory=dict)
    shadowed: list[ProviderInfo] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> ProviderInfo | None:
        """Return the provider called ``name``, or None."""
        return self.providers.get(name)

    def _add(self, info: ProviderInfo) -> None:
        current = self.providers.get(info.name)
        if current is None:
            self.providers[info.name] = info
            return
        self.shadowed.append(info)
        message = (
            f"provider {info.name!r} from {info.source} ({info.location}) is shadowed by the "
            f"{current.source} one ({current.location}); keeping the {current.source} provider"
        )
        self.problems.append(message)
        logger.warning("%s", message)


def bundled_providers_dir() -> Path:
    """Directory of the providers shipped inside memoryport (``memoryport/providers``)."""
    return Path(__file__).resolve().parent.parent / "providers"


def _bundled(root: Path, result: Discovery) -> Iterable[ProviderInfo]:
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        if not entry.is_dir() or entry.name.startswith(("_", ".")):
            continue
        if not (entry / "plugin.yaml").is_file():
            continue
        try:
            manifest = read_manifest(entry / "plugin.yaml", entry.name)
        except PluginError as exc:
            result.problems.append(str(exc))
            continue
        if manifest.builtin:
            continue
        yield ProviderInfo(
            name=entry.name,
            source="bundled",
            manifest=manifest,
            path=entry,
            module=f"memoryport.providers.{entry.name}",
        )


class _Installed:
    """The installed distributions' entry points and their manifests, read once per state
    of ``sys.path`` in this process.

    Scanning every distribution's metadata (and a provider's RECORD) took most of a
    ``discover`` once the manifests were cached, and every ``Memory`` opened -- one per MCP
    client, say -- discovers again. A ``pip install`` or uninstall adds or removes a
    ``*.dist-info`` directory, which changes the modification time and the link count of
    the directory on ``sys.path`` it writes to: either starts a new snapshot.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[tuple[str, int, int], ...] = ()
        self._groups: dict[str, list[metadata.EntryPoint]] = {}
        self._manifests: dict[tuple[str, str, str], tuple[PluginManifest, Path | None,
                                                          list[str]]] = {}

    @staticmethod
    def _state() -> tuple[tuple[str, int, int], ...]:
        state = []
        for entry in sys.path:
            try:
                stat = os.stat(entry or ".")
                state.append((entry, stat.st_mtime_ns, stat.st_nlink))
            except OSError:
                state.append((entry, -1, -1))
        return tuple(state)

    def entry_points(self, group: str) -> list[metadata.EntryPoint]:
        """The installed entry points of *group* (scanned once per snapshot)."""
        state = self._state()
        with self._lock:
            if state != self._key:
                self._key = state
                self._groups.clear()
                self._manifests.clear()
            listed = self._groups.get(group)
        if listed is None:
            listed = list(metadata.entry_points(group=group))
            with self._lock:
                self._groups[group] = listed
        return list(listed)

    def manifest(self, ep: metadata.EntryPoint, result: Discovery
                 ) -> tuple[PluginManifest, Path | None]:
        """:func:`_dist_manifest` of *ep*, remembered with the problems it reported."""
        dist = ep.dist
        key = (ep.name, ep.value, f"{dist.metadata['Name']}=={dist.version}" if dist else "")
        with self._lock:
            known = self._manifests.get(key)
        if known is None:
            found = Discovery()
            manifest, path = _dist_manifest(ep, found)
            known = (manifest, path, list(found.problems))
            with self._lock:
                self._manifests[key] = known
        result.problems.extend(known[2])
        return known[0], known[1]


_INSTALLED = _Installed()


def installed_entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of *group*, from this process's snapshot (a new one
    after anything on ``sys.path`` changes)."""
    return _INSTALLED.entry_points(group)


def _dist_manifest(
    ep: metadata.EntryPoint, result: Discovery
) -> tuple[PluginManifest, Path | None]:
    """Find ``plugin.yaml`` next to the entry point's module via the distribution's RECORD.

    The closest file wins: the module's own package first, then its parents. A parent
    package's ``plugin.yaml`` that names another provider belongs to another entry and
    is skipped, so it never lends this entry its name, description or dependencies.
    """
    dist = ep.dist
    parts = ep.module.split(".")
    depth = {"/".join([*parts[:i], "plugin.yaml"]): i for i in range(len(parts), 0, -1)}
    packaged_files = {f.as_posix(): f for f in (dist.files or ())} if dist is not None else {}
    for wanted in sorted(depth, key=lambda w: -depth[w]):
        packaged = packaged_files.get(wanted)
        if dist is None or packaged is None:
            continue
        path = Path(str(dist.locate_file(packaged)))
        if not path.is_file():
            continue
        manifest, problem = read_manifest_lenient(path, ep.name)
        if depth[wanted] < len(parts) and manifest.name not in (ep.name, ""):
            continue  # a parent package's manifest for another entry
        if problem:
            result.problems.append(f"entry point {ep.name!r}: {problem}")
            logger.warning("entry point %r: %s", ep.name, problem)
        return PluginManifest(**{**vars(manifest), "name": ep.name}), path.parent
    meta = dist.metadata if dist is not None else None
    return (
        PluginManifest(
            name=ep.name,
            version=dist.version if dist is not None else "",
            description=(meta["Summary"] or "") if meta is not None else "",
        ),
        None,
    )


def _entry_points(
    group: str, source: str, result: Discovery, eps: Sequence[metadata.EntryPoint] | None
) -> Iterable[ProviderInfo]:
    found = list(eps) if eps is not None else _INSTALLED.entry_points(group)
    for ep in sorted(found, key=lambda e: (e.name, e.value)):
        try:
            validate_plugin_name(ep.name)
            manifest, path = (_dist_manifest(ep, result) if eps is not None
                              else _INSTALLED.manifest(ep, result))
        except PluginError as exc:
            result.problems.append(f"entry point {ep.name!r} in {group}: {exc}")
            continue
        dist = ep.dist
        if manifest.version == "" and dist is not None:
            manifest = PluginManifest(**{**vars(manifest), "version": dist.version})
        yield ProviderInfo(
            name=ep.name,
            source=source,
            manifest=manifest,
            path=path,
            module=ep.module,
            entry_point=ep.value,
            distribution=dist.metadata["Name"] if dist is not None else "",
        )


def _looks_like_provider(init_file: Path) -> bool:
    """Hermes' cheap text check for plugin dirs without ``plugin.yaml``."""
    try:
        with init_file.open("rb") as handle:
            head = handle.read(_HEURISTIC_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return "register_memory_provider" in head or "MemoryProvider" in head


def _looks_like_general(init_file: Path, plugin_yaml: Path) -> bool:
    """A Hermes general plugin: its manifest lists ``provides_tools``/``provides_hooks``,
    or its ``__init__.py`` registers tools or hooks (checked after the provider test)."""
    if plugin_yaml.is_file():
        manifest, _ = read_manifest_lenient(plugin_yaml, plugin_yaml.parent.name)
        if "provides_tools" in manifest.extra or "provides_hooks" in manifest.extra:
            return True
    try:
        with init_file.open("rb") as handle:
            head = handle.read(_HEURISTIC_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return "register_hook" in head or "register_tool" in head


def plugin_dir_kind(entry: Path) -> str:
    """What ``<home>/plugins/<name>/`` holds: ``"provider"``, ``"general"`` or ``""``.

    Without ``__init__.py`` nothing. A memory provider if ``__init__.py`` mentions
    ``register_memory_provider``/``MemoryProvider`` (Hermes' check); a general plugin if
    its ``plugin.yaml`` declares ``provides_tools``/``provides_hooks`` or its
    ``__init__.py`` calls ``register_hook``/``register_tool``; else a provider when
    ``plugin.yaml`` exists.
    """
    init_file = entry / "__init__.py"
    if not entry.is_dir() or not init_file.is_file():
        return ""
    if _looks_like_provider(init_file):
        return "provider"
    if _looks_like_general(init_file, entry / "plugin.yaml"):
        return "general"
    return "provider" if (entry / "plugin.yaml").is_file() else ""


def user_plugin_dirs(home: Path, kind: str, problems: list[str], label: str
                     ) -> Iterator[tuple[Path, PluginManifest]]:
    """The ``<home>/plugins/<name>/`` folders of ``kind`` (``"provider"`` or ``"general"``,
    see :func:`plugin_dir_kind`) with valid names, each with its manifest. A bad name skips
    the folder, a broken ``plugin.yaml`` only warns; both are added to ``problems``, named
    with ``label``."""
    yield from _plugin_dirs(home / "plugins", kind, problems, label)


def project_plugin_roots() -> list[Path]:
    """``./.memoryport/plugins`` and ``./.hermes/plugins`` when a switch in
    ``PROJECT_PLUGIN_SWITCHES`` is set to 1/true/yes/on, else nothing."""
    switches = (os.environ.get(name, "").strip().lower() for name in PROJECT_PLUGIN_SWITCHES)
    if not any(value in ("1", "true", "yes", "on") for value in switches):
        return []
    cwd = Path.cwd()
    return [cwd / ".memoryport" / "plugins", cwd / ".hermes" / "plugins"]


def project_plugin_dirs(kind: str, problems: list[str], label: str
                        ) -> Iterator[tuple[Path, PluginManifest]]:
    """Like :func:`user_plugin_dirs`, for the project roots of :func:`project_plugin_roots`."""
    for root in project_plugin_roots():
        yield from _plugin_dirs(root, kind, problems, label)


def _plugin_dirs(root: Path, kind: str, problems: list[str], label: str
                 ) -> Iterator[tuple[Path, PluginManifest]]:
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(("_", ".")) or plugin_dir_kind(entry) != kind:
            continue
        try:
            validate_plugin_name(entry.name)
        except PluginError as exc:
            problems.append(f"{label} {entry}: {exc}")
            continue
        manifest, problem = read_manifest_lenient(entry / "plugin.yaml", entry.name)
        if problem:
            problems.append(f"{label} {entry.name!r}: {problem}")
            logger.warning("%s %r: %s", label, entry.name, problem)
        yield entry, manifest


def _user(home: Path, result: Discovery) -> Iterable[ProviderInfo]:
    for entry, manifest in user_plugin_dirs(home, "provider", result.problems, "user plugin"):
        yield ProviderInfo(name=entry.name, source="user", manifest=manifest, path=entry)


def _project(result: Discovery) -> Iterable[ProviderInfo]:
    for entry, manifest in project_plugin_dirs("provider", result.problems, "project plugin"):
        yield ProviderInfo(name=entry.name, source="project", manifest=manifest, path=entry)


def discover(
    home: Path,
    *,
    bundled_dir: Path | None = None,
    entry_points: dict[str, Sequence[metadata.EntryPoint]] | None = None,
) -> Discovery:
    """List every available provider plugin without importing any of them.

    ``bundled_dir`` and ``entry_points`` (group -> entry points) replace the real sources,
    which tests use; by default the installed distributions are scanned.
    """
    result = Discovery()
    eps = entry_points or {}
    use_real = entry_points is None
    sources: list[Iterable[ProviderInfo]] = [
        _bundled(bundled_dir or bundled_providers_dir(), result),
        _user(home, result),
        _project(result),
        _entry_points(
            ENTRY_POINT_GROUP,
            "entry_point",
            result,
            None if use_real else eps.get(ENTRY_POINT_GROUP, ()),
        ),
        _entry_points(
            HERMES_ENTRY_POINT_GROUP,
            "hermes_entry_point",
            result,
            None if use_real else eps.get(HERMES_ENTRY_POINT_GROUP, ()),
        ),
    ]
    for source in sources:
        for info in source:
            result._add(info)
    return result
