"""The one schema-migration runner both session store backends use.

A backend defines its migrations as an ordered list of ``(name, step)`` pairs (named,
append-only: never edit or reorder a released one, add a new one at the end) and a
:class:`Ledger`: how to read the ``_migrations`` table, open one locked transaction,
run a step and record its name. :func:`migrate` does the rest, the same way for both:

* a store already up to date takes no lock (read-only stores open too);
* each pending migration runs in its own transaction together with its record, under
  the backend's migration lock, and is re-checked under that lock, so when several
  processes open a fresh store at once the first applies it and the others find it done;
* a failure rolls that one migration back and raises ``MigrationError`` (the ledger's
  transaction translates the engine's error), leaving the store at the last good one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from memoryport.errors import MigrationError

__all__ = ["Ledger", "applied", "failed", "migrate", "pending"]

Step = TypeVar("Step")
StepT_contra = TypeVar("StepT_contra", contravariant=True)


class Ledger(Protocol[StepT_contra]):
    """What a backend gives the runner (one per connection and migration run)."""

    def done(self) -> set[str]:
        """Names recorded in ``_migrations`` (empty when the table does not exist)."""
        ...

    def transaction(self, name: str) -> AbstractContextManager[None]:
        """One transaction holding the migration lock, with ``_migrations`` present.

        Commits when the block ends; rolls back and raises ``MigrationError`` (see
        :func:`failed`) when the engine fails inside it.
        """
        ...

    def run(self, step: StepT_contra) -> None:
        """Run one migration step inside the open transaction."""
        ...

    def record(self, name: str, applied_at: float) -> None:
        """Record ``name`` as applied inside the open transaction."""
        ...


def failed(name: str, error: BaseException) -> MigrationError:
    """The error a failed migration raises (the caller chains ``error``)."""
    return MigrationError(f"migration {name} failed: {error}")


def applied(migrations: Sequence[tuple[str, Step]], done: set[str]) -> list[str]:
    """Names of the applied migrations, in the order they are defined."""
    return [name for name, _ in migrations if name in done]


def pending(migrations: Sequence[tuple[str, Step]], done: set[str]) -> list[str]:
    """Names of the migrations not yet applied, in order."""
    return [name for name, _ in migrations if name not in done]


def migrate(
    migrations: Sequence[tuple[str, Step]],
    ledger: Ledger[Step],
    *,
    stop_before: str | None = None,
) -> list[str]:
    """Apply the pending migrations (optionally stopping before one); return their names."""
    wanted = [name for name, _ in migrations]
    if stop_before in wanted:
        wanted = wanted[: wanted.index(stop_before)]
    if not set(wanted) - ledger.done():
        return []  # up to date: no lock taken
    ran: list[str] = []
    for name, step in migrations:
        if name not in wanted:
            break
        with ledger.transaction(name):
            if name in ledger.done():
                continue
            ledger.run(step)
            ledger.record(name, time.time())
        ran.append(name)
    return ran
