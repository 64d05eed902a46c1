"""Home directory, profiles, ``config.yaml`` and ``.env``.

Everything memoryport writes lives under one *home* directory::

    resolve_home()                       # $MEMORYPORT_HOME or ~/.memoryport
    resolve_home(profile="work")         # <home>/profiles/work

``config.yaml`` holds a ``memory:``, a ``sessions:``, a ``storage:`` and an ``agent:`` block
plus one section per provider (the top-level key is the provider name). Secrets live in
``<home>/.env`` (mode 0600); real environment variables override it. Nothing here does
I/O at import time.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from memoryport._fs import ensure_private_dir
from memoryport.config.envfile import (
    atomic_write,
    env_path,
    get_secret,
    load_env_into_environ,
    parse_env,
    read_env,
    read_text,
    write_env,
)
from memoryport.config.limits import AGENT_NOTES_MODES
from memoryport.config.limits import CONSTRAINTS as _CONSTRAINTS
from memoryport.config.limits import MAXIMA as _MAXIMA
from memoryport.config.limits import SECTION_KEY_TYPES as _SECTION_KEY_TYPES
from memoryport.config.providers import (
    missing_env_vars,
    provider_env_var,
    validate_provider_config,
)
from memoryport.config.secrets import holds_secret
from memoryport.config.storage import (
    DEPRECATED_KEYS,
    StorageSettings,
    drop_keys,
    resolve_storage,
    storage_key,
)
from memoryport.errors import ConfigError

__all__ = [
    "AGENT_NOTES_MODES",
    "DEFAULT_HOME",
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "AgentSettings",
    "Config",
    "ConfigWarning",
    "MemorySettings",
    "SessionSettings",
    "StorageSettings",
    "block_fields",
    "coerce",
    "config_from_dict",
    "config_path",
    "ensure_home",
    "env_path",
    "get_secret",
    "get_value",
    "load_config",
    "load_env_into_environ",
    "missing_env_vars",
    "parse_env",
    "profile_name",
    "provider_env_var",
    "read_env",
    "resolve_home",
    "save_config",
    "set_value",
    "validate_name",
    "validate_provider_config",
    "write_env",
]

DEFAULT_HOME = Path("~/.memoryport")
"""Where the home is when neither ``--home`` nor ``MEMORYPORT_HOME`` says otherwise."""

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ConfigWarning(UserWarning):
    """A non-fatal configuration problem, such as an unknown key in ``config.yaml``."""


# --------------------------------------------------------------------------- settings

DEFAULT_MEMORY_CHAR_LIMIT = 2200
"""Default whole-file budget of ``MEMORY.md`` in characters."""
DEFAULT_USER_CHAR_LIMIT = 1375
"""Default whole-file budget of ``USER.md`` in characters."""


@dataclass(frozen=True)
class MemorySettings:
    """The ``memory:`` block: built-in memory and provider selection."""

    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT
    user_char_limit: int = DEFAULT_USER_CHAR_LIMIT
    agent_notes: str = AGENT_NOTES_MODES[0]  # "per_user": MEMORY.md under memories/users/<id>/
    provider: str = "holographic"  # the bundled fact store; "" turns external recall off
    max_external_providers: int = 1
    prefetch_deadline_s: float = 5.0
    context_budget_chars: int = 4000
    nudge_interval: int = 10
    history_enabled: bool = True  # curated revisions in memories/.history/<file>.jsonl
    history_max_age_days: int = 90  # keep every revision this young...
    history_max_revisions: int = 1000  # ...and the last this many, whatever their age


@dataclass(frozen=True)
class SessionSettings:
    """The ``sessions:`` block; ``backend``/``dsn`` mirror ``storage:`` (deprecated keys)."""

    backend: str = "sqlite"
    dsn: str = ""
    hidden_sources: list[str] = field(default_factory=lambda: ["tool", "subagent"])


@dataclass(frozen=True)
class AgentSettings:
    """The ``agent:`` block: settings of the reference agent loop (``memoryport chat``)."""

    model: str = "gpt-4o-mini"
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    compression_threshold_chars: int = 60000
    max_tool_iterations: int = 8
    system_prompt: str = ""


@dataclass(frozen=True)
class Config:
    """The whole of ``config.yaml``; ``providers`` maps a provider name to its section.

    ``hermes_sections`` holds provider sections written the Hermes way, nested under
    ``memory:`` (``memory.<provider>: {...}``); they are read, kept on save, never moved.
    """

    memory: MemorySettings = field(default_factory=MemorySettings)
    sessions: SessionSettings = field(default_factory=SessionSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    hermes_sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def provider_section(self, name: str) -> dict[str, Any]:
        """A provider's settings: the top-level section over the ``memory.<name>`` one."""
        return {**self.hermes_sections.get(name, {}), **self.providers.get(name, {})}

    def to_dict(self) -> dict[str, Any]:
        """The YAML-ready form: the blocks (without deprecated keys), then the providers."""
        sessions = dataclasses.asdict(self.sessions)
        for old in DEPRECATED_KEYS:
            sessions.pop(old.partition(".")[2])
        data: dict[str, Any] = {
            "memory": dataclasses.asdict(self.memory),
            "sessions": sessions,
            "storage": dataclasses.asdict(self.storage),
            "agent": dataclasses.asdict(self.agent),
        }
        for name, section in self.providers.items():
            data[name] = dict(section)
        return data


