"""The audit log in PostgreSQL (``storage.backend: postgres``): the same API as
:class:`~memoryport.storage.audit.AuditLog`, rows in ``audit_events``, ``audit_meta`` and
``audit_held_syncs`` of the session store's schema, keyed by the home's profile.

Every host writing to one database shares one audit trail. Row-level security (see
:mod:`memoryport.storage.postgres_curated_schema`): a log opened for one user sees only
that user's events and held syncs (and those of no user); the admin log (``user_id``
None, the default) sees every row. Held syncs are claimed with ``DELETE … RETURNING`` in
one transaction, so each is delivered once whichever host claims it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memoryport.errors import StoreError
from memoryport.storage.audit import (
    DEFAULT_RETENTION_DAYS,
    PRUNE_EVERY,
    AuditEvent,
    AuditLog,
    HeldSync,
)
from memoryport.storage.postgres_curated_schema import Cursor, database
from memoryport.types import valid_text

__all__ = ["PostgresAuditLog"]

_COLUMNS = "id, ts, shell, kind, action, target, session_id, user_id, revision, detail"


def _error(message: str) -> StoreError:
    return StoreError(f"audit log on PostgreSQL: {message}")


class PostgresAuditLog(AuditLog):
    """The audit log of one profile in a PostgreSQL schema (thread-safe, shared by hosts).

    Args:
        dsn: libpq connection string or URI (``storage.dsn``).
        schema: the schema (the session store's, ``memoryport`` by default).
        profile: the home's profile name; part of every row.
        user_id: scope the connection to one user (row-level security); None: every user.
        path: the home's ``audit.db`` path, kept for messages only.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "memoryport",
        profile: str = "default",
        user_id: str | None = None,
        path: Path | None = None,
    ) -> None:
        self.path = path or Path(f"postgresql:{schema}.audit_events")
        self.profile = profile
        self._db = database(dsn, schema, "*" if user_id is None else user_id)
        self._appends = 0
        self.prune()

    def __repr__(self) -> str:
        return f"PostgresAuditLog(schema={self._db.schema!r}, profile={self.profile!r})"

    def close(self) -> None:
        """Nothing to close per log: the pool is shared by the process (see ``database``)."""

    def _rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        composed = self._db.q(query)

        def work(cur: Cursor) -> list[tuple[Any, ...]]:
            cur.execute(composed, params)
            return cur.fetchall() if cur.description is not None else []

        return self._db.read(work, _error)  # one statement: atomic without BEGIN/COMMIT

    # ------------------------------------------------------------------ events
    def append(self, *, shell: str, kind: str, action: str, target: str = "",
               session_id: str = "", user_id: str = "", revision: str = "",
               detail: str = "", ts: float | None = None) -> int:
        """Record one event (one autocommitted insert); return its id."""
        texts = [valid_text(str(v)) for v in (shell, kind, action, target, session_id,
                                              user_id, revision, detail)]
        rows = self._rows(
            f"INSERT INTO {{s}}.audit_events(profile, {_COLUMNS.removeprefix('id, ')}) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id",
            (self.profile, time.time() if ts is None else ts, *texts),
        )
        self._appends += 1
        if self._appends % PRUNE_EVERY == 0:
            self.prune()
        return int(rows[0][0])

    def events(self, *, since: float | None = None, shell: str | None = None,
               kind: str | None = None, action: str | None = None, limit: int = 100,
               offset: int = 0) -> list[AuditEvent]:
        """Events newest first, filtered by time (``ts >= since``), shell, kind, action."""
        where, params = ["profile = %s"], [self.profile]
        for column, value in (("ts >=", since), ("shell =", shell), ("kind =", kind),
                              ("action =", action)):
            if value is not None and value != "":
                where.append(f"{column} %s")
                params.append(value)  # type: ignore[arg-type]
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM {{s}}.audit_events WHERE {' AND '.join(where)} "
            "ORDER BY ts DESC, id DESC LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        return [AuditEvent(*row) for row in rows]

    def count(self) -> int:
        """How many events are kept."""
        return int(self._rows("SELECT count(*) FROM {s}.audit_events WHERE profile = %s",
                              (self.profile,))[0][0])  # fmt: skip

    # ------------------------------------------------------------------ retention
    def retention_days(self) -> int:
        """Days events are kept (0: forever)."""
        rows = self._rows("SELECT value FROM {s}.audit_meta WHERE profile = %s "
                          "AND key = 'retention_days'", (self.profile,))  # fmt: skip
        return int(rows[0][0]) if rows else DEFAULT_RETENTION_DAYS

    def set_retention_days(self, days: int) -> int:
        """Keep events ``days`` days (0: forever); prune now; return the events removed."""
        if days < 0:
            raise ValueError(f"retention must be 0 (keep forever) or more days, not {days}")
        self._rows("INSERT INTO {s}.audit_meta(profile, key, value) VALUES "
                   "(%s, 'retention_days', %s) ON CONFLICT (profile, key) DO UPDATE "
                   "SET value = excluded.value", (self.profile, str(days)))  # fmt: skip
        return self.prune()

    def prune(self, now: float | None = None) -> int:
        """Delete events older than the retention; return how many."""
        days = self.retention_days()
        if days <= 0:
            return 0
        cutoff = (time.time() if now is None else now) - days * 86_400
        return len(self._rows("DELETE FROM {s}.audit_events WHERE profile = %s AND ts < %s "
                              "RETURNING id", (self.profile, cutoff)))  # fmt: skip

    # ------------------------------------------------------------------ held syncs
    def hold(self, user_id: str, session_id: str, payload: dict[str, Any]) -> int:
        """Keep one turn's sync for later; return its id."""
        text = json.dumps(payload, ensure_ascii=False, default=str)
        rows = self._rows(
            "INSERT INTO {s}.audit_held_syncs(profile, ts, user_id, session_id, payload) "
            "VALUES (%s, %s, %s, %s, %s) RETURNING id",
            (self.profile, time.time(), user_id, session_id, text),
        )
        return int(rows[0][0])

    def held_count(self) -> int:
        """How many syncs are held."""
        return int(self._rows("SELECT count(*) FROM {s}.audit_held_syncs WHERE profile = %s",
                              (self.profile,))[0][0])  # fmt: skip

    def has_held(self, user_id: str) -> bool:
        """True when a sync is held for ``user_id``."""
        return bool(self._rows("SELECT 1 FROM {s}.audit_held_syncs WHERE profile = %s "
                               "AND user_id = %s LIMIT 1", (self.profile, user_id)))  # fmt: skip

    def claim_held(self, user_id: str) -> list[HeldSync]:
        """Take (delete and return, oldest first, one transaction) the syncs held for
        ``user_id``: a concurrent claimer on any host gets none of them."""
        rows = self._rows(
            "DELETE FROM {s}.audit_held_syncs WHERE profile = %s AND user_id = %s "
            "RETURNING id, ts, user_id, session_id, payload",
            (self.profile, user_id),
        )
        held = [HeldSync(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]
        return sorted(held, key=lambda h: h.id)
