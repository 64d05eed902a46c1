"""One connection of the PostgreSQL turn index, scoped by row-level security to the user
of each call.

The index searches and writes turns on one (:class:`~.postgres.PostgresTurnIndex`); its
vector writer (:mod:`.postgres_vectors`) has its own, so the writer's durable commits
never hold up a turn's write or a search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from memoryport.errors import StoreError
from memoryport.storage import postgres_wire
from memoryport.storage.turns import postgres_schema as pgschema

__all__ = ["PgLink"]

T = TypeVar("T")
Cursor = psycopg.Cursor[Any]


class PgLink:
    """A connection to ``dsn`` behind ``lock`` (``where`` names the store in messages)."""

    def __init__(self, dsn: str, where: str, lock: threading.Lock | None = None) -> None:
        self.dsn, self.where = dsn, where
        self.lock = lock or threading.Lock()
        self.closed = False
        self.current: str | None = None  # the scope the connection is set to
        self.conn = psycopg.connect(dsn, autocommit=True, application_name="memoryport")

    def call(self, fn: Callable[[Cursor], T], what: str, scope: str, *, write: bool) -> T:
        """``fn`` with the connection scoped to ``scope``: a write in one transaction, a
        read (one statement) as it is (the caller holds the lock).

        The scope is a session setting, changed only when a call names another user, so
        a read is one round trip; it is set outside any transaction, so no rollback can
        undo it behind the cached value. A call that finds the connection broken (a
        server restart, a dropped network) opens a new one; the call that broke it has
        already raised ``StoreError`` (nothing is retried: a write's fate is the
        server's)."""
        try:
            self._ready(scope)
            with self.conn.cursor() as cur:
                if not write:
                    return fn(cur)
                # pipelined: statements whose results are not read go out together
                with self.conn.pipeline(), self.conn.transaction():
                    return fn(cur)
        except psycopg.Error as exc:
            raise StoreError(f"turn index {what} failed on {self.where}: {exc}") from exc

    def pipelined(self, fn: Callable[[Cursor], Callable[[], T]], what: str, scope: str) -> T:
        """``fn``'s statements in one transaction sent with its ``BEGIN`` and ``COMMIT``
        (:func:`memoryport.storage.postgres_wire.pipelined`: one round trip); ``fn``
        returns what reads its results once they are in (the caller holds the lock)."""
        try:
            self._ready(scope)
            return postgres_wire.pipelined(self.conn, fn)
        except psycopg.Error as exc:
            raise StoreError(f"turn index {what} failed on {self.where}: {exc}") from exc

    def _ready(self, scope: str) -> None:
        """Reconnect if the connection broke; scope it to ``scope`` if it is not."""
        if self.closed:
            raise StoreError(f"the turn index on {self.where} is closed")
        if self.conn.broken or self.conn.closed:  # the server went away: reconnect
            self.conn = psycopg.connect(self.dsn, autocommit=True,
                                        application_name="memoryport")
            self.current = None
        if self.current != scope:
            self.current = None
            pgschema.set_scope(self.conn, scope)
            self.current = scope

    def close(self) -> None:
        """Close the connection (idempotent; takes the lock)."""
        with self.lock:
            self.closed = True
            self.conn.close()
