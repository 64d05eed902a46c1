"""Move a home's holographic fact store and turn index into PostgreSQL (part of
``memoryport storage copy``).

``copy_holographic(home, dsn)`` reads ``<home>/holographic.db`` (one read snapshot; the
file is left as it is) and writes the profile's PostgreSQL schema (the one
``storage.backend: postgres`` opens for this home, :func:`~memoryport.storage.facts.
postgres_open.schema_for`):

* facts with every column (trust, retrieval and feedback counts, validity, event
  windows, retirement and ``superseded_by``, provenance), their entities and links and
  their revision history, user by user in chunks of :data:`CHUNK_FACTS` facts. Each
  chunk is one transaction (all or nothing). Into a schema that never held facts the ids
  are kept; otherwise (a second home, a rerun after an interruption) facts already there
  are skipped and the others get new ids with their links mapped
  (:mod:`memoryport.storage.facts.postgres_transfer`);
* turns session by session (one transaction each) with their positions, times and dense
  vectors as stored (any model, any dimension); a session already in the database is
  skipped. The postings, blocks, statistics and event windows are built on the way in.

So an interrupted copy is finished by running it again, and a rerun copies nothing twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from memoryport.config import profile_name
from memoryport.errors import StoreError
from memoryport.providers.holographic import DB_NAME
from memoryport.storage.facts.postgres_open import schema_for

__all__ = ["CHUNK_FACTS", "HolographicCopyReport", "copy_holographic"]

CHUNK_FACTS = 500
"""Facts per transaction (with their links and revisions; a user's entities go first)."""

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``."""


@dataclass(frozen=True)
class HolographicCopyReport:
    """What ``copy_holographic`` did."""

    facts: int = 0
    facts_skipped: int = 0
    turns: int = 0
    sessions_skipped: int = 0
    kept_ids: bool = False


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _dicts(conn: sqlite3.Connection, query: str, params: tuple[Any, ...] = ()
           ) -> list[dict[str, Any]]:
    cur = conn.execute(query, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur]


def _marks(ids: list[int]) -> str:
    return ", ".join("?" for _ in ids)


def _fact_groups(conn: sqlite3.Connection, chunk: int) -> Iterator[Any]:
    """:class:`FactGroup` per user and chunk of facts (the user's entities first, the
    revisions of facts no longer stored last)."""
    from memoryport.storage.facts.postgres_transfer import FactGroup

    users = [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM facts UNION"
                                        " SELECT DISTINCT user_id FROM entities ORDER BY 1")]
    for user in users:
        yield FactGroup(user, entities=_dicts(
            conn, "SELECT * FROM entities WHERE user_id = ? ORDER BY id", (user,)))
        last = -1
        while facts := _dicts(conn, "SELECT * FROM facts WHERE user_id = ? AND id > ?"
                              " ORDER BY id LIMIT ?", (user, last, chunk)):
            ids = [int(f["id"]) for f in facts]
            last = ids[-1]
            yield FactGroup(
                user, facts=facts,
                links=_dicts(conn, f"SELECT * FROM fact_entities WHERE fact_id IN ({_marks(ids)})"
                             " ORDER BY fact_id, entity_id", tuple(ids)),
                revisions=_dicts(conn, f"SELECT * FROM fact_revisions WHERE user_id = ? AND"
                                 f" fact_id IN ({_marks(ids)}) ORDER BY id", (user, *ids)))
        yield FactGroup(user, revisions=_dicts(
            conn, "SELECT * FROM fact_revisions WHERE user_id = ? AND fact_id NOT IN"
            " (SELECT id FROM facts) ORDER BY id", (user,)))


def _sessions(conn: sqlite3.Connection) -> Iterator[list[Any]]:
    """Each stored session's turns (a list of ``StoredTurn``), vectors included."""
    from memoryport.storage.turns.postgres import StoredTurn

    vectors = "turn_vectors" in _tables(conn)
    join = (" LEFT JOIN turn_vectors v ON v.turn_id = t.id" if vectors else "")
    cols = ", v.model, v.vec" if vectors else ", NULL, NULL"
    rows = conn.execute(
        "SELECT t.user_id, t.session_id, t.position, t.speaker, t.text, t.timestamp,"
        f" t.source_id, t.recorded_at{cols} FROM turns t{join}"
        " ORDER BY t.user_id, t.session_id, t.position")
    for _, group in groupby(rows, key=lambda r: (r[0], r[1])):
        yield [StoredTurn(str(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]), float(r[5]),
                          str(r[6]), float(r[7]),
                          None if r[9] is None else (str(r[8]), bytes(r[9])))
               for r in group]


def _top_ids(conn: sqlite3.Connection, present: set[str]) -> dict[str, int]:
    """The highest id of each fact-store table with ids (kept on the way in)."""
    return {t: int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {t}").fetchone()[0])
            for t in ("facts", "entities", "fact_revisions") if t in present}


def copy_holographic(home: Path, dsn: str, *, progress: Progress | None = None,
                     chunk_facts: int = CHUNK_FACTS) -> HolographicCopyReport:
    """Copy ``<home>/holographic.db`` into the PostgreSQL database at ``dsn`` (see the
    module); an empty report when the home has no fact store. ``StoreError`` when the
    file cannot be read or the database refuses a chunk (chunks before it stay copied;
    run it again to finish), ``ConfigError`` without the PostgreSQL extra."""
    path = home / DB_NAME
    if not path.is_file():
        return HolographicCopyReport()
    source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        source.execute("BEGIN")  # one read snapshot for facts and turns
        return _copy(source, dsn, schema_for(profile_name(home)), progress, max(1, chunk_facts))
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the fact store {path}: {exc}") from exc
    finally:
        source.close()


def _copy(source: sqlite3.Connection, dsn: str, schema: str, progress: Progress | None,
          chunk: int) -> HolographicCopyReport:
    import psycopg

    from memoryport.storage.facts.postgres import PostgresFactStore
    from memoryport.storage.facts.postgres_transfer import FactLoader
    from memoryport.storage.turns.postgres import PostgresTurnIndex

    present = _tables(source)
    PostgresFactStore(dsn, schema=schema).close()  # creates and migrates the schema
    index = PostgresTurnIndex(dsn, schema=schema, dense=False)  # vectors come as stored
    turns = sessions_skipped = 0
    try:
        conn = psycopg.connect(dsn, autocommit=True, application_name="memoryport")
    except psycopg.Error as exc:
        index.close()
        raise StoreError(f"cannot copy the fact store: {exc}") from exc
    try:
        loader = FactLoader(conn, schema, reserve=_top_ids(source, present))
        if "facts" in present:
            total = int(source.execute("SELECT count(*) FROM facts").fetchone()[0])
            done = 0
            for group in _fact_groups(source, chunk):
                loader.load([group])
                done += len(group.facts)
                if progress is not None:
                    progress("copying facts", done, total)
        if "turns" in present:
            total = int(source.execute("SELECT count(*) FROM turns").fetchone()[0])
            done = 0
            for session in _sessions(source):
                added = index.load_session(session)
                turns += added
                sessions_skipped += 0 if added else 1
                done += len(session)
                if progress is not None:
                    progress("copying turns", done, total)
    except psycopg.Error as exc:
        raise StoreError(f"cannot copy the fact store into PostgreSQL: {exc}") from exc
    finally:
        conn.close()
        index.close()
    return HolographicCopyReport(loader.written, loader.skipped, turns, sessions_skipped,
                                 loader.keep_ids)
