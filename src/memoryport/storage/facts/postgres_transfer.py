"""Fact-store rows in and out of a PostgreSQL schema, for ``memoryport storage copy`` and
``memoryport export``/``import`` on a PostgreSQL home.

The rows are the portable ones (the archive's ``facts.jsonl``): one dict per row of
``facts``, ``entities``, ``fact_entities`` and ``fact_revisions`` with the SQLite store's
columns (the PostgreSQL-only ``length``/``indexed`` and ``fact_entities.user_id`` are
left out on the way out and filled in on the way in).

:class:`FactLoader` writes them, one user's :class:`FactGroup` after another, each call of
:meth:`FactLoader.load` one transaction (all or nothing), under the user's scope and
write lock, with the postings indexed before it commits:

* into a schema that has never held a fact, entity or revision (its identity sequences
  unused), every row keeps its id and nothing is compared: the copy is exact. The
  sequences are first moved past the source's highest ids (``reserve``), so rows other
  hosts add meanwhile take none of them (a row whose id was taken anyway, written with
  an explicit id, gets a new one). A role that may not move the sequences (an
  application role) merges instead;
* otherwise rows are merged as the SQLite import merges them: a fact already there (the
  same live statement of the same user, or the same statement recorded at the same
  time) is skipped, an entity with the same key is reused, the others get new ids with
  their links and revisions mapped;
* ``superseded_by`` is written once its target is known, so a chain may span groups;
* with ``source``, each fact written also gets an ``import`` revision naming it.

:func:`dump_facts` reads every user's rows of a schema inside :func:`snapshot` (through
the ``read_all`` policies).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.facts import postgres_sql
from memoryport.storage.turns.postgres_schema import (
    FACTS_LOCK,
    READ_ALL_SETTING,
    SCOPE_SETTING,
    lock_user,
)

__all__ = ["TABLES", "FactGroup", "FactLoader", "dump_facts", "snapshot"]

TABLES = ("facts", "entities", "fact_entities", "fact_revisions")
"""The portable tables, in the order they are restored."""

_PG_ONLY = {"facts": {"length", "indexed"}, "fact_entities": {"user_id"}}
_IDENTITY = ("facts", "entities", "fact_revisions")

Row = dict[str, Any]
Cursor = psycopg.Cursor[Any]


@dataclass
class FactGroup:
    """One user's rows to load in one transaction (any list may be empty)."""

    user_id: str
    facts: list[Row] = field(default_factory=list)
    entities: list[Row] = field(default_factory=list)
    links: list[Row] = field(default_factory=list)
    revisions: list[Row] = field(default_factory=list)


def _columns(cur: Cursor, schema: str, table: str) -> list[str]:
    rows = cur.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
        " AND table_name = %s ORDER BY ordinal_position", (schema, table)).fetchall()
    return [str(r[0]) for r in rows]


