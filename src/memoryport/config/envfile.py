""".env secrets files: a small tolerant parser and a 0600 writer; atomic file writes."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memoryport._fs import ensure_private_dir

__all__ = [
    "atomic_write",
    "env_path",
    "get_secret",
    "load_env_into_environ",
    "parse_env",
    "read_env",
    "write_env",
]


def env_path(home: Path) -> Path:
    """Path of the ``.env`` secrets file in ``home``."""
    return home / ".env"


@contextlib.contextmanager
def atomic_write(path: Path, mode: int = 0o644) -> Iterator[Any]:
    """Write ``path`` through a temp file in the same directory, then rename it over.

    A missing directory (the home) is created with mode 0700.
    """
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------- .env

_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        out: list[str] = []
        i = 1
        while i < len(raw):
            ch = raw[i]
            if ch == "\\" and quote == '"' and i + 1 < len(raw):
                out.append(_ESCAPES.get(raw[i + 1], "\\" + raw[i + 1]))
                i += 2
                continue
            if ch == quote:
                return "".join(out)
            out.append(ch)
            i += 1
        return "".join(out)
    hash_at = re.search(r"\s#", raw)
    return (raw[: hash_at.start()] if hash_at else raw).strip()


def parse_env(text: str) -> dict[str, str]:
    """Parse ``.env`` text: ``KEY=value`` lines, ``export``, comments, single/double quotes."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if match:
            values[match.group(1)] = _unquote(match.group(2))
    return values


def read_env(home: Path) -> dict[str, str]:
    """Return the variables in ``<home>/.env`` (empty when there is none)."""
    try:
        return parse_env(env_path(home).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def _quote(value: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]*", value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def write_env(home: Path, updates: Mapping[str, str | None]) -> Path:
    """Set (or, with ``None``, remove) variables in ``<home>/.env``; the file is mode 0600.

    Other lines, including comments, are kept. Values are never logged.
    """
    path = env_path(home)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    pending = dict(updates)
    out: list[str] = []
    for line in lines:
        match = _ENV_LINE.match(line)
        if match and match.group(1) in pending:
            value = pending.pop(match.group(1))
            if value is not None:
                out.append(f"{match.group(1)}={_quote(value)}")
            continue
        out.append(line)
    out.extend(f"{k}={_quote(v)}" for k, v in pending.items() if v is not None)
    with atomic_write(path, mode=0o600) as handle:
        handle.write("\n".join(out) + ("\n" if out else ""))
    os.chmod(path, 0o600)
    return path


def get_secret(home: Path, name: str) -> str | None:
    """Return a secret: the environment variable if set, else the value in ``.env``."""
    return os.environ.get(name) or read_env(home).get(name) or None


def load_env_into_environ(home: Path, *, override: bool = False) -> list[str]:
    """Export ``<home>/.env`` into ``os.environ`` (existing variables win unless ``override``).

    Returns the names that were set. Providers read their keys from the environment, so
    the agent calls this before loading the active provider.
    """
    applied: list[str] = []
    for key, value in read_env(home).items():
        if override or key not in os.environ:
            os.environ[key] = value
            applied.append(key)
    return applied


