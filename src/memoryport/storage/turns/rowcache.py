"""Stored turns' rows kept in memory for the turn index's candidate lookups (and, in
:class:`BlockTexts`, the session-block text its writer committed last).

A search reads the rows of about a hundred and fifty candidate turns (the best matches,
their neighbours, the best session block's turns); most of them were candidates of the
previous search too. Turns are append-only: a stored turn's row never changes and is never
deleted, and a new turn gets an id above every stored one (SQLite's rowid, one writer at a
time). So a cached row is never stale, and what was stored since the cache last looked is
exactly the turns with an id above the largest it has seen: :meth:`RowCache.catch_up`
reads those (usually the last turn's two rows) at the start of each search, inside the
search's read snapshot, which keeps every cached block complete.

The cache is exact: a lookup returns what the equivalent query would return in the same
snapshot. It is bounded (:data:`ROWS_CACHE` rows or :data:`ROWS_CHARS` characters of text,
:data:`BLOCKS_CACHE` blocks; cleared when full); a catch-up of more than
:data:`CATCH_UP_MAX` turns (a bulk import by another process) drops the blocks instead of
reading them all.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from memoryport.storage.turns.bm25 import Postings

__all__ = ["BLOCKS_CACHE", "BLOCK_CHARS", "BLOCK_TEXTS", "CATCH_UP_MAX", "ROWS_CACHE",
           "ROWS_CHARS", "TURN_COLUMNS", "BlockTexts", "Row", "RowCache"]

ROWS_CACHE = 50_000
"""How many turns' rows a cache holds at most (cleared when full)."""
ROWS_CHARS = 8_000_000
"""How many characters of turn text a cache holds at most (cleared when full)."""
BLOCKS_CACHE = 256
"""How many complete session blocks a cache holds at most (cleared when full)."""
CATCH_UP_MAX = 1_000
"""A catch-up past this many new turns drops the cached blocks instead of reading them."""
BLOCK_TEXTS = 32
"""How many session blocks' text the turn index's writer keeps (:class:`BlockTexts`)."""
BLOCK_CHARS = 2_000_000
"""The most characters of block text the writer keeps (cleared when past it)."""

TURN_COLUMNS = "id, session_id, position, speaker, text, timestamp, source_id, temporal"
"""The columns of a row, in order."""
_T_COLUMNS = ", ".join("t." + c for c in TURN_COLUMNS.split(", "))
_COLUMNS_AFTER_ID = TURN_COLUMNS.split(", ", 1)[1]

Row = tuple[int, str, int, str, str, float, str, int]
"""``(id, session_id, position, speaker, text, timestamp, source_id, temporal)``."""
_BlockKey = tuple[str, str, int]  # (user scope, session, block number)


