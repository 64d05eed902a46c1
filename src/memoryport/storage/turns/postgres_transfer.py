"""Every user's stored turns of a PostgreSQL schema, for ``memoryport export`` of a
PostgreSQL home (loading them back is :meth:`.postgres.PostgresTurnIndex.load_session`).

Read through the ``read_all`` policy (:data:`.postgres_schema.READ_ALL_SETTING`) inside
the caller's snapshot, in id order, with a server-side cursor (memory stays bounded).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.turns.postgres import StoredTurn

__all__ = ["dump_turns"]


def dump_turns(conn: psycopg.Connection[Any], schema: str) -> Iterator[StoredTurn]:
    """Each stored turn of ``schema`` (every user), oldest id first, without vectors
    (inside :func:`memoryport.storage.facts.postgres_transfer.snapshot`; nothing when the
    schema has no turn index)."""
    found = conn.execute("SELECT to_regclass(%s)", (
        sql.Identifier(schema, "turns").as_string(conn),)).fetchone()
    if found is None or found[0] is None:
        return
    query = sql.SQL(
        "SELECT user_id, session_id, position, speaker, text, timestamp, source_id,"
        " recorded_at FROM {} ORDER BY id").format(sql.Identifier(schema, "turns"))
    with conn.cursor(name="dump_turns") as named:
        named.itersize = 2000
        for row in named.execute(query):
            yield StoredTurn(str(row[0]), str(row[1]), int(row[2]), str(row[3]),
                             str(row[4]), float(row[5]), str(row[6]), float(row[7]))
