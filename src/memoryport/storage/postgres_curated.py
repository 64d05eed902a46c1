"""Curated memory (``MEMORY.md``/``USER.md``) as rows in PostgreSQL.

One ``curated_targets`` row per (profile, owner, target) holds the target's text in the
same ``§``-delimited format as the file; ``curated_history`` holds one row per revision
with the same fields as the JSON-lines log. :class:`PostgresCuratedBackend` implements
:class:`~memoryport.storage.curated_targets.CuratedBackend`, so ``CuratedMemory`` keeps
every behaviour of the file version: budgets, scan, atomic all-or-nothing batches, the
history with provenance (``memory history``/``restore``/``why``) and the frozen snapshot.

Concurrency: a write is one transaction that locks the target's row (``SELECT … FOR
UPDATE``), runs the change on the text it read, inserts the revision and updates the row.
Writers on any number of hosts are serialised per target and user; nothing is half-written
(the revision and the text commit together, so every revision is ``applied``).

Drift guard with a row version instead of a file hash: each write stores its transaction
id in ``written_xid``; PostgreSQL's ``xmin`` of the row is the id of the last transaction
that changed it. When they differ, someone changed the text outside memoryport (``psql``):
the next write records that change as an ``external`` revision first, as the file version
does for a hand edit. Text that would not survive a rewrite is backed up to
``curated_backups`` (once per content) and the write refused (``DriftError``), except for
removals.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from memoryport.errors import DriftError, MemoryStoreError
from memoryport.storage.curated_targets import RevisionLog, TargetFile, TargetPlace
from memoryport.storage.history import HistoryLog, Provenance, Revision
from memoryport.storage.markdown import (
    FileState,
    RevisionNote,
    drift_reason,
    entry_problem,
    parse_entries,
    render_entries,
)
from memoryport.storage.postgres_curated_schema import Cursor, Database, database

__all__ = ["PostgresCuratedBackend"]

_T = TypeVar("_T")
_PRUNE_EVERY = 100
_XID = "pg_current_xact_id()::text::bigint %% 4294967296"
_KEY = "profile = %s AND user_id = %s AND target = %s"
_HISTORY_COLUMNS = (
    "rev, ts, action, source, session_id, tool_call_id, by_user, before, after, changes, "
    "restored_from"
)


class PostgresCuratedBackend:
    """Curated targets in the ``curated_*`` tables of a PostgreSQL schema.

    Args:
        dsn: libpq connection string or URI (``storage.dsn``).
        schema: the schema (the session store's, ``memoryport`` by default).
        profile: the home's profile name; part of every row's key.
    """

    def __init__(self, dsn: str, *, schema: str = "memoryport", profile: str = "default") -> None:
        self.dsn = dsn
        self.schema = schema
        self.profile = profile

    def __repr__(self) -> str:
        return f"PostgresCuratedBackend(schema={self.schema!r}, profile={self.profile!r})"

    def location(self, owner: str, target: str) -> str:
        """Where ``owner``'s ``target`` lives, for people (``memory list``): server and
        database (never the password), table, profile, owner and target."""
        from memoryport.storage.sessions.postgres.connect import describe_dsn

        who = f"user {owner}" if owner else "shared"
        return (f"postgresql://{describe_dsn(self.dsn)} ({self.schema}.curated_targets,"
                f" profile {self.profile}, {who}, target {target})")

    def dump(self) -> list[tuple[str, str, str, list[Revision]]]:
        """Every target of this profile, all users (an unscoped ``*`` connection):
        ``(owner, target, text, revisions oldest first)``, for ``memoryport export``."""
        db = database(self.dsn, self.schema, "*")
        targets = db.q("SELECT user_id, target, content FROM {s}.curated_targets "
                       "WHERE profile = %s ORDER BY user_id, target")  # fmt: skip
        history = db.q(f"SELECT user_id, target, {_HISTORY_COLUMNS} FROM {{s}}.curated_history "
                       "WHERE profile = %s ORDER BY user_id, target, rev")  # fmt: skip

        def work(cur: Cursor) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
            rows = cur.execute(targets, (self.profile,)).fetchall()
            return rows, cur.execute(history, (self.profile,)).fetchall()

        rows, revisions = db.run(work, _error)
        kept: dict[tuple[str, str], list[Revision]] = {}
        for row in revisions:
            kept.setdefault((row[0], row[1]), []).append(_revision(row[2:]))
        return [(owner, target, text, kept.get((owner, target), []))
                for owner, target, text in rows]  # fmt: skip

    def load(self, owner: str, target: str, text: str, revisions: Sequence[Revision]) -> bool:
        """Store one target copied from files: its text and its revisions as they are
        (numbers, times, provenance), in one transaction. False (nothing written) when
        the database already holds that target or any revision of it."""
        db = database(self.dsn, self.schema, "*")
        key = (self.profile, owner, target)
        probe = db.q(f"SELECT 1 FROM {{s}}.curated_targets WHERE {_KEY} UNION ALL "
                     f"SELECT 1 FROM {{s}}.curated_history WHERE {_KEY} LIMIT 1")  # fmt: skip
        create = db.q("INSERT INTO {s}.curated_targets(profile, user_id, target, content, "
                      f"last_rev, written_xid, updated_at) VALUES (%s,%s,%s,%s,%s,{_XID},%s)")
        insert = db.q(PgHistory.INSERT)

        def work(cur: Cursor) -> bool:
            if cur.execute(probe, (*key, *key)).fetchone() is not None:
                return False
            last = max((r.rev for r in revisions), default=0)
            cur.execute(create, (*key, text, last, time.time()))
            cur.executemany(insert, [_row(key, r) for r in revisions])
            return True

        return db.run(work, _error)

    def open_target(self, place: TargetPlace) -> tuple[TargetFile, RevisionLog]:
        """The row of ``place``'s target and its history, on a connection scoped to
        ``place.scope`` (row-level security)."""
        db = database(self.dsn, self.schema, place.scope, place.lock_timeout)
        key = (self.profile, place.owner, place.target)
        history = PgHistory(db, key, HistoryLog.beside(place.path).path, place)
        return PgTarget(db, key, place, history), history


@dataclass(frozen=True)
class _Refused:
    """A drift refusal raised after its transaction committed the backup."""

    error: DriftError


def _error(message: str) -> MemoryStoreError:
    return MemoryStoreError(f"Curated memory on PostgreSQL: {message}.")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


class PgHistory:
    """One target's revisions in ``curated_history`` (the :class:`RevisionLog` protocol)."""

    def __init__(
        self, db: Database, key: tuple[str, str, str], path: Path, place: TargetPlace
    ) -> None:
        self._db = db
        self._key = key
        self._path = path
        self.max_age_days = place.max_age_days
        self.max_revisions = place.max_revisions

    @property
    def path(self) -> Path:
        """Where ``memoryport export`` writes this history as JSON lines."""
        return self._path

    def revisions(self) -> list[Revision]:
        """Every kept revision, oldest first."""
        query = self._db.q(f"SELECT {_HISTORY_COLUMNS} FROM {{s}}.curated_history "
                           f"WHERE {_KEY} ORDER BY rev")  # fmt: skip
        rows = self._db.read(lambda cur: cur.execute(query, self._key).fetchall(), _error)
        return [_revision(row) for row in rows]

    def latest_rev(self) -> int | None:
        """The number of the last revision, or None."""
        query = self._db.q(f"SELECT max(rev) FROM {{s}}.curated_history WHERE {_KEY}")
        row = self._db.read(lambda cur: cur.execute(query, self._key).fetchone(), _error)
        return None if row is None or row[0] is None else int(row[0])

    def get(self, rev: int) -> Revision:
        """Revision ``rev``; ``MemoryStoreError`` naming the range kept when unknown."""
        query = self._db.q(f"SELECT {_HISTORY_COLUMNS} FROM {{s}}.curated_history "
                           f"WHERE {_KEY} AND rev = %s")  # fmt: skip
        row = self._db.read(lambda cur: cur.execute(query, (*self._key, rev)).fetchone(), _error)
        if row is not None:
            return _revision(row)
        bounds = self._db.q(f"SELECT min(rev), max(rev) FROM {{s}}.curated_history WHERE {_KEY}")
        found = self._db.read(lambda cur: cur.execute(bounds, self._key).fetchone(), _error)
        low, high = found or (None, None)
        kept = f"revisions {low}-{high}" if low is not None else "none"
        raise MemoryStoreError(
            f"No revision {rev} in the history of {self._path.name.removesuffix('.jsonl')} "
            f"(kept: {kept}); nothing was changed. "
            "List them with `memoryport memory history`."
        )

    INSERT = (f"INSERT INTO {{s}}.curated_history(profile, user_id, target, {_HISTORY_COLUMNS}) "
              "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)")  # fmt: skip
    """The statement recording one revision; :meth:`values` gives its parameters."""

    def values(self, rev: int, raw: str, after: str, note: RevisionNote) -> tuple[Any, ...]:
        """The parameters of :data:`INSERT` for revision ``rev``."""
        origin = note.provenance
        changes = json.dumps(list(note.changes), ensure_ascii=False)
        return (*self._key, rev, time.time(), note.action, origin.source, origin.session_id,
                origin.tool_call_id, origin.user_id, raw, after, changes,
                note.restored_from)  # fmt: skip

    def record(self, cur: Cursor, rev: int, raw: str, after: str, note: RevisionNote) -> None:
        """Insert revision ``rev`` (inside the writer's transaction)."""
        cur.execute(self._db.q(self.INSERT), self.values(rev, raw, after, note))

    def last_after(self, cur: Cursor, rev: int) -> str | None:
        """The text revision ``rev`` left (None when it is not kept)."""
        query = self._db.q(f"SELECT after FROM {{s}}.curated_history WHERE {_KEY} AND rev = %s")
        row = cur.execute(query, (*self._key, rev)).fetchone()
        return None if row is None else str(row[0])

    def prune(self, cur: Cursor, last_rev: int) -> None:
        """Drop revisions older than the retention that are not among the last ones kept."""
        cutoff = time.time() - self.max_age_days * 86400
        cur.execute(
            self._db.q(f"DELETE FROM {{s}}.curated_history WHERE {_KEY} AND rev <= %s "
                       "AND ts < %s"),
            (*self._key, last_rev - self.max_revisions, cutoff),
        )  # fmt: skip


def _row(key: tuple[str, str, str], r: Revision) -> tuple[Any, ...]:
    """The ``PgHistory.INSERT`` parameters of a revision kept as it is."""
    origin = r.provenance
    return (*key, r.rev, r.ts, r.action, origin.source, origin.session_id, origin.tool_call_id,
            origin.user_id, r.before, r.after, json.dumps(list(r.changes), ensure_ascii=False),
            r.restored_from)  # fmt: skip


def _revision(row: Sequence[Any]) -> Revision:
    rev, ts, action, source, session_id, tool_call_id, by_user, before, after, changes, restored = (
        row
    )
    return Revision(
        rev=int(rev), at=_iso(float(ts)), ts=float(ts), action=str(action),
        provenance=Provenance(source, session_id, tool_call_id, by_user),
        before=str(before), after=str(after),
        changes=tuple(dict(c) for c in json.loads(changes)),
        restored_from=None if restored is None else int(restored),
    )  # fmt: skip


class PgTarget:
    """One target's text in ``curated_targets`` (the :class:`TargetFile` protocol)."""

    def __init__(
        self, db: Database, key: tuple[str, str, str], place: TargetPlace, history: PgHistory
    ) -> None:
        self._db = db
        self._key = key
        self._place = place
        self._history = history if place.history else None
        self.char_limit = place.char_limit
        self._select = db.q(f"SELECT content FROM {{s}}.curated_targets WHERE {_KEY}")
        self._lock = db.q(
            "SELECT content, last_rev, written_xid, xmin::text::bigint "
            f"FROM {{s}}.curated_targets WHERE {_KEY} FOR UPDATE"
        )
        self._create = db.q(
            "INSERT INTO {s}.curated_targets(profile, user_id, target, written_xid, updated_at) "
            f"VALUES (%s, %s, %s, {_XID}, %s) ON CONFLICT DO NOTHING"
        )
        update = (
            f"UPDATE {{s}}.curated_targets SET content = %s, last_rev = %s, written_xid = {_XID},"
            f" updated_at = %s WHERE {_KEY}"
        )
        self._update = db.q(update)
        # the revision and the new text in one statement: one round trip per write
        self._logged_update = db.q(
            f"WITH revision AS ({PgHistory.INSERT}) {update} RETURNING xmin::text::bigint")
        # the same, on the row as this object last wrote it (its version, xmin), as one
        # statement outside any transaction block; no row when anyone changed it since
        self._fast_update = db.q(
            f"WITH u AS ({update} AND xmin::text::bigint = %s RETURNING xmin::text::bigint"
            f" AS v), h AS (INSERT INTO {{s}}.curated_history(profile, user_id, target,"
            f" {_HISTORY_COLUMNS}) SELECT %s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s FROM u)"
            " SELECT v FROM u")
        self._version: tuple[str, int, int] | None = None  # (text, last_rev, xmin) written
        self._written: tuple[str, int, int] | None = None  # what the locked path wrote

    def __repr__(self) -> str:
        return f"PgTarget({self._db.schema!r}, {self._key!r})"

    @property
    def path(self) -> Path:
        """Where ``memoryport export`` writes this target as a file."""
        return self._place.path

    def read_raw(self) -> str:
        """The stored text (``""`` before the first write)."""
        row = self._db.read(lambda cur: cur.execute(self._select, self._key).fetchone(), _error)
        return "" if row is None else str(row[0])

    def read_entries(self) -> list[str]:
        """The parsed entries of the stored text."""
        return parse_entries(self.read_raw())

    def drift_reason(self, raw: str, entries: Sequence[str] | None = None) -> str | None:
        """Why ``raw`` would lose data if rewritten (same rules as ``MarkdownFile``)."""
        return drift_reason(raw, self.char_limit, entries)

    def mutate(
        self,
        change: Callable[[FileState], tuple[list[str] | None, _T]],
        *,
        allow_drift: bool = False,
        describe: Callable[[_T], RevisionNote] | None = None,
    ) -> _T:
        """Run ``change`` on the row's text under its row lock and commit the new text
        with its revision in one transaction (see the module docstring).

        When this object wrote the row last, the change is first tried on the text it
        wrote, as one statement that lands only if the row is still that version (its
        ``xmin``): one round trip, serialised by the row lock that statement takes. If
        anyone wrote in between (or the change writes nothing or fails on that text),
        nothing lands and the change runs again under the row lock as above."""
        fast = self._try_fast(change, describe)
        if fast is not None:
            return fast[0]

        def work(cur: Cursor) -> _T | _Refused:
            return self._mutate(cur, change, allow_drift, describe)

        self._version = self._written = None
        outcome = self._db.run(work, _error)
        if isinstance(outcome, _Refused):
            raise outcome.error
        self._version = self._written
        return outcome

    def _try_fast(
        self,
        change: Callable[[FileState], tuple[list[str] | None, _T]],
        describe: Callable[[_T], RevisionNote] | None,
    ) -> tuple[_T] | None:
        """``(value,)`` when the one-statement write landed, else None (nothing written)."""
        known = self._version
        if known is None or self._history is None or (known[1] + 1) % _PRUNE_EVERY == 0:
            return None
        raw, last_rev, version = known
        entries = parse_entries(raw)
        try:
            if self.drift_reason(raw, entries) is not None:
                return None
            new_entries, value = change(FileState(raw, list(entries)))
            if new_entries is None:
                return None
            after = self._render(new_entries, frozenset(entries))
        except Exception:  # decided on the text as this object wrote it: ask the row
            return None
        rev = last_rev + 1
        note = describe(value) if describe else RevisionNote("write", Provenance())
        params = (after, rev, time.time(), *self._key, version,
                  *self._history.values(rev, raw, after, note))
        row = self._db.statement(lambda cur: cur.execute(self._fast_update, params).fetchone(),
                                 _error)
        if row is None:
            self._version = None
            return None
        self._version = (after, rev, int(row[0]))
        return (value,)

    def _locked_row(self, cur: Cursor) -> tuple[str, int, bool]:
        """``(text, last revision, changed outside memoryport)`` under the row lock."""
        row = cur.execute(self._lock, self._key).fetchone()
        if row is None:
            cur.execute(self._create, (*self._key, time.time()))
            row = cur.execute(self._lock, self._key).fetchone()
        if row is None:
            raise _error(f"the row of {self._place.target!r} is not visible to this connection")
        content, last_rev, written, version = row
        return str(content), int(last_rev), int(written) != int(version)

    def _mutate(
        self,
        cur: Cursor,
        change: Callable[[FileState], tuple[list[str] | None, _T]],
        allow_drift: bool,
        describe: Callable[[_T], RevisionNote] | None,
    ) -> _T | _Refused:
        raw, last_rev, external = self._locked_row(cur)
        entries = parse_entries(raw)
        reason = self.drift_reason(raw, entries)
        backup: str | None = None
        if reason is not None:
            backup = self._backup(cur, raw)
            if not allow_drift:
                return _Refused(self._drift_error(reason, backup))
        new_entries, value = change(FileState(raw, list(entries), drift_backup=backup))
        if new_entries is None:
            return value
        after = self._render(new_entries, frozenset(entries) if reason is None else frozenset())
        if self._history is None:
            cur.execute(self._update, (after, last_rev, time.time(), *self._key))
            return value
        rev = (self._external(cur, last_rev, raw) if external else last_rev) + 1
        note = describe(value) if describe else RevisionNote("write", Provenance())
        revision = self._history.values(rev, raw, after, note)
        row = cur.execute(self._logged_update,
                          (*revision, after, rev, time.time(), *self._key)).fetchone()
        if rev % _PRUNE_EVERY == 0:
            self._history.prune(cur, rev)
        self._written = None if row is None else (after, rev, int(row[0]))
        return value

    def _external(self, cur: Cursor, rev: int, raw: str) -> int:
        """Record the text found (changed outside memoryport) as an ``external`` revision
        after ``rev``, unless the last revision already left it; the last revision's number."""
        assert self._history is not None
        last = self._history.last_after(cur, rev) if rev else None
        if (last or "").strip() == raw.strip():
            return rev
        note = RevisionNote("external", Provenance(source="external"))
        self._history.record(cur, rev + 1, last or "", raw, note)
        return rev + 1

    def _render(self, entries: Sequence[str], known_good: frozenset[str]) -> str:
        name = self._place.path.name
        for entry in entries:
            if entry in known_good:
                continue
            problem = entry_problem(entry)
            if problem is not None:
                raise MemoryStoreError(f"Refusing to write {name}: {problem}.")
        text = render_entries(entries)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryStoreError(
                f"Refusing to write {name}: an entry is not valid UTF-8 text ({exc})."
            ) from exc
        return text

    def _backup(self, cur: Cursor, raw: str) -> str:
        """The backup row holding exactly ``raw`` (an existing one, else a new one)."""
        found = cur.execute(
            self._db.q(f"SELECT id FROM {{s}}.curated_backups WHERE {_KEY} AND content = %s"),
            (*self._key, raw),
        ).fetchone()
        if found is None:
            found = cur.execute(
                self._db.q("INSERT INTO {s}.curated_backups(profile, user_id, target, ts, "
                           "content) VALUES (%s, %s, %s, %s, %s) RETURNING id"),
                (*self._key, time.time(), raw),
            ).fetchone()  # fmt: skip
        assert found is not None
        return f"{self._db.schema}.curated_backups row {found[0]} (PostgreSQL)"

    def _drift_error(self, reason: str, backup: str) -> DriftError:
        name = self._place.path.name
        remediation = self._place.drift_hint or (
            f"Split the text of {name} into entries of at most {self.char_limit:,} chars each "
            "and remove duplicates (`memoryport memory edit`). Removing an entry always works."
        )
        message = (
            f"Refusing to write {name}: its text in PostgreSQL was changed by another program "
            f"and {reason}. Writing now would lose that text. A copy is saved in {backup}."
        )
        return DriftError(message, drift_backup=backup, remediation=remediation)