class RowCache:
    """Rows by turn id and complete session blocks of one turn index (not thread-safe:
    the index calls it under its search lock, inside one read transaction)."""

    def __init__(self, block_turns: int) -> None:
        self.block_turns = block_turns
        self.seen = 0
        """The largest turn id stored when the cache last caught up."""
        self._rows: dict[int, tuple[str, Row]] = {}  # id -> (scope, row)
        self._blocks: dict[_BlockKey, dict[int, Row]] = {}  # complete: position -> row
        self._chars = 0  # text held by the rows
        self.postings = Postings(block_turns)
        """The query words' postings (:mod:`.bm25`), caught up with the rows."""
        self.single: str | None = None
        """The one user scope every stored turn is in, when a search verified it and every
        turn stored since was read by :meth:`catch_up` in that scope (else None)."""

    def clear(self) -> None:
        """Forget every row and block (and which user the stored turns belong to)."""
        self._rows.clear()
        self._blocks.clear()
        self._chars = 0
        self.single = None

    def catch_up(self, conn: sqlite3.Connection) -> None:
        """Take in the turns stored since the last call (their rows, and each into its
        block when that block is cached): one statement, the largest id and the new
        rows (at most :data:`CATCH_UP_MAX` + 1 of them) together, with both word indexes'
        averages records (for :class:`.bm25.Postings`)."""
        seen = self.seen
        found = conn.execute(
            "SELECT coalesce(max(id), 0), (SELECT block FROM turns_fts_data WHERE id = 1),"
            " (SELECT block FROM blocks_fts_data WHERE id = 1), NULL, NULL, NULL, NULL, NULL,"
            f" NULL FROM turns UNION ALL SELECT * FROM (SELECT id, user_id, {_COLUMNS_AFTER_ID}"
            " FROM turns WHERE id > ?1 AND ?1 > 0 ORDER BY id LIMIT ?2)",
            (seen, CATCH_UP_MAX + 1),
        ).fetchall()
        top = int(found[0][0])
        self.postings.averages = (found[0][1], found[0][2])  # FTS5's, in this snapshot
        if top == seen:
            return
        fresh = None  # the new turns, when read
        if top < seen:  # not the store the cache has seen: start over
            self.clear()
        elif seen == 0 or len(found) - 1 > CATCH_UP_MAX:  # first look, bulk load
            self._blocks.clear()
            self.single = None  # the new turns' users are not known
        else:
            fresh = found[1:]
            single = self.single
            for turn_id, scope, *rest in found[1:]:
                row: Row = (turn_id, *rest)
                if scope != single:
                    single = None
                self._keep(scope, row)
                block = self._blocks.get((scope, row[1], row[2] // self.block_turns))
                if block is not None:
                    block[row[2]] = row
            self.single = single
        self.postings.take(conn, seen, top, fresh)
        self.seen = top

    def _keep(self, scope: str, row: Row) -> None:
        if row[0] in self._rows:
            return
        if len(self._rows) >= ROWS_CACHE or self._chars >= ROWS_CHARS:
            self.clear()  # the blocks too: they hold the same rows
        self._rows[row[0]] = (scope, row)
        self._chars += len(row[4])

    def keep(self, scope: str, rows: Iterable[Row]) -> None:
        """Remember ``rows`` (read in ``scope``)."""
        for row in rows:
            self._keep(scope, row)

    def by_ids(self, conn: sqlite3.Connection, ids: Sequence[int], scope: str) -> list[Row]:
        """The rows of the turns ``ids`` in ``scope``, in the order of ``ids`` (ids that
        are not stored, or not in ``scope``, are left out)."""
        get = self._rows.get
        hits = [get(i) for i in ids]  # before keeping more may clear the cache
        seen = self.seen
        missing = [i for i, hit in zip(ids, hits, strict=True) if hit is None and 0 < i <= seen]
        if missing:
            read: dict[int, tuple[str, Row]] = {}
            for user, *rest in conn.execute(
                f"SELECT t.user_id, {_T_COLUMNS} FROM json_each(?) j CROSS JOIN turns t"
                " ON t.id = j.value", (json.dumps(missing),),
            ):
                row: Row = tuple(rest)
                read[row[0]] = (user, row)
                self._keep(user, row)
            hits = [read.get(i) if hit is None else hit for i, hit in zip(ids, hits, strict=True)]
        return [hit[1] for hit in hits if hit is not None and hit[0] == scope]

    def block(self, conn: sqlite3.Connection, scope: str, session: str, number: int
              ) -> list[Row]:
        """The turns of a session block, in position order (read once, then kept)."""
        key = (scope, session, number)
        block = self._blocks.get(key)
        if block is None:
            lo = number * self.block_turns
            found: list[Row] = conn.execute(
                f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND session_id = ?"
                " AND position >= ? AND position < ?",
                (scope, session, lo, lo + self.block_turns),
            ).fetchall()
            if len(self._blocks) >= BLOCKS_CACHE:
                self._blocks.clear()
            block = self._blocks[key] = {row[2]: row for row in found}
            self.keep(scope, found)
        return [block[p] for p in sorted(block)]

    def at(self, scope: str, session: str, position: int) -> tuple[bool, Row | None]:
        """``(known, row)`` for the turn at ``position`` of ``session``: known when its
        block is cached (``row`` None when there is no such turn)."""
        block = self._blocks.get((scope, session, position // self.block_turns))
        if block is None:
            return False, None
        return True, block.get(position)


class BlockTexts:
    """The text of the session blocks a turn index's writer committed last, so appending
    a turn to a block does not read the block's turns back to rebuild its old document
    (which the FTS5 delete needs). A kept text is used only while the block has not
    grown since (turns are append-only and a session's positions have no gaps, so a
    block whose next position is still the kept one holds exactly the kept turns);
    otherwise the writer reads the block. Bounded (:data:`BLOCK_TEXTS` blocks,
    :data:`BLOCK_CHARS` characters); not thread-safe (the writer's lock guards it)."""

    def __init__(self) -> None:
        self._kept: dict[_BlockKey, tuple[int, int, str]] = {}  # (id, next position, text)
        self._chars = 0  # text kept

    def get(self, block: _BlockKey, first_new: int) -> tuple[int, str] | None:
        """``(block id, text)`` when the block's kept text ends right before position
        ``first_new``; None when there is none or the block has grown since."""
        kept = self._kept.get(block)
        return (kept[0], kept[2]) if kept is not None and kept[1] == first_new else None

    def remember(self, written: dict[_BlockKey, tuple[int, int, str]]) -> None:
        """Keep ``(id, next position, text)`` of the blocks a transaction committed."""
        kept = self._kept
        for block, value in written.items():
            old = kept.get(block)
            self._chars += len(value[2]) - (len(old[2]) if old is not None else 0)
            kept[block] = value
        if len(kept) > BLOCK_TEXTS or self._chars > BLOCK_CHARS:
            kept.clear()
            kept.update(written)
            self._chars = sum(len(value[2]) for value in written.values())
