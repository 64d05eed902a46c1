""".env secrets files: a small tolerant parser and a 0600 writer; atomic file writes."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memoryport._fs import ensure_private_dir
from memoryport.errors import ConfigError

__all__ = [
    "atomic_write",
    "env_path",
    "get_secret",
    "load_env_into_environ",
    "os_problem",
    "parse_env",
    "read_env",
    "read_text",
    "write_env",
]


def env_path(home: Path) -> Path:
    """Path of the ``.env`` secrets file in ``home``."""
    return home / ".env"


_READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def os_problem(path: Path, exc: OSError, action: str) -> ConfigError:
    """A ``ConfigError`` that says what failed on ``path`` and what to do about it.

    ``action`` is ``"read"`` or ``"write"``. A read-only home or file system says
    "read-only"; a directory where a file should be says so.
    """
    if isinstance(exc, IsADirectoryError) or (path.is_dir() and action == "read"):
        return ConfigError(f"{path} is a directory, not a file; move it away and retry")
    if exc.errno in _READ_ONLY and action == "write":
        where = "on a read-only file system" if exc.errno == errno.EROFS else "read-only for you"
        return ConfigError(
            f"cannot write {path}: the home {path.parent} is {where} ({exc.strerror}); "
            "make it writable (chmod u+w) or choose another home with --home"
        )
    if exc.errno in _READ_ONLY:
        return ConfigError(f"cannot read {path}: {exc.strerror}; check its owner and permissions")
    return ConfigError(f"cannot {action} {path}: {exc.strerror or exc}")


def read_text(path: Path) -> str | None:
    """Return the UTF-8 text of ``path``, ``None`` when it does not exist.

    Anything else that stops the read raises ``ConfigError`` naming the file, and for
    text that is not UTF-8 the line and column of the first bad byte.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_problem(path, exc, "read") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{path}: line {line}, column {column}: not valid UTF-8 (byte "
            f"0x{data[exc.start]:02x}); re-save the file as UTF-8 or fix that line"
        ) from None


@contextlib.contextmanager
def atomic_write(path: Path, mode: int = 0o644) -> Iterator[Any]:
    """Write ``path`` through a temp file in the same directory, then rename it over.

    A missing directory (the home) is created with mode 0700. A home that cannot be
    written raises ``ConfigError`` saying so (read-only, not a directory...).
    """
    try:
        ensure_private_dir(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise os_problem(path, exc, "write") from exc
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise os_problem(path, exc, "write") from exc
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


def parse_env(text: str, source: str = ".env") -> dict[str, str]:
    """Parse ``.env`` text: ``KEY=value`` lines, ``export``, comments, single/double quotes.

    A NUL character (which no environment variable can hold) raises ``ConfigError``
    naming ``source`` and the line.
    """
    values: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        for part in line.splitlines():
            if not part.strip() or part.lstrip().startswith("#"):
                continue
            match = _ENV_LINE.match(part)
            if not match:
                continue
            value = _unquote(match.group(2))
            if "\0" in value:
                raise ConfigError(
                    f"{source}: line {number}: {match.group(1)} contains a NUL character, "
                    "which no environment variable can hold; remove it from that line"
                )
            values[match.group(1)] = value
    return values


def read_env(home: Path) -> dict[str, str]:
    """Return the variables in ``<home>/.env`` (empty when there is none).

    An unreadable file (not UTF-8, a directory, no permission) raises ``ConfigError``
    naming the file and, where it applies, the line.
    """
    path = env_path(home)
    text = read_text(path)
    return {} if text is None else parse_env(text, str(path))


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
    lines = (read_text(path) or "").splitlines()
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
