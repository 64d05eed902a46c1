"""The PostgreSQL side of the shared migration runner (:mod:`.sessions.migrate`).

A schema's applied migrations are recorded in ``<schema>._migrations``. Several machines
may open the same store at once, so every migration transaction first takes one
database-wide advisory lock (:data:`LOCK_KEY`) and re-reads ``_migrations`` under it: the
first process migrates, the others wait and then find nothing to do. A step is called as
``step(cursor, schema)`` inside that transaction; a PostgreSQL error in it rolls the
transaction back and raises ``MigrationError``.

Moved out of the session store's ``migrations`` module (which keeps the migrations
themselves); the statements it sends are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from memoryport.errors import MigrationError
from memoryport.storage.sessions import migrate as runner

__all__ = ["LEDGER_TABLE", "LOCK_KEY", "SchemaLedger", "ensure_ledger", "recorded"]

Cursor = psycopg.Cursor[Any]
Step = Callable[[Cursor, sql.Identifier], None]

LOCK_KEY = 0x6D656D706F7274  # "memport": one advisory lock for all memoryport migrations
"""The advisory lock every migration transaction of every memoryport schema takes."""


LEDGER_TABLE = "_migrations"
"""The session store's and curated memory's ledger table; the turn index and the fact
store keep their own (``table=``)."""


def ensure_ledger(conn: psycopg.Connection[Any], schema: sql.Identifier,
                  table: str = LEDGER_TABLE) -> None:
    """Create the schema and its ledger ``table`` unless present (a role without
    ``CREATE`` on the database can open a store that is already set up)."""
    ledger = sql.SQL("{s}.{t}").format(s=schema, t=sql.Identifier(table)).as_string(conn)
    if conn.execute("SELECT to_regclass(%s)", (ledger,)).fetchone() not in (None, (None,)):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {s}").format(s=schema))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {s}.{t} "
                "(name text PRIMARY KEY, applied_at double precision NOT NULL)"
            ).format(s=schema, t=sql.Identifier(table))
        )


class SchemaLedger:
    """A runner ``Ledger`` for ``schema`` on ``conn`` (autocommit): an advisory lock per
    transaction; ``scope_setting``, when given, is set to ``*`` (every user's rows) for
    the transaction, so steps see and rewrite rows under row-level security."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        schema: sql.Identifier,
        scope_setting: str | None = None,
        table: str = LEDGER_TABLE,
    ) -> None:
        self._conn = conn
        self._schema = schema
        self._scope = scope_setting
        self._table = sql.SQL("{s}.{t}").format(s=schema, t=sql.Identifier(table))
        self._cur: Cursor | None = None

    def done(self) -> set[str]:
        """Names recorded in the ledger table."""
        rows = self._conn.execute(sql.SQL("SELECT name FROM {}").format(self._table))
        return {row[0] for row in rows}

    @contextmanager
    def transaction(self, name: str) -> Iterator[None]:
        """One transaction holding :data:`LOCK_KEY` (see the runner's ``Ledger``)."""
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                if self._scope is not None:
                    cur.execute("SELECT set_config(%s, '*', true)", (self._scope,))
                self._cur = cur
                yield
        except psycopg.Error as exc:
            raise runner.failed(name, exc) from exc
        finally:
            self._cur = None

    def _cursor(self) -> Cursor:
        if self._cur is None:
            raise MigrationError("a migration step ran outside its transaction")
        return self._cur

    def run(self, step: Step) -> None:
        """Run ``step(cursor, schema)`` in the open transaction."""
        step(self._cursor(), self._schema)

    def record(self, name: str, applied_at: float) -> None:
        """Record ``name`` in the ledger table in the open transaction."""
        self._cursor().execute(
            sql.SQL("INSERT INTO {}(name, applied_at) VALUES (%s, %s)").format(self._table),
            (name, applied_at),
        )


def recorded(conn: psycopg.Connection[Any], schema: str) -> set[str]:
    """Names in ``schema``'s ``_migrations`` (created first if missing)."""
    ident = sql.Identifier(schema)
    ensure_ledger(conn, ident)
    with conn.transaction():
        return SchemaLedger(conn, ident).done()
