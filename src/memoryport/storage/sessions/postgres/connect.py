"""A fast, single-line connection check for the PostgreSQL session store.

Opening a ``psycopg_pool.ConnectionPool`` on a bad DSN retries quietly for the whole
pool timeout and logs every attempt; one direct ``psycopg.connect`` with a short
``connect_timeout`` fails in seconds with one clear message instead. Messages name the
server (host, port, database, user), never the password.
"""

from __future__ import annotations

import os
import re

import psycopg
from psycopg.conninfo import conninfo_to_dict

from memoryport.errors import StoreError

__all__ = [
    "CONNECT_TIMEOUT_S",
    "HINT",
    "check_connection",
    "connection_problem",
    "describe_dsn",
]

CONNECT_TIMEOUT_S = 5.0
"""Default seconds the first connection may take before the store gives up."""

HINT = (
    "check the host, port, database and user in storage.dsn, that the server is running "
    "and reachable, and the password (in the DSN, PGPASSWORD in the environment or "
    "<home>/.env, or ~/.pgpass)"
)
"""What to check when the connection fails (also used by ``memoryport doctor``)."""
_SECRETS = (
    (re.compile(r"(://[^:/@\s]*:)[^@\s]*@"), r"\1***@"),
    (re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE), r"\1***"),
)


def _redact(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def describe_dsn(conninfo: str) -> str:
    """``user@host:port/dbname`` of a DSN (PG* variables fill gaps); never the password."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        params = {}
    env = os.environ

    def get(key: str, var: str, default: str) -> str:
        return str(params.get(key) or env.get(var) or default)

    host = get("host", "PGHOST", "localhost")
    port = get("port", "PGPORT", "5432")
    user = get("user", "PGUSER", "")
    dbname = get("dbname", "PGDATABASE", user or "postgres")
    return f"{user + '@' if user else ''}{host}:{port}/{dbname}"


def connection_problem(conninfo: str, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Connect once and disconnect; return what went wrong in one line, or None if fine.

    ``timeout`` becomes libpq's ``connect_timeout`` (at least 2 s, libpq's minimum) unless
    the DSN sets its own.
    """
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        reason = _redact(_one_line(str(exc)))
        return f"storage.dsn is not a valid PostgreSQL connection string: {reason}"
    extra: dict[str, object] = {"application_name": "memoryport"}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = max(2, round(timeout))
    try:
        conn = psycopg.connect(conninfo, **extra)  # type: ignore[arg-type]
    except psycopg.Error as exc:
        reason = _redact(_one_line(str(exc))).rstrip(".?! ") or type(exc).__name__
        return f"cannot connect to PostgreSQL at {describe_dsn(conninfo)}: {reason}"
    conn.close()
    return None


def check_connection(conninfo: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise ``StoreError`` (one line: the problem and what to check) if connecting fails."""
    problem = connection_problem(conninfo, timeout)
    if problem is not None:
        raise StoreError(f"{problem}; {HINT}")
