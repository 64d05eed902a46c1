"""Tables, row-level security and connections for curated memory and the audit log on
PostgreSQL (``storage.backend: postgres``).

The tables live in the session store's schema (``memoryport`` by default) and their
migrations are recorded in its ``_migrations`` ledger under their own names
(``curated_audit_*``), applied by the shared runner under the same database-wide
advisory lock, so several hosts starting at once migrate once.

Row-level security follows the session store (its migration ``m009``): every table with
a ``user_id`` column has a ``user_scope`` policy keyed on the connection's
``memoryport.user_id`` setting. A connection scoped to user A sees and writes A's rows
and the rows that belong to no user (``user_id = ''``: shared agent notes, events of the
home); ``*`` (an unbound admin connection) sees every row; unset sees none.

``profile`` (the home's profile name) is part of every key, so several profiles share one
database without sharing memory.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from memoryport.errors import ConfigError, MigrationError
from memoryport.storage.postgres_ledger import SchemaLedger, ensure_ledger
from memoryport.storage.sessions import migrate as runner
from memoryport.storage.sessions.postgres.connect import CONNECT_TIMEOUT_S, check_connection
from memoryport.storage.sessions.postgres.migrations import SCOPE_SETTING

__all__ = ["MIGRATIONS", "POLICIES", "Database", "close_databases", "database", "migrate"]

T = TypeVar("T")
Cursor = psycopg.Cursor[Any]
Migration = Callable[[Cursor, sql.Identifier], None]

_SCOPE = f"current_setting('{SCOPE_SETTING}', true)"
_OWN_OR_SHARED = f"{_SCOPE} = '*' OR user_id = {_SCOPE} OR user_id = ''"

POLICIES = {
    "curated_targets": _OWN_OR_SHARED,
    "curated_history": _OWN_OR_SHARED,
    "curated_backups": _OWN_OR_SHARED,
    "audit_events": _OWN_OR_SHARED,
    "audit_held_syncs": _OWN_OR_SHARED,
}
"""Table -> the expression of its ``user_scope`` policy (checked by ``memoryport doctor``)."""

_TABLES = """
CREATE TABLE IF NOT EXISTS {s}.curated_targets(
    profile text NOT NULL, user_id text NOT NULL, target text NOT NULL,
    content text NOT NULL DEFAULT '', last_rev bigint NOT NULL DEFAULT 0,
    written_xid bigint NOT NULL DEFAULT 0, updated_at double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, user_id, target));
CREATE TABLE IF NOT EXISTS {s}.curated_history(
    profile text NOT NULL, user_id text NOT NULL, target text NOT NULL, rev bigint NOT NULL,
    ts double precision NOT NULL, action text NOT NULL, source text NOT NULL DEFAULT '',
    session_id text NOT NULL DEFAULT '', tool_call_id text NOT NULL DEFAULT '',
    by_user text NOT NULL DEFAULT '', before text NOT NULL, after text NOT NULL,
    changes text NOT NULL DEFAULT '[]', restored_from bigint,
    PRIMARY KEY (profile, user_id, target, rev));
CREATE TABLE IF NOT EXISTS {s}.curated_backups(
    id bigserial PRIMARY KEY, profile text NOT NULL, user_id text NOT NULL,
    target text NOT NULL, ts double precision NOT NULL, content text NOT NULL);