@contextmanager
def snapshot(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """One read-only, repeatable-read transaction on ``conn`` (autocommit) that may read
    every user's rows (the ``read_all`` policies): :func:`dump_facts` and
    :func:`~memoryport.storage.turns.postgres_transfer.dump_turns` run inside it."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        conn.execute("SELECT set_config(%s, 'on', true)", (READ_ALL_SETTING,))
        yield


def dump_facts(conn: psycopg.Connection[Any], schema: str) -> Iterator[tuple[str, Row]]:
    """``(table, row)`` of every user's rows, table by table in :data:`TABLES` order, by
    id (inside :func:`snapshot`; nothing when the schema has no fact store)."""
    with conn.cursor() as cur:
        columns = {t: _columns(cur, schema, t) for t in TABLES}
    for table in TABLES:
        cols = [c for c in columns[table] if c not in _PG_ONLY.get(table, ())]
        if not cols:
            continue
        order = "id" if "id" in cols else "fact_id, entity_id"
        query = sql.SQL("SELECT {c} FROM {t} ORDER BY " + order).format(
            c=sql.SQL(", ").join(map(sql.Identifier, cols)), t=sql.Identifier(schema, table))
        with conn.cursor(name=f"dump_{table}") as named:
            named.itersize = 2000
            for row in named.execute(query):
                yield table, dict(zip(cols, row, strict=True))


class FactLoader:
    """Write portable fact rows into ``schema`` (see the module); ``conn`` is an
    autocommit connection the loader uses for its transactions."""

    def __init__(self, conn: psycopg.Connection[Any], schema: str, *,
                 source: str | None = None, reserve: dict[str, int] | None = None) -> None:
        self.conn, self.schema, self.source = conn, schema, source
        self._s = sql.Identifier(schema)
        conn.execute(sql.SQL("SET search_path TO {}").format(self._s))
        self.fact_ids: dict[int, int] = {}
        self.entity_ids: dict[int, int] = {}
        self.pending: list[tuple[str, int, int]] = []  # (user, fact, superseded_by old id)
        self.max_ids: dict[str, int] = {}
        self.written = 0
        self.skipped = 0
        with conn.transaction(), conn.cursor() as cur:
            self.columns = {t: set(_columns(cur, schema, t)) for t in TABLES}
            self.keep_ids = all(self._last_id(cur, t) is None and self._may_set(cur, t)
                                for t in _IDENTITY)
            if self.keep_ids and reserve:  # new rows from now on take ids past the source's
                self.max_ids.update({t: top for t, top in reserve.items() if t in _IDENTITY})
                self._bump_sequences(cur)

    def _may_set(self, cur: Cursor, table: str) -> bool:
        """Whether this role may move ``table``'s sequence (an application role may
        not: it merges, as into a schema that holds facts)."""
        row = cur.execute("SELECT has_sequence_privilege(pg_get_serial_sequence(%s, 'id'),"
                          " 'UPDATE')", (sql.Identifier(self.schema, table).as_string(cur),)
                          ).fetchone()
        return bool(row and row[0])

    def _last_id(self, cur: Cursor, table: str) -> int | None:
        row = cur.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'id'))",
                          (sql.Identifier(self.schema, table).as_string(cur),)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    # ------------------------------------------------------------------ one transaction
    def load(self, groups: Sequence[FactGroup]) -> None:
        """Load ``groups`` in one transaction; the id maps grow only when it commits."""
        facts, entities, pending = dict(self.fact_ids), dict(self.entity_ids), list(self.pending)
        written = skipped = 0
        with self.conn.transaction(), self.conn.cursor() as cur:
            if self.keep_ids:
                cur.execute(sql.SQL("LOCK TABLE {s}.facts, {s}.entities, {s}.fact_revisions"
                                    " IN SHARE ROW EXCLUSIVE MODE").format(s=self._s))
            made: list[tuple[str, list[int]]] = []
            for group in groups:
                step = _Group(self, cur, group, facts, entities)
                step.run()
                pending.extend(step.supersede)
                pending = step.resolve(pending)
                written += len(step.written)
                skipped += step.skipped
                made.append((group.user_id, step.written))
            if self.keep_ids:
                self._bump_sequences(cur)
            self._provenance(cur, made)
        self.fact_ids, self.entity_ids, self.pending = facts, entities, pending
        self.written += written
        self.skipped += skipped

    def _provenance(self, cur: Cursor, made: list[tuple[str, list[int]]]) -> None:
        """One ``import`` revision naming :attr:`source` per fact written (after every
        kept id is in, so these new ids take none of them)."""
        if self.source is None:
            return
        now = time.time()
        for user, ids in made:
            if ids:
                cur.execute("SELECT set_config(%s, %s, true)", (SCOPE_SETTING, "=" + user))
                cur.executemany("INSERT INTO fact_revisions (fact_id, user_id, action, actor,"
                                " at) VALUES (%s, %s, 'import', %s, %s)",
                                [(fid, user, self.source, now) for fid in ids])

    def _bump_sequences(self, cur: Cursor) -> None:
        """Move each identity sequence past the highest id this loader inserted."""
        for table in self.max_ids:
            self.sync_sequence(cur, table)

    def sync_sequence(self, cur: Cursor, table: str) -> None:
        """Move ``table``'s identity sequence past the highest id this loader kept, so a
        row inserted without an id next cannot take a kept one."""
        top = self.max_ids.get(table)
        if top is None:
            return
        name = sql.Identifier(self.schema, table).as_string(cur)
        cur.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), greatest(%s, coalesce("
                    "pg_sequence_last_value(pg_get_serial_sequence(%s, 'id')), 1)))",
                    (name, top, name))

    def insert(self, cur: Cursor, table: str, rows: Sequence[Row], keep: bool) -> list[int]:
        """Insert ``rows`` into ``table`` (their ids kept when ``keep`` and free), pipelined
        (one round trip per batch of rows with the same columns); return the new ids in
        order."""
        values = [{k: v for k, v in row.items() if k in self.columns[table]
                   and (keep or k != "id")} for row in rows]
        out: list[int | None] = [None] * len(values)
        shapes: dict[tuple[str, ...], list[int]] = {}
        for n, value in enumerate(values):
            shapes.setdefault(tuple(value), []).append(n)
        for names, picked in shapes.items():
            found = self._insert_many(cur, table, names, [values[n] for n in picked])
            for n, new in zip(picked, found, strict=True):
                out[n] = new
        kept = [new for new in out if new is not None]
        if kept:
            self.max_ids[table] = max(self.max_ids.get(table, 0), *kept)
        for n, new in enumerate(out):
            if new is None:  # the id is taken: a new one
                self.sync_sequence(cur, table)
                rest = {k: v for k, v in values[n].items() if k != "id"}
                out[n] = self._insert_many(cur, table, tuple(rest), [rest])[0]
        ids = [int(new or 0) for new in out]
        if ids:
            self.max_ids[table] = max(self.max_ids.get(table, 0), *ids)
        return ids

    def _insert_many(self, cur: Cursor, table: str, names: tuple[str, ...],
                     values: list[Row]) -> list[int | None]:
        """The id each row got (None: its kept id was taken and nothing was inserted)."""
        query = sql.SQL("INSERT INTO {t} ({c}) VALUES ({v}){conflict} RETURNING id").format(
            t=sql.Identifier(self.schema, table),
            c=sql.SQL(", ").join(map(sql.Identifier, names)),
            v=sql.SQL(", ").join(sql.Placeholder() * len(names)),
            conflict=sql.SQL(" ON CONFLICT (id) DO NOTHING" if "id" in names else ""))
        cur.executemany(query, [list(v.values()) for v in values], returning=True)
        found: list[int | None] = []
        while True:
            row = cur.fetchone()
            found.append(None if row is None else int(row[0]))
            if not cur.nextset():
                return found


class _Group:
    """One user's part of a :meth:`FactLoader.load` transaction."""

    def __init__(self, loader: FactLoader, cur: Cursor, group: FactGroup,
                 facts: dict[int, int], entities: dict[int, int]) -> None:
        self.loader, self.cur, self.group = loader, cur, group
        self.user = group.user_id
        self.facts, self.entities = facts, entities
        self.written: list[int] = []
        self.skipped = 0
        self.supersede: list[tuple[str, int, int]] = []

    def run(self) -> None:
        cur, s = self.cur, sql.Identifier(self.loader.schema)
        cur.execute("SELECT set_config(%s, %s, true)", (SCOPE_SETTING, "=" + self.user))
        lock_user(cur, FACTS_LOCK, self.user)
        self._entities()
        self._facts()
        pairs = [(self.facts.get(int(link["fact_id"])), self.entities.get(
            int(link["entity_id"]))) for link in self.group.links]
        found = [pair for pair in pairs if None not in pair]
        if found:
            cur.executemany(sql.SQL("INSERT INTO {s}.fact_entities (fact_id, entity_id)"
                                    " VALUES (%s, %s) ON CONFLICT DO NOTHING").format(s=s),
                            found)
        self._revisions()
        shared = postgres_sql.PgConnection(self.loader.conn, self.user, self.loader.schema)
        postgres_sql.index_dirty(shared)

    def _entities(self) -> None:
        rows = self.group.entities
        if not self.loader.keep_ids and rows:
            found = dict(self.cur.execute(
                "SELECT key, id FROM entities WHERE user_id = %s AND key = ANY(%s)",
                (self.user, [r.get("key") for r in rows])).fetchall())
            fresh = [r for r in rows if r.get("key") not in found]
            for row in rows:
                if row.get("key") in found:
                    self.entities[int(row["id"])] = int(found[row.get("key")])
            rows = fresh
        ids = self.loader.insert(self.cur, "entities", rows, self.loader.keep_ids)
        for row, new in zip(rows, ids, strict=True):
            self.entities[int(row["id"])] = new

    def _existing(self) -> dict[str, list[tuple[int, bool, float]]]:
        hashes = [r.get("content_hash") for r in self.group.facts]
        out: dict[str, list[tuple[int, bool, float]]] = {}
        if self.loader.keep_ids or not hashes:
            return out
        for fid, digest, live, recorded in self.cur.execute(
                "SELECT id, content_hash, retired_at IS NULL, recorded_at FROM facts"
                " WHERE user_id = %s AND content_hash = ANY(%s)", (self.user, hashes)):
            out.setdefault(str(digest), []).append((int(fid), bool(live), float(recorded)))
        return out

    def _facts(self) -> None:
        existing = self._existing()
        fresh: list[Row] = []
        for row in self.group.facts:
            match = next((fid for fid, live, recorded in existing.get(
                str(row.get("content_hash")), [])
                if (live and row.get("retired_at") is None) or recorded == row.get(
                    "recorded_at")), None)
            if match is None:
                fresh.append(row)
            else:
                self.facts[int(row["id"])] = match
                self.skipped += 1
        ids = self.loader.insert(self.cur, "facts",
                                 [{**row, "superseded_by": None} for row in fresh],
                                 self.loader.keep_ids)
        for row, new in zip(fresh, ids, strict=True):
            self.facts[int(row["id"])] = new
            self.written.append(new)
        for row in self.group.facts:
            target = row.get("superseded_by")
            if target is not None:
                self.supersede.append((self.user, self.facts[int(row["id"])], int(target)))

    def _revisions(self) -> None:
        written = set(self.written)
        keep = self.loader.keep_ids
        rows = []
        for row in self.group.revisions:
            fact = self.facts.get(int(row["fact_id"]))
            if keep:
                rows.append({**row, "fact_id": int(row["fact_id"]) if fact is None else fact})
            elif fact is not None and fact in written:
                rows.append({**row, "fact_id": fact})
        self.loader.insert(self.cur, "fact_revisions", rows, keep)

    def resolve(self, pending: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """Write the ``superseded_by`` links of this user whose target is known now;
        return the others."""
        left = []
        for user, fact, old_target in pending:
            target = self.facts.get(old_target)
            if user != self.user or target is None:
                left.append((user, fact, old_target))
                continue
            self.cur.execute("UPDATE facts SET superseded_by = %s WHERE id = %s"
                             " AND superseded_by IS NULL", (target, fact))
        return left
