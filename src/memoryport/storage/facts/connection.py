"""The connection the fact store's shared queries run on: the part of the DB-API they use.

:mod:`.read`, :mod:`.write` and :class:`~.store.FactStore` are written against
:class:`Connection`; ``sqlite3.Connection`` is one, and the PostgreSQL store's
:class:`~.postgres_sql.PgConnection` is another (it rewrites SQLite's few spellings and
runs them on psycopg), so one copy of the query code serves both backends with no cast.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

__all__ = ["Connection", "Result"]


class Result(Protocol):
    """The rows of one statement (``sqlite3.Cursor`` and ``PgResult`` are results)."""

    @property
    def lastrowid(self) -> int | None:
        """The id of the row an ``INSERT`` added (None otherwise)."""

    def fetchone(self) -> Any:
        """The next row, or None."""

    def fetchall(self) -> list[Any]:
        """The remaining rows."""

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one by one."""


class Connection(Protocol):
    """What the shared queries call: ``execute`` and ``executemany`` with ``?``
    placeholders and positional parameters."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Result:
        """Run one statement."""

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> object:
        """Run one statement for each parameter row."""
