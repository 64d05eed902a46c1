"""A turn write of the PostgreSQL turn index in one statement, one round trip.

``add_turns`` of one user is ``BEGIN``, the user's write lock, :data:`INSERT_TURNS` and
``COMMIT`` sent together (:func:`memoryport.storage.postgres_wire.pipelined`): the
statement reads each session's next position, inserts the turns and, through their new
ids, their postings, event windows, session blocks (lengths and postings summed per
block), and the turn and block statistics, then returns the ids. Nothing is read back
before the ``COMMIT`` is sent, so the write waits for the server once (a read of the
positions and of the ids in between cost two more round trips, each a wake-up of both
sides and, in a busy process, a wait for the interpreter).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.sessions.temporal import event_rows, has_temporal_expression
from memoryport.storage.turns import postgres_schema as pgschema
from memoryport.storage.turns.schema import BLOCK_TURNS

__all__ = ["INSERT_TURNS", "insert_turns"]

Cursor = psycopg.Cursor[Any]

INSERT_TURNS = sql.SQL("""
    WITH x AS (
        SELECT * FROM unnest(%(session)s::text[], %(speaker)s::text[], %(text)s::text[],
            %(stamp)s::float8[], %(source)s::text[], %(temporal)s::int[], %(length)s::int[])
            WITH ORDINALITY AS x(session_id, speaker, text, timestamp, source_id, temporal,
            length, ord)
    ), nx AS (
        SELECT s.session_id, (SELECT coalesce(max(t.position) + 1, 0) FROM {s}.turns t
            WHERE t.user_id = %(u)s AND t.session_id = s.session_id) AS next
        FROM (SELECT DISTINCT session_id FROM x) s
    ), r AS (
        SELECT x.*, nx.next + row_number() OVER (PARTITION BY x.session_id ORDER BY x.ord)
            - 1 AS position FROM x JOIN nx USING (session_id)
    ), ins AS (
        INSERT INTO {s}.turns(user_id, session_id, position, speaker, text, timestamp,
            source_id, recorded_at, temporal, length)
        SELECT %(u)s, session_id, position, speaker, text, timestamp, source_id, %(now)s,
            temporal, length FROM r ORDER BY ord
        RETURNING id, session_id, position
    ), k AS (
        SELECT r.ord, ins.id, r.session_id, r.position, r.position / {block} AS block,
            r.length FROM r JOIN ins USING (session_id, position)
    ), p AS (
        SELECT * FROM unnest(%(p_ord)s::int[], %(p_term)s::text[], %(p_tf)s::int[])
            AS p(ord, term, tf)
    ), tt AS (
        INSERT INTO {s}.turn_terms(user_id, term, turn_id, tf, dl)
        SELECT %(u)s, p.term, k.id, p.tf, k.length FROM p JOIN k USING (ord)
    ), ev AS (
        INSERT INTO {s}.turn_events(user_id, turn_id, start_at, end_at, precision, words)
        SELECT %(u)s, k.id, e.start_at, e.end_at, e.precision, e.words
        FROM unnest(%(e_ord)s::int[], %(e_start)s::float8[], %(e_end)s::float8[],
            %(e_precision)s::text[], %(e_words)s::text[])
            AS e(ord, start_at, end_at, precision, words) JOIN k USING (ord)
    ), bl AS (
        INSERT INTO {s}.turn_blocks(user_id, session_id, block, length)
        SELECT %(u)s, session_id, block, sum(length) FROM k GROUP BY session_id, block
        ON CONFLICT (user_id, session_id, block) DO UPDATE
            SET length = turn_blocks.length + excluded.length
        RETURNING id, session_id, block, xmax = 0 AS new, length
    ), bt AS (
        INSERT INTO {s}.block_terms(user_id, term, block_id, tf)
        SELECT %(u)s, p.term, bl.id, sum(p.tf) FROM p JOIN k USING (ord)
            JOIN bl ON bl.session_id = k.session_id AND bl.block = k.block
        GROUP BY p.term, bl.id
        ON CONFLICT (user_id, term, block_id) DO UPDATE SET tf = block_terms.tf + excluded.tf
    ), st AS (
        INSERT INTO {s}.term_stats(user_id, kind, docs, tokens)
        SELECT %(u)s, 'turn', count(*), sum(length) FROM k
        UNION ALL
        SELECT %(u)s, 'block', (SELECT count(*) FROM bl WHERE bl.new),
            (SELECT sum(length) FROM k)
        ON CONFLICT (user_id, kind) DO UPDATE SET docs = term_stats.docs + excluded.docs,
            tokens = term_stats.tokens + excluded.tokens
    )
    SELECT ord, id FROM k
""")
"""One user's turns and everything derived from them (format with ``s`` and ``block``)."""


def insert_turns(cur: Cursor, schema: sql.Identifier, user: str, turns: Sequence[Any],
                 counted: Sequence[Counter[str]]) -> Callable[[], list[int]]:
    """Queue ``user``'s write lock and :data:`INSERT_TURNS` for ``turns`` (checked
    :class:`~.index.TurnInput`, with their postings ``counted``) on ``cur``, inside the
    caller's pipelined transaction; return what reads the new ids (input order) once the
    pipeline has synced."""
    pgschema.lock_user(cur, pgschema.TURNS_LOCK, user)
    lengths = [sum(bag.values()) for bag in counted]
    temporal = [int(has_temporal_expression(t.text)) for t in turns]
    posts = [(n, term, tf) for n, bag in enumerate(counted, 1) for term, tf in bag.items()]
    events = [(n, *e[1:]) for n, (t, flag) in enumerate(zip(turns, temporal, strict=True), 1)
              if flag for e in event_rows(0, t.text, float(t.timestamp))]
    cur.execute(INSERT_TURNS.format(s=schema, block=sql.Literal(BLOCK_TURNS)), {
        "u": user, "now": time.time(),
        "session": [t.session_id for t in turns], "speaker": [t.speaker for t in turns],
        "text": [t.text for t in turns], "stamp": [float(t.timestamp) for t in turns],
        "source": [t.source_id for t in turns], "temporal": temporal, "length": lengths,
        "p_ord": [p[0] for p in posts], "p_term": [p[1] for p in posts],
        "p_tf": [p[2] for p in posts],
        "e_ord": [e[0] for e in events], "e_start": [float(e[1]) for e in events],
        "e_end": [float(e[2]) for e in events], "e_precision": [str(e[3]) for e in events],
        "e_words": [str(e[4]) for e in events]})

    def ids() -> list[int]:
        by_ord = {int(o): int(i) for o, i in cur.fetchall()}
        return [by_ord[n] for n in range(1, len(turns) + 1)]
    return ids
