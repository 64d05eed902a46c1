"""The ``holographic`` provider's data in a portable archive (``memoryport export`` /
``import``): its facts, with their entities, revisions and supersession links, and its
stored turns.

``export_db(db, directory)`` writes, from one read snapshot of ``<home>/holographic.db``:

- ``facts.jsonl``: one line per row, ``{"table": ..., "row": {column: value}}``, for the
  tables ``facts``, ``entities``, ``fact_entities`` and ``fact_revisions`` (every column,
  ids included);
- ``turns.jsonl``: one line per stored turn (user scope, session, position, speaker,
  text, timestamp, source id, recorded time).

``import_db(db, directory, source=...)`` restores them:

- into an empty fact store every row keeps its id and every column: the round trip is
  exact. Into a store that already holds facts they are merged: a fact already there
  (the same live statement of the same user, or the same statement recorded at the same
  time) is skipped, others get new ids with their entities, links, revisions and
  ``superseded_by`` mapped;
- each fact written also gets one revision ``action="import"`` whose ``actor`` is
  ``source`` (e.g. ``import:backup.zip``): the provenance of the import, beside the
  fact's own (``source_kind``, ``actor``, session), which is kept as it was;
- turns are added per session through the turn index (dense vectors are recomputed
  when the ``embeddings`` extra is installed); a session whose turns are already
  stored is skipped, so importing twice adds nothing.

On a PostgreSQL home (``storage.backend: postgres``) :func:`export_home` and
:func:`import_home` do the same on the profile's schema
(:mod:`memoryport.storage.facts.postgres_transfer`): the export reads every user's rows
from one snapshot and writes the same two files (so an archive moves between backends
either way); the import restores exactly into a schema that never held facts (ids kept)
and merges otherwise, all facts in one transaction, each session's turns in one with
their positions and recording times kept.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from memoryport.config import load_config, profile_name
from memoryport.errors import StoreError
from memoryport.storage.facts.postgres_open import schema_for
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput

__all__ = ["FORMAT", "TABLES", "VERSION", "export_db", "export_home", "import_db",
           "import_home"]

FORMAT = "memoryport.holographic"
"""The ``format`` of the provider's part of an archive."""
VERSION = 1
"""The version of that format written today."""
TABLES = ("facts", "entities", "fact_entities", "fact_revisions")
"""The fact-store tables exported, in the order they are restored."""

_TURN_COLUMNS = (
    "user_id", "session_id", "position", "speaker", "text", "timestamp", "source_id",
    "recorded_at",
)  # fmt: skip


def _connect_ro(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]


