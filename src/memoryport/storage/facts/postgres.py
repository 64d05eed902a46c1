"""``PostgresFactStore``: the fact store in a PostgreSQL schema, one user's scope per instance.

A :class:`~memoryport.storage.facts.store.FactStore` whose connection is PostgreSQL's:
every public method is the SQLite store's own code, running the shared queries through
:class:`~.postgres_sql.PgConnection`; only the full-text parts (search, the near-duplicate
check, the postings) are PostgreSQL's (:mod:`.postgres_sql`). Each logical write is one
transaction (fact, entities, retirements, revisions and postings commit together or not
at all), and the connection is scoped to the store's user by row-level security
(:mod:`.postgres_schema`), so a query can read no other user's rows even if it forgot
its ``user_id`` filter.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import psycopg
from psycopg import sql

from memoryport.errors import StoreError
from memoryport.storage.facts import postgres_schema, postgres_search, postgres_sql, write
from memoryport.storage.facts.connection import Connection
from memoryport.storage.facts.records import Fact, FactInput
from memoryport.storage.facts.searchcache import SearchCache
from memoryport.storage.facts.store import FactStore
from memoryport.storage.facts.triples import Triple
from memoryport.storage.sessions.postgres.connect import check_connection, describe_dsn
from memoryport.storage.turns.postgres_schema import FACTS_LOCK, lock_user, set_scope

__all__ = ["PostgresFactStore"]

T = TypeVar("T")


class PostgresFactStore(FactStore):
    """Facts of one user in PostgreSQL (see the module docstring).

    Args:
        dsn: libpq connection string or URI.
        user_id: the scope every read and write is limited to (None or '': no user).
        schema: the PostgreSQL schema (created if missing), shared with the turn index.
        default_trust, min_trust: as :class:`FactStore`.
    """

    def __init__(
        self,
        dsn: str,
        *,
        user_id: str | None = None,
        schema: str = "memoryport",
        default_trust: float = 0.5,
        min_trust: float = 0.3,
    ) -> None:
        self.path = Path(describe_dsn(dsn))  # where the facts are, for messages
        self.dsn = dsn
        self.schema = schema
        self.user_id = user_id or ""
        self.default_trust = default_trust
        self.min_trust = min_trust
        self._lock = threading.RLock()
        self._closed = True
        self._cache = SearchCache()  # valid while the user's fact_generation is unchanged
        check_connection(dsn)
        try:
            self._pg = psycopg.connect(dsn, autocommit=True, application_name="memoryport")
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the fact store on {self.path}: {exc}") from exc
        try:
            postgres_schema.migrate(self._pg, schema)
            self._scope_connection()
        except (psycopg.Error, StoreError) as exc:
            self._pg.close()
            raise StoreError(f"cannot open the fact store on {self.path}: {exc}") from exc
        except BaseException:
            self._pg.close()
            raise
        self._closed = False

    def _scope_connection(self) -> None:
        """Point the connection at the schema and the store's user (row-level security)."""
        self._pg.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        set_scope(self._pg, self.user_id)
        self._shared = postgres_sql.PgConnection(self._pg, self.user_id, self.schema)

    def _check_open(self) -> None:
        """``StoreError`` when closed; a connection the server dropped (a restart, the
        network) is replaced (the call that found it broken has already failed)."""
        super()._check_open()
        if self._pg.broken or self._pg.closed:
            try:
                self._pg = psycopg.connect(self.dsn, autocommit=True,
                                           application_name="memoryport")
                self._scope_connection()
            except psycopg.Error as exc:
                raise StoreError(f"fact store unavailable on {self.path}: {exc}") from exc

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One write transaction, after the user's write lock (writers of one user queue,
        as SQLite's ``BEGIN IMMEDIATE`` makes them); the facts it changed are indexed
        before it commits."""
        with self._lock:
            self._check_open()
            try:
                with self._pg.transaction():
                    with self._pg.cursor() as cur:
                        lock_user(cur, FACTS_LOCK, self.user_id)
                    yield self._shared
                    postgres_sql.index_dirty(self._shared)
            except psycopg.Error as exc:
                raise StoreError(f"fact store write failed on {self.path}: {exc}") from exc

    def _read(self, fn: Callable[[Connection], T]) -> T:
        with self._lock:
            self._check_open()
            try:
                return fn(self._shared)
            except (sqlite3.Error, psycopg.Error) as exc:
                raise StoreError(f"fact store read failed: {exc}") from exc

    def _add_one(self, conn: Connection, item: FactInput, triple: Triple | None
                 ) -> tuple[Fact, str, list[int]]:
        """One fact of :meth:`add_many` (the SQLite store's steps; the near-duplicate
        check over PostgreSQL's postings)."""
        same = postgres_sql.find_duplicate(self._shared, item.content, triple, item.speaker)
        if same is not None:
            return same, "duplicate", []
        trust = self.default_trust if item.trust is None else item.trust
        fact_id = write.insert_fact(conn, self.user_id, item, triple, min(1.0, max(0.0, trust)))
        write.link_entities(conn, self.user_id, fact_id, item.content, triple)
        fact = self._require(conn, fact_id)
        retired = (write.retire_conflicting(conn, self.user_id, fact, triple, item.speaker)
                   if triple else [])
        p = item.provenance
        write.revision(conn, fact_id, self.user_id, "add", actor=p.actor,
                       session_id=p.session_id, tool_call_id=p.message_id, after=fact)
        return fact, "added", retired

    # ------------------------------------------------------------------ reads
    def find_live(self, content: str) -> Fact | None:
        """The live fact whose normalised content equals ``content``, or None."""
        def run(conn: Connection) -> Fact | None:
            return postgres_sql.find_duplicate(self._shared, content, None, "user") if (
                content.strip()) else None
        with self._lock:
            self._check_open()
            try:
                with self._pg.transaction():
                    return run(self._shared)
            except (sqlite3.Error, psycopg.Error) as exc:
                raise StoreError(f"fact store read failed: {exc}") from exc

    def search(self, query: str, *, limit: int = 10, min_trust: float | None = None,
               as_of: float | None = None) -> list[Fact]:
        """Ranked live facts for ``query`` (see :meth:`FactStore.search`): one snapshot,
        what did not change since the last search kept per generation
        (:mod:`.postgres_search`)."""
        floor = self.min_trust if min_trust is None else min_trust
        return self._read(lambda _: postgres_search.search(
            self._shared, self._cache, query, limit=limit, min_trust=floor, as_of=as_of))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pg.close()

    def __repr__(self) -> str:
        return f"PostgresFactStore({str(self.path)!r}, schema={self.schema!r})"

