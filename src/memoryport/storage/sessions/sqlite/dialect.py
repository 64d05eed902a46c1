"""The SQLite dialect: the session insert, filter SQL and busy-error classification.

Text needs no encoding in SQLite, so rows convert with the neutral functions of
:mod:`memoryport.storage.sessions.rows`.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memoryport.storage.sessions.records import SearchScope
from memoryport.storage.sessions.rows import SESSION_COLUMNS, scope_where

__all__ = ["INSERT_SESSION", "is_busy", "scope_sql"]


INSERT_SESSION = (
    f"INSERT INTO sessions ({SESSION_COLUMNS.replace('s.', '')})"
    f" VALUES ({','.join('?' * len(SESSION_COLUMNS.split(',')))})"
)
"""Insert of a full ``sessions`` row, values in ``SESSION_COLUMNS`` order."""


_OPERATORS = {
    "=": "{} = ?",
    "in": "{} IN (SELECT value FROM json_each(?))",
    "not in": "{} NOT IN (SELECT value FROM json_each(?))",
}


def scope_sql(scope: SearchScope) -> tuple[str, list[Any]]:
    """``AND ...`` conditions on ``s`` (sessions) and ``m`` (messages) plus parameters."""
    return scope_where(scope, _OPERATORS, json.dumps)


def is_busy(exc: sqlite3.Error) -> bool:
    """True for the transient "database is locked/busy" errors worth retrying."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text
