"""Which configuration values are secrets, and how they are shown (never in clear).

Secrets belong in ``<home>/.env``; what still ends up in ``config.yaml`` (a password in
``sessions.dsn``, a provider field whose name or schema says it is secret) is masked by
``config show`` / ``config get`` / ``config set`` and makes ``config.yaml`` mode 0600.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "HIDDEN",
    "dsn_has_password",
    "holds_secret",
    "looks_secret",
    "mask_config",
    "mask_dsn",
]

HIDDEN = "***"
"""What a masked secret is shown as."""

_SECRET_NAME = re.compile(
    r"(^|[_.-])(api[_-]?key|apikey|secret|secret[_-]?key|password|passwd|token|"
    r"access[_-]?token|auth[_-]?token|credentials?|private[_-]?key)$",
    re.IGNORECASE,
)
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)


def looks_secret(key: str) -> bool:
    """True for keys named like a secret: ``api_key``, ``token``, ``db_password``..."""
    return bool(_SECRET_NAME.search(str(key)))


def _url_password(dsn: str) -> str | None:
    if "://" not in dsn:
        return None
    try:
        return urlsplit(dsn).password
    except ValueError:
        return None


def dsn_has_password(dsn: str) -> bool:
    """True when a connection string carries a password (URL or ``password=`` form)."""
    return bool(_url_password(dsn)) or bool(_KEYWORD_PASSWORD.search(dsn))


def mask_dsn(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***`` (URL, query and keyword forms)."""
    masked = _KEYWORD_PASSWORD.sub(lambda m: m.group(1) + HIDDEN, dsn)
    if _url_password(masked):
        parts = urlsplit(masked)
        user, _, host = parts.netloc.rpartition("@")
        name = user.partition(":")[0]
        masked = urlunsplit(parts._replace(netloc=f"{name}:{HIDDEN}@{host}"))
    return masked


def _section_secret(key: Any, value: Any, secret_keys: Collection[str]) -> bool:
    return value not in (None, "") and (str(key) in secret_keys or looks_secret(str(key)))


def holds_secret(
    data: Mapping[str, Any], secret_keys: Mapping[str, Collection[str]] | None = None
) -> bool:
    """True when a parsed ``config.yaml`` holds a secret value (see ``mask_config``)."""
    return mask_config(data, secret_keys) != data


def mask_config(
    data: Mapping[str, Any], secret_keys: Mapping[str, Collection[str]] | None = None
) -> dict[str, Any]:
    """A copy of a ``config.yaml`` mapping with every secret value replaced by ``***``.

    Masked: the password in ``storage.dsn`` (and its old spelling ``sessions.dsn``); in
    provider sections (top-level ones and Hermes-style ``memory.<name>`` ones) each
    non-empty field that ``secret_keys[name]`` lists (a schema's ``secret: true`` fields)
    or whose name looks like a secret.
    """
    secret_keys = secret_keys or {}
    out: dict[str, Any] = {}
    for name, section in data.items():
        if not isinstance(section, Mapping):
            out[name] = section
        elif name in ("sessions", "storage"):
            dsn = section.get("dsn")
            out[name] = {**section, "dsn": mask_dsn(dsn)} if isinstance(dsn, str) else section
        elif name == "memory":  # Hermes-style provider sections nest under memory:
            out[name] = {
                k: _mask_section(str(k), v, secret_keys) if isinstance(v, Mapping) else v
                for k, v in section.items()
            }
        elif name == "agent":
            out[name] = section
        else:
            out[name] = _mask_section(str(name), section, secret_keys)
    return out


def _mask_section(
    name: str, section: Mapping[Any, Any], secret_keys: Mapping[str, Collection[str]]
) -> dict[Any, Any]:
    keys = secret_keys.get(name, ())
    return {k: HIDDEN if _section_secret(k, v, keys) else v for k, v in section.items()}