_BLOCKS: dict[str, type[Any]] = {
    "memory": MemorySettings,
    "sessions": SessionSettings,
    "storage": StorageSettings,
    "agent": AgentSettings,
}

# --------------------------------------------------------------------------- home


def validate_name(name: str, what: str = "name") -> str:
    """Return ``name`` if it is a safe single path component, else raise ``ConfigError``.

    Allowed: letters, digits, ``_``, ``-`` and ``.``, starting with a letter or digit, at
    most 64 characters. So no path separators, no ``..``, nothing empty.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name) or set(name) <= {"."}:
        raise ConfigError(
            f"{what}: {name!r} is not valid; expected letters, digits, '_', '-' or '.', "
            "starting with a letter or digit (at most 64 characters, no path separators)"
        )
    return name


def _base_home(home: str | os.PathLike[str] | None) -> Path:
    if home is None or str(home) == "":
        home = os.environ.get("MEMORYPORT_HOME") or DEFAULT_HOME
    return Path(home).expanduser().absolute()


def resolve_home(home: str | os.PathLike[str] | None = None, profile: str | None = None) -> Path:
    """Return the active home directory (not created).

    ``home`` defaults to ``$MEMORYPORT_HOME`` or ``~/.memoryport``; ``profile`` defaults to
    ``$MEMORYPORT_PROFILE`` only when ``home`` is not given either (an explicit ``home``
    is taken as already resolved). A profile other than ``default`` selects
    ``<home>/profiles/<profile>/``, which then scopes every path (memories, state.db,
    plugins, provider data, .env).
    """
    base = _base_home(home)
    if profile is None and home is None:
        profile = os.environ.get("MEMORYPORT_PROFILE") or None
    if not profile or profile == "default":
        return base
    return base / "profiles" / validate_name(profile, "profile")


def ensure_home(home: str | os.PathLike[str]) -> Path:
    """Create the home directory (and missing parents, e.g. ``profiles/``) with mode 0700.

    The home holds chat history, memories and secrets, so what memoryport creates is
    private to the user. A directory that already exists keeps its permissions.
    """
    return ensure_private_dir(home)


def profile_name(home: Path) -> str:
    """Return the profile a resolved home belongs to (``default`` for the root home)."""
    if home.parent.name == "profiles":
        return home.name
    return "default"


def config_path(home: Path) -> Path:
    """Path of ``config.yaml`` in ``home``."""
    return home / "config.yaml"


# --------------------------------------------------------------------------- parsing


def _type_name(tp: Any) -> str:
    return {
        bool: "a boolean (true/false)",
        int: "an integer",
        float: "a number",
        str: "a string",
    }.get(tp, "a list of strings")


def _check_value(dotted: str, value: Any, tp: Any) -> Any:
    """Validate one value against its declared type; return it normalised."""
    ok: bool
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif tp is str:
        ok = isinstance(value, str)
    else:  # list[str]
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not ok:
        raise ConfigError(f"{dotted}: {value!r} is not valid; expected {_type_name(tp)}")
    choices, minimum = _CONSTRAINTS.get(dotted, (None, None))
    if choices is not None and value not in choices:
        raise ConfigError(f"{dotted}: {value!r} is not one of {', '.join(choices)}")
    if tp in (int, float):
        kind = "an integer" if tp is int else "a finite number"
        _check_range(dotted, value, minimum, _MAXIMA.get(dotted), kind)
    return value


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _check_range(
    dotted: str, value: float, minimum: float | None, maximum: float | None, kind: str
) -> None:
    """Refuse a non-finite number or one outside ``[minimum, maximum]``, naming the range."""
    low = "" if minimum is None else _number(minimum)
    high = "" if maximum is None else _number(maximum)
    wanted = (
        f"{kind} from {low} to {high}"
        if low and high
        else f"{kind} of at least {low}"
        if low
        else f"{kind} of at most {high}"
        if high
        else kind
    )
    finite = math.isfinite(value)
    too_low = minimum is not None and finite and value < minimum
    too_high = maximum is not None and finite and value > maximum
    if not finite or too_low or too_high:
        shown = value if abs(value) < 1e30 or not finite else f"{value:.3g}"
        raise ConfigError(f"{dotted}: {shown!r} is out of range; expected {wanted}")


def _hints(block: type[Any]) -> dict[str, Any]:
    raw = get_type_hints(block)
    return {
        name: (list if getattr(tp, "__origin__", None) is list else tp) for name, tp in raw.items()
    }


def _build_block(name: str, raw: Any, source: str) -> Any:
    block = _BLOCKS[name]
    if raw is None:
        return block()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: {name}: {raw!r} is not valid; expected a mapping of settings")
    hints = _hints(block)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        dotted = f"{name}.{key}"
        if key not in hints:
            _warn(f"{source}: unknown key {dotted!r} ignored (known: {', '.join(hints)})")
            continue
        try:
            values[key] = _check_value(dotted, value, hints[key])
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    return block(**values)


def _warn(message: str) -> None:
    # One channel only: the warning. The CLI prints it once per command as a plain line.
    warnings.warn(message, ConfigWarning, stacklevel=4)


def config_from_dict(data: Mapping[str, Any], source: str = "config") -> Config:
    """Build a validated ``Config`` from a parsed YAML mapping.

    Unknown keys inside a block warn (``ConfigWarning``); a wrong type raises
    ``ConfigError`` naming the key, the value and what was expected.
    """
    memory_raw = data.get("memory")
    hermes_sections: dict[str, dict[str, Any]] = {}
    if isinstance(memory_raw, Mapping):
        known = _hints(MemorySettings)
        hermes_sections = {
            str(k): dict(v)
            for k, v in memory_raw.items()
            if k not in known and isinstance(v, Mapping)
        }
        data = {**data, "memory": {k: v for k, v in memory_raw.items() if k not in hermes_sections}}
    blocks = {name: _build_block(name, data.get(name), source) for name in _BLOCKS}
    blocks["storage"], blocks["sessions"] = resolve_storage(data, blocks, source, _warn)
    providers: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key in _BLOCKS:
            continue
        if isinstance(value, Mapping):
            providers[str(key)] = dict(value)
        elif value is None:
            providers[str(key)] = {}
        else:
            _warn(
                f"{source}: unknown top-level key {key!r} ignored (provider sections must "
                "be mappings)"
            )
    return Config(providers=providers, hermes_sections=hermes_sections, **blocks)


def _yaml_problem(path: Path, exc: yaml.YAMLError) -> ConfigError:
    """Name the file and line of a YAML error, and say what to do."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return ConfigError(
        f"{path}: {where}not valid YAML ({problem}); fix that line, or move the file "
        "away to start again from the defaults"
    )


