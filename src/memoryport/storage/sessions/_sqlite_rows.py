"""Filter SQL and error classification shared by the SQLite store modules.

The column lists and row conversions are the backend-neutral ones from
:mod:`memoryport.storage.sessions.helpers`, re-exported here for the SQLite modules.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from memoryport.storage.sessions.helpers import (
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    dump_json,
    message_from_row,
    session_from_row,
)

__all__ = [
    "INSERT_SESSION",
    "MESSAGE_COLUMNS",
    "SESSION_COLUMNS",
    "dump_json",
    "is_busy",
    "message_from_row",
    "scope_sql",
    "session_from_row",
]


INSERT_SESSION = (
    f"INSERT INTO sessions ({SESSION_COLUMNS.replace('s.', '')})"
    f" VALUES ({','.join('?' * len(SESSION_COLUMNS.split(',')))})"
)
"""Insert of a full ``sessions`` row, values in ``SESSION_COLUMNS`` order."""


def scope_sql(
    *,
    user_id: str | None,
    include: Sequence[str] | None,
    exclude: Sequence[str],
    roles: Sequence[str] | None = None,
    session_ids: Sequence[str] | None = None,
) -> tuple[str, list[Any]]:
    """``AND ...`` conditions on ``s`` (sessions) and ``m`` (messages) plus parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        parts.append("s.user_id = ?")
        params.append(user_id)
    if include:
        parts.append("s.source IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(include)))
    if exclude:
        parts.append("s.source NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(exclude)))
    if roles:
        parts.append("m.role IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(roles)))
    if session_ids:
        parts.append("m.session_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(session_ids)))
    return "".join(f" AND {p}" for p in parts), params


def is_busy(exc: sqlite3.Error) -> bool:
    """True for the transient "database is locked/busy" errors worth retrying."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text
