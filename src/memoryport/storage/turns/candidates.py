"""The SQLite turn index's candidate rows besides its best matches.

A search of :class:`memoryport.storage.turns.index.TurnIndex` scores its best-matching
turns, their neighbours and the turns of its best session blocks; :func:`candidate_rows`
gathers the neighbours and the block turns, through the index's
:class:`~memoryport.storage.turns.rowcache.RowCache` (PostgreSQL reads its own way:
:mod:`.postgres`).
"""

from __future__ import annotations

import heapq
import json
import sqlite3

from memoryport.storage.turns.rowcache import TURN_COLUMNS, Row, RowCache

__all__ = ["candidate_rows"]

_T_COLUMNS = ", ".join("t." + c for c in TURN_COLUMNS.split(", "))


def candidate_rows(
    conn: sqlite3.Connection,
    cache: RowCache,
    scope: str,
    main: dict[tuple[str, int], float],
    blocks: dict[tuple[str, int], float],
    found: list[Row],
    session_depth: int,
) -> list[Row]:
    """``found`` and the other candidates: the main turns' neighbours and the turns
    of the ``session_depth`` best blocks (each block by one index range; neighbours
    first by id, as a session's turns are mostly stored one after another, then by
    session and position for those not found so), through the row cache."""
    wanted = {(session, position + step) for session, position in main
              for step in (-1, 1) if position + step >= 0}
    wanted.difference_update(main)
    rows: list[Row] = []
    for (session, number), _ in heapq.nlargest(session_depth, blocks.items(),
                                              key=lambda kv: kv[1]):
        block = [r for r in cache.block(conn, scope, session, number)
                 if (session, r[2]) not in main]
        rows += block
        wanted.difference_update([(session, r[2]) for r in block])
    if wanted:
        ids = [r[0] for r in found]
        near = sorted({*[i - 1 for i in ids], *[i + 1 for i in ids]})
        for row in cache.by_ids(conn, near, scope):
            key = (row[1], row[2])
            if key in wanted:
                rows.append(row)
                wanted.discard(key)
    if wanted:  # the rest in (session, position) order: a cached block knows them
        rest: dict[tuple[str, int], Row] = {}
        ask = []
        for key in sorted(wanted):
            known, hit = cache.at(scope, *key)
            if not known:
                ask.append(key)
            elif hit is not None:
                rest[key] = hit
        if ask:
            for row in conn.execute(
                f"SELECT {_T_COLUMNS}"
                " FROM json_each(?) j CROSS JOIN turns t ON t.user_id = ?"
                " AND t.session_id = j.value ->> 0 AND t.position = j.value ->> 1",
                (json.dumps(ask), scope),
            ):
                rest[(row[1], row[2])] = row
        rows += [rest[key] for key in sorted(rest)]
    return found + rows