def _read_yaml(path: Path) -> dict[str, Any]:
    text = read_text(path)
    if text is None:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _yaml_problem(path, exc) from None
    except RecursionError:
        raise ConfigError(
            f"{path}: not valid YAML (nested too deeply); fix the file or move it away"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping (memory:, sessions:, ...) at the top level, got "
            f"{type(data).__name__}; fix the file or move it away"
        )
    return data


def load_config(home: Path) -> Config:
    """Read ``<home>/config.yaml``; a missing file gives the defaults."""
    path = config_path(home)
    return config_from_dict(_read_yaml(path), source=str(path))


# --------------------------------------------------------------------------- writing


def _merge(base: dict[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in updates.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def save_config(
    home: Path, config_or_updates: Config | Mapping[str, Any], *, drop: Sequence[str] = ()
) -> Config:
    """Write ``config.yaml`` and return the resulting validated ``Config``.

    A ``Config`` or a mapping (``{"memory": {"provider": "x"}}``) is merged into what is
    on disk, so keys memoryport does not model (such as a Hermes provider's
    ``memory.<name>`` section) survive. The result is validated before anything is written.
    ``drop`` names dotted keys removed from the file first (a deprecated key being moved).
    """
    path = config_path(home)
    updates = (
        config_or_updates.to_dict() if isinstance(config_or_updates, Config) else config_or_updates
    )
    data = _merge(drop_keys(_read_yaml(path), drop), updates)
    config = config_from_dict(data, source=str(path))
    with atomic_write(path, mode=_file_mode(path, data)) as handle:
        yaml.safe_dump(data, handle, sort_keys=False, default_flow_style=False)
    return config


def _file_mode(path: Path, data: Mapping[str, Any]) -> int:
    """0600 when the config holds a secret; else the file's current mode (0644 if new)."""
    if holds_secret(data):
        return 0o600
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o644


def _split_key(dotted: str) -> tuple[str, str]:
    section, sep, key = dotted.partition(".")
    if not sep or not section or not key:
        raise ConfigError(
            f"{dotted!r} is not a valid key; expected SECTION.KEY, e.g. memory.provider"
        )
    return section, key


def get_value(home: Path, dotted: str) -> Any:
    """Return one setting, e.g. ``get_value(home, "memory.provider")``.

    Block settings fall back to their defaults; an unknown key raises ``ConfigError``.
    """
    section, key = _split_key(dotted)
    config = load_config(home)
    if section in _BLOCKS:
        block = getattr(config, section)
        if key not in _hints(type(block)):
            raise ConfigError(
                f"{dotted}: unknown setting (known: {', '.join(_hints(type(block)))})"
            )
        return getattr(block, key)
    values = config.provider_section(section)
    if key not in values:
        raise ConfigError(f"{dotted}: not set")
    return values[key]


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def coerce(dotted: str, value: Any, tp: Any) -> Any:
    """Convert a command-line string to ``tp`` (bool/int/float/str/list); raise ConfigError."""
    if not isinstance(value, str) or tp is str:
        return value
    text = value.strip()
    try:
        if tp is bool:
            if text.lower() in _TRUE | _FALSE:
                return text.lower() in _TRUE
            raise ValueError(text)
        if tp is int:
            return int(text)
        if tp is float:
            return float(text)
    except (ValueError, OverflowError):
        raise ConfigError(f"{dotted}: {value!r} is not valid; expected {_type_name(tp)}") from None
    if tp is list:
        if text.startswith("["):
            parsed = yaml.safe_load(text)
            if isinstance(parsed, list):
                return [str(v) for v in parsed]
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


def _guess_scalar(value: str) -> Any:
    """Provider sections have no declared types: read YAML scalars (``3`` -> 3, ``true``)."""
    try:
        parsed = yaml.safe_load(value)
    except (yaml.YAMLError, RecursionError):
        return value
    return parsed if isinstance(parsed, bool | int | float | str | list) else value


def _check_text(what: str, text: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (bytes a terminal could not decode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"{what} holds bytes that are not valid UTF-8; type it again as UTF-8 text"
        ) from None


def set_value(home: Path, dotted: str, value: Any) -> Config:
    """Set one setting and write ``config.yaml``; strings are coerced to the declared type.

    A refused value (wrong type, out of range, not UTF-8) raises ``ConfigError`` and
    leaves ``config.yaml`` unchanged.
    """
    _check_text("the key", dotted)
    if isinstance(value, str):
        _check_text(f"the value of {dotted}", value)
    dotted, drop = storage_key(dotted, _warn)
    section, key = _split_key(dotted)
    if section in _BLOCKS:
        hints = _hints(_BLOCKS[section])
        if key not in hints:
            raise ConfigError(f"{dotted}: unknown setting (known: {', '.join(hints)})")
        value = _check_value(dotted, coerce(dotted, value, hints[key]), hints[key])
    elif dotted in _SECTION_KEY_TYPES:
        tp = _SECTION_KEY_TYPES[dotted]
        value = _check_value(dotted, coerce(dotted, value, tp), tp)
    else:
        validate_name(section, "provider section")
        if isinstance(value, str):
            value = _guess_scalar(value)
    return save_config(home, {section: {key: value}}, drop=drop)


def block_fields() -> dict[str, list[str]]:
    """The known keys of each block, for help texts and completion."""
    return {name: [f.name for f in fields(block)] for name, block in _BLOCKS.items()}
