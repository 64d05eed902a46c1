"""The SQLite side of the shared migration runner (:mod:`.sessions.migrate`).

One ledger table per component (the session store's ``_migrations``, the fact store's
``_migrations_facts``, the turn index's ``_turns_migrations``; the last two share one
database file), each read and written the same way: ``BEGIN IMMEDIATE`` is the migration
lock, the table is created inside that transaction, a step's SQLite error rolls it back
and raises ``MigrationError``. A busy lock on ``BEGIN IMMEDIATE`` propagates as
``sqlite3.OperationalError`` (for the caller's retry loop or error message).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memoryport.storage.sessions import migrate as runner

__all__ = ["ConnLedger", "SQLiteLedger"]


class SQLiteLedger:
    """Reads and records applied migrations in ``table`` on ``conn``; a component adds
    ``run(step)`` (how one of its steps is called) to make it a runner ``Ledger``."""

    def __init__(self, conn: sqlite3.Connection, table: str) -> None:
        if not table.replace("_", "").isalnum():
            raise ValueError(f"ledger table name must be letters, digits and _: {table!r}")
        self._conn = conn
        self._table = table

    def done(self) -> set[str]:
        """Names recorded in the ledger table (empty when it does not exist yet)."""
        try:
            return {row[0] for row in self._conn.execute(f"SELECT name FROM {self._table}")}
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return set()
            raise

    @contextmanager
    def transaction(self, name: str) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction with the ledger table present."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # busy errors propagate to the caller
        try:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._table}"
                " (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            yield
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise runner.failed(name, exc) from exc
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def record(self, name: str, applied_at: float) -> None:
        """Record ``name`` as applied inside the open transaction."""
        self._conn.execute(
            f"INSERT INTO {self._table}(name, applied_at) VALUES (?, ?)", (name, applied_at)
        )


class ConnLedger(SQLiteLedger):
    """A ledger whose steps take the connection itself (the fact store, the turn index)."""

    def run(self, step: Callable[[sqlite3.Connection], None]) -> None:
        """Run one migration step inside the open transaction."""
        step(self._conn)