def _write(out: IO[str], payload: dict[str, Any]) -> None:
    out.write(json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n")


def _dump_tables(conn: sqlite3.Connection, out: IO[str], counts: dict[str, int]) -> None:
    present = _tables(conn)
    for table in (t for t in TABLES if t in present):
        cols = _columns(conn, table)
        order = "id" if "id" in cols else ", ".join(cols)  # fact_entities has no rowid
        sql = f"SELECT {', '.join(cols)} FROM {table} ORDER BY {order}"
        for row in conn.execute(sql):
            _write(out, {"table": table, "row": dict(zip(cols, row, strict=True))})
            counts[table] += 1


def _dump_turns(conn: sqlite3.Connection, out: IO[str], counts: dict[str, int]) -> None:
    if "turns" not in _tables(conn):
        return
    for row in conn.execute(f"SELECT {', '.join(_TURN_COLUMNS)} FROM turns ORDER BY id"):
        _write(out, dict(zip(_TURN_COLUMNS, row, strict=True)))
        counts["turns"] += 1


def export_db(db: Path, directory: Path) -> dict[str, Any]:
    """Write ``facts.jsonl`` and ``turns.jsonl`` of ``db`` into ``directory`` (empty
    files when there is no database yet); returns ``{"format", "version", "counts"}``."""
    directory.mkdir(parents=True, exist_ok=True)
    counts = {table: 0 for table in (*TABLES, "turns")}
    facts = (directory / "facts.jsonl").open("w", encoding="utf-8")
    turns = (directory / "turns.jsonl").open("w", encoding="utf-8")
    with facts, turns:
        if not db.is_file():
            return {"format": FORMAT, "version": VERSION, "counts": counts}
        conn = _connect_ro(db)
        try:
            conn.execute("BEGIN")  # one read snapshot for both files
            _dump_tables(conn, facts, counts)
            _dump_turns(conn, turns, counts)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot export the fact store {db}: {exc}") from exc
        finally:
            conn.close()
    return {"format": FORMAT, "version": VERSION, "counts": counts}


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                payload = json.loads(line)
            except ValueError as exc:
                raise StoreError(f"{path.name} line {number}: not valid JSON ({exc})") from None
            if not isinstance(payload, dict):
                raise StoreError(f"{path.name} line {number}: not a JSON object")
            yield payload


class _Restore:
    """One transaction restoring ``facts.jsonl`` into ``conn`` (see the module docstring)."""

    def __init__(self, conn: sqlite3.Connection, source: str) -> None:
        self.conn, self.source = conn, source
        self.columns = {t: set(_columns(conn, t)) for t in TABLES}
        counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES]
        self.empty = not any(counts)
        self.fact_ids: dict[int, int] = {}
        self.entity_ids: dict[int, int] = {}
        self.written: list[tuple[int, str]] = []
        self.skipped = 0
        self.supersede: list[tuple[int, int]] = []

    def _insert(self, table: str, row: dict[str, Any], keep_id: bool) -> int:
        values = {k: v for k, v in row.items() if k in self.columns[table]}
        if not keep_id:
            values.pop("id", None)
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        cursor = self.conn.execute(
            f"INSERT INTO {table} ({names}) VALUES ({marks})", list(values.values())
        )
        return int(cursor.lastrowid or 0)

    def fact(self, row: dict[str, Any]) -> None:
        if self.empty:
            new = self._insert("facts", row, True)
        else:
            found = self.conn.execute(
                "SELECT id FROM facts WHERE user_id = ? AND content_hash = ? AND"
                " (retired_at IS NULL AND ? IS NULL OR recorded_at = ?)",
                (row.get("user_id", ""), row.get("content_hash"), row.get("retired_at"),
                 row.get("recorded_at")),
            ).fetchone()  # fmt: skip
            if found is not None:
                self.fact_ids[int(row["id"])] = int(found[0])
                self.skipped += 1
                return
            new = self._insert("facts", {**row, "superseded_by": None}, False)
            if row.get("superseded_by") is not None:
                self.supersede.append((new, int(row["superseded_by"])))
        self.fact_ids[int(row["id"])] = new
        self.written.append((new, str(row.get("user_id", ""))))

    def entity(self, row: dict[str, Any]) -> None:
        if self.empty:
            self.entity_ids[int(row["id"])] = self._insert("entities", row, True)
            return
        found = self.conn.execute(
            "SELECT id FROM entities WHERE user_id = ? AND key = ?",
            (row.get("user_id", ""), row.get("key")),
        ).fetchone()
        new = int(found[0]) if found else self._insert("entities", row, False)
        self.entity_ids[int(row["id"])] = new

    def link(self, row: dict[str, Any]) -> None:
        fact = self.fact_ids.get(int(row["fact_id"]))
        entity = self.entity_ids.get(int(row["entity_id"]))
        if fact is not None and entity is not None:
            self.conn.execute(
                "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id) VALUES (?, ?)",
                (fact, entity),
            )

    def revision(self, row: dict[str, Any]) -> None:
        written = {fid for fid, _ in self.written}
        fact = self.fact_ids.get(int(row["fact_id"]))
        if self.empty:
            self._insert("fact_revisions", row, True)
        elif fact is not None and fact in written:
            self._insert("fact_revisions", {**row, "fact_id": fact}, False)

    def finish(self) -> None:
        for new, old in self.supersede:
            target = self.fact_ids.get(old)
            if target is not None:
                self.conn.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (target, new))
        now = time.time()
        self.conn.executemany(
            "INSERT INTO fact_revisions (fact_id, user_id, action, actor, at) VALUES"
            " (?, ?, 'import', ?, ?)",
            [(fid, user, self.source, now) for fid, user in self.written],
        )


