"""Find provider plugins without importing them.

Sources, highest precedence first:

1. bundled providers: ``memoryport/providers/<name>/plugin.yaml`` (those marked
   ``builtin: true`` are memoryport's own built-ins and are not listed);
2. entry points in the group ``memoryport.providers``;
3. entry points in Hermes' group ``hermes_agent.memory_providers``;
4. user plugin directories ``<home>/plugins/<name>/`` (``__init__.py`` + ``plugin.yaml``).

On a name clash the higher-precedence provider wins and the other is reported. Only
``plugin.yaml`` files and distribution metadata are read here; no plugin code runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from memoryport.errors import PluginError
from memoryport.plugins.manifest import PluginManifest, read_manifest, validate_plugin_name

__all__ = [
    "ENTRY_POINT_GROUP",
    "HERMES_ENTRY_POINT_GROUP",
    "SOURCES",
    "Discovery",
    "ProviderInfo",
    "bundled_providers_dir",
    "discover",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "memoryport.providers"
"""Entry-point group for memoryport provider packages."""

HERMES_ENTRY_POINT_GROUP = "hermes_agent.memory_providers"
"""Hermes' entry-point group; packages written for Hermes are found here."""

SOURCES = ("bundled", "entry_point", "hermes_entry_point", "user")
"""Discovery sources in precedence order."""

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


def _dist_manifest(ep: metadata.EntryPoint) -> tuple[PluginManifest, Path | None]:
    """Find ``plugin.yaml`` next to the entry point's module via the distribution's RECORD."""
    dist = ep.dist
    parts = ep.module.split(".")
    wanted = {"/".join([*parts[:i], "plugin.yaml"]) for i in range(len(parts), 0, -1)}
    if dist is not None:
        for packaged in dist.files or ():
            if packaged.as_posix() in wanted:
                path = Path(str(dist.locate_file(packaged)))
                if path.is_file():
                    return read_manifest(path, ep.name), path.parent
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
    found = list(eps) if eps is not None else list(metadata.entry_points(group=group))
    for ep in sorted(found, key=lambda e: (e.name, e.value)):
        try:
            validate_plugin_name(ep.name)
            manifest, path = _dist_manifest(ep)
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


def _user(home: Path, result: Discovery) -> Iterable[ProviderInfo]:
    root = home / "plugins"
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        if not entry.is_dir() or entry.name.startswith(("_", ".")):
            continue
        init_file = entry / "__init__.py"
        if not init_file.is_file():
            continue
        has_yaml = (entry / "plugin.yaml").is_file()
        if not has_yaml and not _looks_like_provider(init_file):
            continue
        try:
            validate_plugin_name(entry.name)
            manifest = read_manifest(entry / "plugin.yaml", entry.name)
        except PluginError as exc:
            result.problems.append(f"user plugin {entry}: {exc}")
            continue
        yield ProviderInfo(name=entry.name, source="user", manifest=manifest, path=entry)


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
        _user(home, result),
    ]
    for source in sources:
        for info in source:
            result._add(info)
    return result
