"""The one statement behind a PostgreSQL turn-index search.

On a busy machine every round trip to the server costs a scheduling delay, so the
candidate search of :class:`~.postgres.PostgresTurnIndex` asks for everything in one
statement: the ``MAIN_DEPTH`` best turns by their BM25 with their scores (kind 0), their
neighbours and the turns of the ``SESSION_DEPTH`` best session blocks (kind 1), the block
scores (kind 2) and the scope's latest turn time (kind 3), the same sets the SQLite
index reads in four queries. Every join to ``turns`` is a ``LATERAL ... LIMIT 1`` lookup
by key, so the plan stays index lookups per candidate whatever the planner's statistics
say (a fresh store has none; the plain join was planned as a scan of the user's turns).
"""

from __future__ import annotations

from psycopg import sql

from memoryport.storage.turns.postgres_terms import bm25_sql

__all__ = ["COLUMNS", "SEARCH", "ranked"]

COLUMNS = (
    "t.id, t.session_id, t.position, t.speaker, t.text, t.timestamp, t.source_id, t.temporal"
)
"""A candidate row's columns, in :class:`~.index.TurnIndex` row order."""

_MAIN = bm25_sql("turn_terms", "turn_id", "p.dl", "", "turn")
_BLOCKS = bm25_sql("block_terms", "block_id", "d.length",
                   "JOIN {s}.turn_blocks d ON d.id = p.block_id", "block")

SEARCH = sql.SQL(f"""
    WITH m AS ({{main}}), bl AS ({{blocks}}),
    best AS (
        SELECT d.session_id, d.block FROM bl JOIN {{s}}.turn_blocks d ON d.id = bl.block_id
        ORDER BY bl.score DESC, bl.block_id LIMIT %(session_depth)s
    ), k AS (
        SELECT t.session_id, t.position + v.d AS position
        FROM m CROSS JOIN LATERAL (
            SELECT t.session_id, t.position FROM {{s}}.turns t WHERE t.id = m.turn_id LIMIT 1
        ) t, (VALUES (-1), (1)) AS v(d)
        UNION
        SELECT b.session_id, g.position FROM best b, generate_series(
            b.block * %(block_turns)s, (b.block + 1) * %(block_turns)s - 1) AS g(position)
    )
    SELECT 0 AS kind, {COLUMNS}, m.score FROM m CROSS JOIN LATERAL (
        SELECT * FROM {{s}}.turns t WHERE t.id = m.turn_id LIMIT 1) t
    UNION ALL
    SELECT 1, {COLUMNS}, 0 FROM k CROSS JOIN LATERAL (
        SELECT * FROM {{s}}.turns t WHERE t.user_id = %(user)s AND t.session_id = k.session_id
        AND t.position = k.position LIMIT 1) t
    UNION ALL
    SELECT 2, bl.block_id, d.session_id, d.block, '', '', 0, '', 0, bl.score
        FROM bl JOIN {{s}}.turn_blocks d ON d.id = bl.block_id
    UNION ALL
    SELECT 3, 0, '', 0, '', '', (SELECT t.timestamp FROM {{s}}.turns t
        WHERE t.user_id = %(user)s ORDER BY t.timestamp DESC LIMIT 1), '', 0, 0
""")
"""The search statement; format with ``main``, ``blocks`` (:func:`ranked`) and ``s``."""


def ranked(schema: sql.Identifier) -> sql.Composed:
    """:data:`SEARCH` for the tables of ``schema``."""
    return SEARCH.format(main=_MAIN.format(s=schema), blocks=_BLOCKS.format(s=schema), s=schema)
