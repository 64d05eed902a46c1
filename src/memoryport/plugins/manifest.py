"""``plugin.yaml``: the metadata a provider ships, read without importing the provider."""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memoryport.errors import PluginError

__all__ = [
    "ExternalDependency",
    "PluginManifest",
    "normalize_config_fields",
    "parse_manifest",
    "read_manifest",
    "read_manifest_lenient",
    "salvage_manifest",
    "validate_plugin_name",
]

_PLUGIN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_plugin_name(name: str) -> str:
    """Return ``name`` when it is a safe plugin name, else raise ``PluginError``.

    A plugin name becomes a directory name and a config key: no path separators, not
    empty, not made of dots only, letters/digits/``_``/``-``/``.`` only.
    """
    if not isinstance(name, str) or not _PLUGIN_NAME_RE.match(name) or set(name) <= {"."}:
        raise PluginError(
            f"invalid plugin name {name!r}: use letters, digits, '_', '-' or '.', starting "
            "with a letter or digit, no path separators",
            plugin=str(name),
        )
    return name


@dataclass(frozen=True)
class ExternalDependency:
    """A non-Python requirement: ``check`` is a command that succeeds when it is present."""

    name: str
    install: str = ""
    check: str = ""


@dataclass(frozen=True)
class PluginManifest:
    """The parsed ``plugin.yaml`` of one provider.

    ``config`` holds the seed-02 form of settings, normalised to ``ConfigField`` dicts
    (``label`` becomes ``description``). ``builtin: true`` marks memoryport's own built-in
    providers, which are created by factories and are not selectable.
    """

    name: str
    version: str = ""
    description: str = ""
    pip_dependencies: tuple[str, ...] = ()
    external_dependencies: tuple[ExternalDependency, ...] = ()
    hooks: tuple[str, ...] = ()
    config: tuple[dict[str, Any], ...] = ()
    requires_env: tuple[str, ...] = ()
    builtin: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "pip_dependencies": list(self.pip_dependencies),
            "external_dependencies": [vars(d) for d in self.external_dependencies],
            "hooks": list(self.hooks),
            "config": [dict(c) for c in self.config],
            "requires_env": list(self.requires_env),
        }


def _str_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise PluginError(f"{source}: {key} must be a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def normalize_config_fields(raw: Any, source: str = "plugin.yaml") -> tuple[dict[str, Any], ...]:
    """Normalise a ``config:`` list of {key, label/description, default, required, secret}."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PluginError(f"{source}: config must be a list of fields, got {raw!r}")
    out: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise PluginError(f"{source}: config field #{index} needs a 'key', got {item!r}")
        spec = dict(item)
        label = spec.pop("label", None)
        if label is not None and "description" not in spec:
            spec["description"] = str(label)
        out.append(spec)
    return tuple(out)


def _external(raw: Any, source: str) -> tuple[ExternalDependency, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PluginError(f"{source}: external_dependencies must be a list, got {raw!r}")
    deps: list[ExternalDependency] = []
    for item in raw:
        if isinstance(item, str):
            deps.append(ExternalDependency(name=item))
        elif isinstance(item, Mapping) and item.get("name"):
            deps.append(
                ExternalDependency(
                    name=str(item["name"]),
                    install=str(item.get("install") or ""),
                    check=str(item.get("check") or ""),
                )
            )
        else:
            raise PluginError(f"{source}: external dependency needs a 'name', got {item!r}")
    return tuple(deps)


_KNOWN = {
    "name",
    "version",
    "description",
    "pip_dependencies",
    "external_dependencies",
    "hooks",
    "config",
    "requires_env",
    "builtin",
}


def parse_manifest(data: Any, default_name: str, source: str = "plugin.yaml") -> PluginManifest:
    """Build a manifest from parsed YAML; ``default_name`` is used when ``name`` is absent."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise PluginError(f"{source}: expected a mapping, got {type(data).__name__}")
    return PluginManifest(
        name=str(data.get("name") or default_name),
        version=str(data.get("version") or ""),
        description=str(data.get("description") or "").strip(),
        pip_dependencies=_str_list(data.get("pip_dependencies"), "pip_dependencies", source),
        external_dependencies=_external(data.get("external_dependencies"), source),
        hooks=_str_list(data.get("hooks"), "hooks", source),
        config=normalize_config_fields(data.get("config"), source),
        requires_env=_str_list(data.get("requires_env"), "requires_env", source),
        builtin=data.get("builtin") is True,
        extra={k: v for k, v in data.items() if k not in _KNOWN},
    )


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: what is wrong and where (``line L, column C``)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PARSED: dict[tuple[str, int, int], Any] = {}
_PARSED_LOCK = threading.Lock()


def _load_yaml(path: Path) -> Any:
    """The YAML data of *path*, parsed once per file version (path, mtime, size) in this
    process: every ``Memory`` opened (one per MCP client, say) discovers the plugins again,
    and parsing the manifests was most of that. Callers get their own copy."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _PARSED_LOCK:
        if key in _PARSED:
            return copy.deepcopy(_PARSED[key])
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    with _PARSED_LOCK:
        if len(_PARSED) >= 512:
            _PARSED.clear()
        _PARSED[key] = data
    return copy.deepcopy(data)


def read_manifest(path: Path, default_name: str) -> PluginManifest:
    """Read and parse a ``plugin.yaml`` file; a missing file gives a name-only manifest."""
    try:
        data = _load_yaml(path)
    except FileNotFoundError:
        return PluginManifest(name=default_name)
    except yaml.YAMLError as exc:
        problem = _yaml_problem(exc)
        raise PluginError(f"{path}: not valid YAML: {problem}", plugin=default_name) from exc
    return parse_manifest(data, default_name, str(path))


_TOP_LEVEL_RE = re.compile(r"^(version|description)\s*:\s*(.*?)\s*$")


def salvage_manifest(text: str, default_name: str) -> PluginManifest:
    """Metadata from a ``plugin.yaml`` that is not valid YAML, read line by line.

    Only top-level ``version`` and ``description`` lines are taken, each value
    verbatim after the first ``:`` (so ``description: Memory: local`` keeps its colon),
    with one level of matching quotes removed. Everything else is left out.
    """
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _TOP_LEVEL_RE.match(line)
        if match is None or match.group(1) in found:
            continue
        value = match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found[match.group(1)] = value
    return PluginManifest(
        name=default_name,
        version=found.get("version", ""),
        description=found.get("description", ""),
    )


def read_manifest_lenient(path: Path, default_name: str) -> tuple[PluginManifest, str]:
    """Read ``plugin.yaml`` as Hermes does: a broken file is a warning, not a dropped plugin.

    Returns the manifest and a problem message ("" when the file is fine). Hermes reads
    ``plugin.yaml`` for metadata only and loads the plugin anyway, so a file that is not
    valid YAML (an unquoted colon in ``description:`` is common) or has a field of the
    wrong shape gives the metadata that can be salvaged plus a warning.
    """
    try:
        return read_manifest(path, default_name), ""
    except PluginError as exc:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        manifest = salvage_manifest(text, default_name)
        return manifest, f"{exc}; loading the plugin anyway with the metadata that could be read"