def _restore_facts(db: Path, path: Path, source: str) -> tuple[int, int]:
    FactStore(db).close()  # creates and migrates the schema
    conn = sqlite3.connect(str(db), timeout=10.0, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("PRAGMA defer_foreign_keys=ON")  # superseded_by points forward
        restore = _Restore(conn, source)
        steps = {"facts": restore.fact, "entities": restore.entity,
                 "fact_entities": restore.link, "fact_revisions": restore.revision}  # fmt: skip
        for payload in _rows(path):
            step, row = steps.get(str(payload.get("table"))), payload.get("row")
            if step is None or not isinstance(row, dict):
                raise StoreError(f"{path.name}: unexpected line {str(payload)[:80]!r}")
            step(row)
        restore.finish()
        conn.execute("COMMIT")
        return len(restore.written), restore.skipped
    except (sqlite3.Error, KeyError, TypeError, ValueError) as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(f"cannot import facts into {db}: {exc}; nothing was imported") from exc
    finally:
        conn.close()


def _restore_turns(db: Path, path: Path, batch_size: int = 1000) -> tuple[int, int]:
    """Add the exported turns; a session that already had turns before this import is
    skipped whole (so a second import adds nothing)."""
    index = TurnIndex(db)
    check = sqlite3.connect(str(db), timeout=10.0)
    seen: dict[tuple[str, str], bool] = {}
    added = skipped = 0
    batch: list[TurnInput] = []
    try:
        for row in _rows(path):
            key = (str(row["user_id"]), str(row["session_id"]))
            if key not in seen:
                seen[key] = check.execute(
                    "SELECT 1 FROM turns WHERE user_id = ? AND session_id = ? LIMIT 1", key
                ).fetchone() is not None
            if seen[key]:
                skipped += 1
                continue
            batch.append(TurnInput(key[1], str(row["speaker"]), str(row["text"]),
                                   float(row["timestamp"]), str(row.get("source_id") or ""),
                                   key[0] or None))  # fmt: skip
            if len(batch) >= batch_size:
                added += len(index.add_turns(batch))
                batch = []
        added += len(index.add_turns(batch))
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{path.name}: a turn is malformed ({exc})") from exc
    finally:
        check.close()
        index.close()
    return added, skipped


def import_db(db: Path, directory: Path, *, source: str) -> dict[str, Any]:
    """Restore ``facts.jsonl`` and ``turns.jsonl`` from ``directory`` into ``db`` (see
    the module docstring); returns counts. ``StoreError`` (facts: nothing written) for a
    damaged file."""
    facts, skipped = _restore_facts(db, directory / "facts.jsonl", source)
    turns, turns_skipped = _restore_turns(db, directory / "turns.jsonl")
    return {
        "facts_imported": facts,
        "facts_skipped": skipped,
        "turns_imported": turns,
        "turns_skipped": turns_skipped,
    }


# ---------------------------------------------------------------------------- either backend


def export_home(home: Path, directory: Path, db_name: str = "holographic.db"
                ) -> dict[str, Any]:
    """:func:`export_db` of ``<home>/<db_name>``, or of the profile's PostgreSQL schema on
    a PostgreSQL home (the same files, the same manifest)."""
    storage = load_config(home).storage
    if storage.backend == "sqlite":
        return export_db(home / db_name, directory)
    return _export_pg(storage.dsn, schema_for(profile_name(home)), directory)


def import_home(home: Path, directory: Path, *, source: str,
                db_name: str = "holographic.db") -> dict[str, Any]:
    """:func:`import_db` into ``<home>/<db_name>``, or into the profile's PostgreSQL
    schema on a PostgreSQL home (the same counts)."""
    storage = load_config(home).storage
    if storage.backend == "sqlite":
        return import_db(home / db_name, directory, source=source)
    return _import_pg(storage.dsn, schema_for(profile_name(home)), directory, source)


def _export_pg(dsn: str, schema: str, directory: Path) -> dict[str, Any]:
    import psycopg

    from memoryport.storage.facts.postgres_transfer import dump_facts, snapshot
    from memoryport.storage.sessions.postgres.connect import check_connection, describe_dsn
    from memoryport.storage.turns.postgres_transfer import dump_turns

    directory.mkdir(parents=True, exist_ok=True)
    counts = {table: 0 for table in (*TABLES, "turns")}
    check_connection(dsn)
    facts = (directory / "facts.jsonl").open("w", encoding="utf-8")
    turns = (directory / "turns.jsonl").open("w", encoding="utf-8")
    try:
        with facts, turns, psycopg.connect(dsn, autocommit=True) as conn, snapshot(conn):
            for table, row in dump_facts(conn, schema):
                _write(facts, {"table": table, "row": row})
                counts[table] += 1
            for turn in dump_turns(conn, schema):
                _write(turns, {name: getattr(turn, name) for name in _TURN_COLUMNS})
                counts["turns"] += 1
    except psycopg.Error as exc:
        raise StoreError(f"cannot export the fact store from {describe_dsn(dsn)}"
                         f" (schema {schema}): {exc}") from exc
    return {"format": FORMAT, "version": VERSION, "counts": counts}


def _fact_groups(path: Path) -> list[Any]:
    """The rows of ``facts.jsonl`` as one ``FactGroup`` per user (links go with their
    fact's user; a link to a fact not in the file is dropped, as on SQLite)."""
    from memoryport.storage.facts.postgres_transfer import FactGroup

    groups: dict[str, FactGroup] = {}
    owner: dict[int, str] = {}
    for payload in _rows(path):
        table, row = payload.get("table"), payload.get("row")
        if table not in TABLES or not isinstance(row, dict):
            raise StoreError(f"{path.name}: unexpected line {str(payload)[:80]!r}")
        if table == "fact_entities":
            user = owner.get(int(row["fact_id"]))
            if user is not None:
                groups[user].links.append(row)
            continue
        user = str(row.get("user_id") or "")
        group = groups.setdefault(user, FactGroup(user))
        if table == "facts":
            owner[int(row["id"])] = user
            group.facts.append(row)
        else:
            (group.entities if table == "entities" else group.revisions).append(row)
    return list(groups.values())


def _stored_sessions(path: Path) -> list[list[Any]]:
    """The turns of ``turns.jsonl`` grouped by (user, session), in file order."""
    from memoryport.storage.turns.postgres import StoredTurn

    sessions: dict[tuple[str, str], list[StoredTurn]] = {}
    now = time.time()
    for row in _rows(path):
        key = (str(row["user_id"] or ""), str(row["session_id"]))
        turns = sessions.setdefault(key, [])
        position = row.get("position")
        recorded = row.get("recorded_at")
        turns.append(StoredTurn(key[0], key[1], len(turns) if position is None else int(position),
                                str(row["speaker"]), str(row["text"]), float(row["timestamp"]),
                                str(row.get("source_id") or ""),
                                now if recorded is None else float(recorded)))
    return list(sessions.values())


def _import_pg(dsn: str, schema: str, directory: Path, source: str) -> dict[str, Any]:
    import psycopg

    from memoryport.storage.facts.postgres import PostgresFactStore
    from memoryport.storage.facts.postgres_transfer import FactLoader
    from memoryport.storage.sessions.postgres.connect import describe_dsn
    from memoryport.storage.turns.postgres import PostgresTurnIndex

    try:
        groups = _fact_groups(directory / "facts.jsonl")
        sessions = _stored_sessions(directory / "turns.jsonl")
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"the archive's fact store is malformed ({exc}); nothing was"
                         " imported") from exc
    PostgresFactStore(dsn, schema=schema).close()  # creates and migrates the schema
    where = f"{describe_dsn(dsn)} (schema {schema})"
    try:
        with psycopg.connect(dsn, autocommit=True, application_name="memoryport") as conn:
            top = {g: max((int(r["id"]) for group in groups for r in getattr(group, name)),
                          default=0)
                   for g, name in (("facts", "facts"), ("entities", "entities"),
                                   ("fact_revisions", "revisions"))}
            loader = FactLoader(conn, schema, source=source, reserve=top)
            loader.load(groups)
    except (psycopg.Error, KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"cannot import facts into {where}: {exc}; nothing was imported"
                         ) from exc
    index = PostgresTurnIndex(dsn, schema=schema)
    added = skipped = 0
    try:
        for turns in sessions:
            count = index.load_session(turns)
            added += count
            skipped += len(turns) - count
    except ValueError as exc:
        raise StoreError(f"turns.jsonl: a turn is malformed ({exc})") from exc
    finally:
        index.close()
    return {"facts_imported": loader.written, "facts_skipped": loader.skipped,
            "turns_imported": added, "turns_skipped": skipped}