CREATE INDEX IF NOT EXISTS curated_backups_target ON {s}.curated_backups(profile, user_id, target);
CREATE TABLE IF NOT EXISTS {s}.audit_events(
    id bigserial PRIMARY KEY, profile text NOT NULL, ts double precision NOT NULL,
    shell text NOT NULL, kind text NOT NULL, action text NOT NULL,
    target text NOT NULL DEFAULT '', session_id text NOT NULL DEFAULT '',
    user_id text NOT NULL DEFAULT '', revision text NOT NULL DEFAULT '',
    detail text NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS audit_events_ts ON {s}.audit_events(profile, ts);
CREATE TABLE IF NOT EXISTS {s}.audit_meta(
    profile text NOT NULL, key text NOT NULL, value text NOT NULL, PRIMARY KEY (profile, key));
CREATE TABLE IF NOT EXISTS {s}.audit_held_syncs(
    id bigserial PRIMARY KEY, profile text NOT NULL, ts double precision NOT NULL,
    user_id text NOT NULL, session_id text NOT NULL, payload text NOT NULL);
CREATE INDEX IF NOT EXISTS audit_held_syncs_user ON {s}.audit_held_syncs(profile, user_id, id);
"""


def _tables(cur: Cursor, schema: sql.Identifier) -> None:
    """Curated targets, their history and drift backups; audit events, meta, held syncs."""
    for statement in filter(None, (part.strip() for part in _TABLES.split(";"))):
        cur.execute(sql.SQL(statement).format(s=schema))


def _row_security(cur: Cursor, schema: sql.Identifier) -> None:
    """The ``user_scope`` policies of :data:`POLICIES`, forced on the tables' owner too."""
    for table, expression in POLICIES.items():
        fmt = {"s": schema, "t": sql.Identifier(table)}
        cur.execute(sql.SQL("ALTER TABLE {s}.{t} ENABLE ROW LEVEL SECURITY").format(**fmt))
        cur.execute(sql.SQL("ALTER TABLE {s}.{t} FORCE ROW LEVEL SECURITY").format(**fmt))
        cur.execute(
            sql.SQL(f"CREATE POLICY user_scope ON {{s}}.{{t}} USING ({expression})").format(**fmt)
        )


MIGRATIONS: list[tuple[str, Migration]] = [
    ("curated_audit_001_tables", _tables),
    ("curated_audit_002_row_security", _row_security),
]
"""Append-only: never edit or reorder a released migration, add a new one at the end."""


def migrate(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Apply the pending curated/audit migrations to ``schema`` (``conn`` in autocommit)
    through the session store's ledger (:mod:`memoryport.storage.postgres_ledger`): the
    same ``_migrations`` table, advisory lock and statements, each migration run with
    every user's rows in scope."""
    ident = sql.Identifier(schema)
    ensure_ledger(conn, ident)
    return runner.migrate(MIGRATIONS, SchemaLedger(conn, ident, SCOPE_SETTING))


_TRIES = 5
LOCK_TIMEOUT_MS = 10_000
"""How long a writer waits for another host's writer of the same target, unless the
store says (``CuratedMemory(lock_timeout=...)``, as for the file lock)."""
POOL_TIMEOUT_S = 10.0
"""How long a call waits for a connection (a server that went away fails this fast)."""
_POOLS: dict[tuple[str, str], _Pool] = {}
_POOLS_LOCK = threading.Lock()


class _Pool:
    """One connection pool per (DSN, schema) in a process, shared by every user scope.

    Each connection remembers the scope and lock timeout it was last set to; a call for
    another user (or another ``lock_timeout``) sets ``memoryport.user_id`` and
    ``lock_timeout`` first (one extra round trip, only on a switch), so a server
    answering many users keeps a handful of connections, not one pool per user.
    """

    def __init__(self, dsn: str, schema: str, *, pool_size: int = 4) -> None:
        if not schema or "\x00" in schema:
            raise ConfigError(f"invalid PostgreSQL schema name {schema!r}")
        self.schema = schema
        self.ident = sql.Identifier(schema)
        self._scopes: WeakKeyDictionary[psycopg.Connection[Any], tuple[str, int]] = (
            WeakKeyDictionary())
        check_connection(dsn, CONNECT_TIMEOUT_S)
        self._pool: ConnectionPool[Any] = ConnectionPool(
            dsn, min_size=1, max_size=max(1, pool_size), timeout=POOL_TIMEOUT_S,
            kwargs={"application_name": "memoryport", "autocommit": True},
            configure=_configure, open=True, name=f"memoryport-curated-{schema}",
        )  # fmt: skip
        try:
            self._pool.wait(POOL_TIMEOUT_S)
            with self._pool.connection() as conn:
                migrate(conn, schema)
        except BaseException:
            self._pool.close()
            raise

    def _migrate(self, error: Callable[[str], Exception]) -> None:
        try:
            with self._pool.connection() as conn:
                migrate(conn, self.schema)
        except (psycopg.Error, PoolTimeout, MigrationError) as exc:
            raise error(f"cannot create the tables in schema {self.schema!r}: {exc}") from exc

    def _call(
        self, fn: Callable[[Cursor], T], scope: str, transaction: bool, lock_ms: int
    ) -> T:
        with self._pool.connection() as conn:
            if self._scopes.get(conn) != (scope, lock_ms):
                conn.execute("SELECT set_config(%s, %s, false),"
                             " set_config('lock_timeout', %s, false)",
                             (SCOPE_SETTING, scope, f"{lock_ms}ms"))
                self._scopes[conn] = (scope, lock_ms)
            if not transaction:
                with conn.cursor() as cur:
                    return fn(cur)
            with conn.transaction(), conn.cursor() as cur:
                return fn(cur)

    def run(
        self, fn: Callable[[Cursor], T], error: Callable[[str], Exception], scope: str,
        transaction: bool, lock_ms: int = LOCK_TIMEOUT_MS,
    ) -> T:  # fmt: skip
        """Run ``fn`` as ``scope``, waiting at most ``lock_ms`` for a row lock; see
        :meth:`Database.run`."""
        remigrated = False
        for attempt in range(_TRIES):
            try:
                return self._call(fn, scope, transaction, lock_ms)
            except (pg_errors.UndefinedTable, pg_errors.InvalidSchemaName) as exc:
                if remigrated:
                    raise error(f"PostgreSQL refused the statement: {exc}") from exc
                remigrated = True
                self._migrate(error)
            except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure) as exc:
                if attempt == _TRIES - 1:
                    raise error(f"PostgreSQL kept refusing the transaction: {exc}") from exc
                time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
            except pg_errors.LockNotAvailable as exc:
                raise error(
                    f"could not lock the target within {lock_ms / 1000:g}s: another writer "
                    "holds it. Nothing was written; retry shortly"
                ) from exc
            except (psycopg.OperationalError, PoolTimeout) as exc:
                raise error(
                    f"PostgreSQL is unavailable ({exc}). Nothing was written; check "
                    "storage.dsn and that the server is running"
                ) from exc
            except psycopg.Error as exc:
                raise error(f"PostgreSQL refused the statement: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise error(f"a value is not valid Unicode text ({exc})") from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the pool and drop it from the registry."""
        with _POOLS_LOCK:
            for key, value in list(_POOLS.items()):
                if value is self:
                    del _POOLS[key]
        self._pool.close()


def _configure(conn: psycopg.Connection[Any]) -> None:
    """A new pooled connection: the lock timeout; no user scope yet (it sees no rows)."""
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{LOCK_TIMEOUT_MS}ms",))


class Database:
    """The shared pool of one schema, seen as one user (row-level security scope).

    Every :meth:`run` is one transaction; deadlocks and dropped connections are retried.
    Errors surface as ``error(message)`` naming what failed and what to check.
    """

    def __init__(self, pool: _Pool, scope: str, lock_timeout: float | None = None) -> None:
        self._pool = pool
        self.scope = scope
        self.lock_ms = LOCK_TIMEOUT_MS if lock_timeout is None else max(
            1, round(lock_timeout * 1000))
        self.schema = pool.schema
        self.ident = pool.ident

    def q(self, text: str) -> sql.Composed:
        """``text`` with ``{s}`` formatted as this database's schema."""
        return sql.SQL(text).format(s=self.ident)

    def read(self, fn: Callable[[Cursor], T], error: Callable[[str], Exception]) -> T:
        """Run ``fn`` (one statement: it reads one consistent snapshot) without a
        transaction block, saving the ``BEGIN``/``COMMIT`` round trips of :meth:`run`."""
        return self._pool.run(fn, error, self.scope, False, self.lock_ms)

    def statement(self, fn: Callable[[Cursor], T], error: Callable[[str], Exception]) -> T:
        """Run ``fn``, a write that is one statement (atomic on its own, so it needs no
        ``BEGIN``/``COMMIT`` round trips); errors as in :meth:`run`."""
        return self._pool.run(fn, error, self.scope, False, self.lock_ms)

    def run(self, fn: Callable[[Cursor], T], error: Callable[[str], Exception]) -> T:
        """Run ``fn`` in one transaction; a failure raises ``error(message)``.

        A table that vanished (the schema was dropped while this process held it open)
        is created again by the migrations, once, and the transaction retried.
        """
        return self._pool.run(fn, error, self.scope, True, self.lock_ms)

    def close(self) -> None:
        """Close the shared pool (every scope of this DSN and schema)."""
        self._pool.close()


def database(dsn: str, schema: str, scope: str, lock_timeout: float | None = None
             ) -> Database:
    """``(dsn, schema)``'s process-wide pool (opened on first use), seen as ``scope``;
    a write waits at most ``lock_timeout`` seconds for another writer's row lock
    (:data:`LOCK_TIMEOUT_MS` when None)."""
    key = (dsn, schema)
    with _POOLS_LOCK:
        found = _POOLS.get(key)
        if found is None:
            found = _POOLS[key] = _Pool(dsn, schema)
    return Database(found, scope, lock_timeout)


def close_databases(schema: str | None = None) -> int:
    """Close the shared pools of ``schema`` (every one when None); return how many."""
    with _POOLS_LOCK:
        chosen = [pool for pool in _POOLS.values() if schema is None or pool.schema == schema]
    for pool in chosen:
        pool.close()
    return len(chosen)
