"""``PostgresTurnIndex``: the turn index in PostgreSQL, ranked exactly as the SQLite one.

A :class:`~memoryport.storage.turns.index.TurnIndex` whose storage is a PostgreSQL schema
(:mod:`.postgres_schema`): the public methods, the candidate selection and the scoring
(:meth:`TurnIndex.search` / :meth:`TurnIndex.candidates` and :mod:`.rank`) are inherited;
only the queries behind them are PostgreSQL's. BM25 is FTS5's, over postings cut by FTS5's
own tokenizer (:mod:`.postgres_terms`), so a query finds the same turns on both backends.

One connection behind a lock, as the SQLite index, scoped by row-level security to the
user of each call (:mod:`.postgres_link`). A search is one statement
(:mod:`.postgres_query`), plus one for the query expansion (:mod:`.postgres_expand`)
when there is a model; a write is one statement in one round trip, all or nothing:
turns, postings, blocks, statistics and events commit together (:mod:`.postgres_write`).
Vectors and vocabulary words are written by a background writer on a connection of its
own and scored from memory (:mod:`.postgres_vectors`).
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import sql

from memoryport.errors import StoreError
from memoryport.storage.sessions.postgres.connect import check_connection, describe_dsn
from memoryport.storage.sessions.temporal import event_rows, has_temporal_expression
from memoryport.storage.turns import expand, postgres_expand, query_encoder, vectors
from memoryport.storage.turns import index as base
from memoryport.storage.turns import postgres_schema as pgschema
from memoryport.storage.turns.postgres_link import PgLink
from memoryport.storage.turns.postgres_query import COLUMNS, ranked
from memoryport.storage.turns.postgres_terms import phrase_terms, terms
from memoryport.storage.turns.postgres_vectors import (
    VectorCache,
    VectorWriter,
    float4_array,
    read_vectors,
    store_vectors,
)
from memoryport.storage.turns.postgres_write import insert_turns
from memoryport.storage.turns.rank import Weights
from memoryport.storage.turns.schema import BLOCK_TURNS

__all__ = ["PostgresTurnIndex", "StoredTurn"]

T = TypeVar("T")
Cursor = psycopg.Cursor[Any]
_Row = tuple[int, str, int, str, str, float, str, int]


@dataclass(frozen=True)
class StoredTurn:
    """A turn as a store holds it (``memoryport storage copy`` and ``import`` load these):
    its position in the session, when it was recorded and, when it has one, its dense
    vector as stored (float32 bytes, any dimension) and the model that made it."""

    user_id: str
    session_id: str
    position: int
    speaker: str
    text: str
    timestamp: float
    source_id: str
    recorded_at: float
    vector: tuple[str, bytes] | None = None


class PostgresTurnIndex(base.TurnIndex):
    """Turns in a PostgreSQL schema (see the module docstring).

    Args:
        dsn: libpq connection string or URI.
        schema: the PostgreSQL schema (created if missing); one per profile or team.
        weights, embedder, dense: as :class:`~memoryport.storage.turns.index.TurnIndex`.
    """

    _expand_candidates = postgres_expand.candidates

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "memoryport",
        weights: Weights | None = None,
        embedder: vectors.Embedder | None = None,
        dense: bool = True,
        query_vectors: str = "table",
    ) -> None:
        # The SQLite index's own set-up, on a throwaway in-memory database: every
        # attribute its ranking code keeps (weights, embedder, lock, caches) exists here
        # too, whatever that code adds later. Its connection is closed at once.
        super().__init__(Path(":memory:"), weights=weights, embedder=embedder, dense=dense,
                         query_vectors=query_vectors)
        self._conn.close()
        if self._vectors is not None:  # the SQLite index's vector cache and writer: here
            self._vectors.stop()       # .postgres_vectors writes and holds them
            self._vectors = None
        self.dsn = dsn
        self.schema = schema
        self.path = Path(describe_dsn(dsn))  # where the turns are, for messages
        self._local = threading.local()  # this thread's search: its scope and prefetched rows
        self._vocabs: dict[str, expand.Vocabulary] = {}  # scope -> its words' vectors
        self._vcache = VectorCache()  # turn vectors read or written here
        self._vector_writer: VectorWriter | None = None
        self._encoder: query_encoder.QueryEncoder | None = None  # queries not run through the model
        self._s = sql.Identifier(schema)
        self._search = ranked(self._s)
        check_connection(dsn)
        try:
            self._link = PgLink(dsn, str(self.path), self._lock)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the turn index on {self.path}: {exc}") from exc
        try:
            pgschema.migrate(self._link.conn, schema)
            self._vector_type = self._run(self._vec_type, "open")
            if self.embedder is not None:
                self._vector_writer = VectorWriter(self)
                self._encoder = query_encoder.for_model_dir(
                    getattr(self.embedder, "model_dir", None), query_vectors)
        except (psycopg.Error, StoreError) as exc:
            self._link.close()
            raise StoreError(f"cannot open the turn index on {self.path}: {exc}") from exc
        except BaseException:
            self._link.close()
            raise

    # ------------------------------------------------------------------ plumbing
    def _q(self, text: str | sql.SQL) -> sql.Composed:
        return (text if isinstance(text, sql.SQL) else sql.SQL(text)).format(s=self._s)

    def _run(self, fn: Callable[[Cursor], T], what: str, scope: str = "") -> T:
        """``fn`` in one transaction scoped to ``scope`` (takes the lock)."""
        with self._lock:
            return self._call(fn, what, scope, write=True)

    def _call(self, fn: Callable[[Cursor], T], what: str, scope: str, *, write: bool) -> T:
        """``fn`` on the index's connection scoped to ``scope`` (:meth:`.PgLink.call`;
        the caller holds the lock)."""
        return self._link.call(fn, what, scope, write=write)

    def _vec_type(self, cur: Cursor) -> str:
        row = cur.execute(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
            " WHERE a.attrelid = to_regclass(%s) AND a.attname = 'vec'",
            (sql.Identifier(self.schema, "turn_vectors").as_string(cur),)).fetchone()
        return str(row[0]) if row else "bytea"

    def close(self) -> None:
        """Close the connection (idempotent); the vector writer stops after its batch
        (turns it leaves without a vector are back-filled by the next process)."""
        if self._vector_writer is not None:
            self._vector_writer.stop()
        self._link.close()

    def count(self, user_id: str | None = None) -> int:
        """How many turns are stored in ``user_id``'s scope."""
        scope = base._scope(user_id)
        return self._run(lambda c: int(c.execute(
            self._q("SELECT count(*) FROM {s}.turns WHERE user_id = %s"), (scope,)
        ).fetchone()[0]), "read", scope)  # type: ignore[index]

    # ------------------------------------------------------------------ writes
    def add_turns(self, turns: Sequence[base.TurnInput]) -> list[int]:
        """Store ``turns`` in one transaction (see :meth:`TurnIndex.add_turns`); their
        vectors and words are written by the background writer (:mod:`.postgres_vectors`)."""
        checked = [base._check(t, i) for i, t in enumerate(turns)]
        if not checked:
            return []
        counted = terms([base._body(t.speaker, t.text) for t in checked])
        out = [0] * len(checked)
        for scope in dict.fromkeys(base._scope(t.user_id) for t in checked):
            mine = [n for n, t in enumerate(checked) if base._scope(t.user_id) == scope]

            def insert(cur: Cursor, user: str = scope, picked: list[int] = mine
                       ) -> Callable[[], list[int]]:
                return insert_turns(cur, self._s, user, [checked[n] for n in picked],
                                    [counted[n] for n in picked])
            with self._lock:
                stored = self._link.pipelined(insert, "write", scope)
            for n, turn_id in zip(mine, stored, strict=True):
                out[n] = turn_id
            if self._vector_writer is not None:  # committed: embedded off the turn's path
                self._vector_writer.added(scope, {out[n]: checked[n].text for n in mine})
        return out

    def flush_vectors(self, timeout: float | None = None) -> bool:
        """Wait until every turn stored (or back-filled) by this index has its vector and
        its words (True), or ``timeout`` seconds passed (False); True at once without an
        embedder."""
        return self._vector_writer is None or self._vector_writer.flush(timeout)

    def _index_rows(self, cur: Cursor, user: str, turns: list[base.TurnInput],
                    counted: list[Counter[str]], rows: list[tuple[Any, ...]], ids: list[int]
                    ) -> list[int]:
        post = [(term, turn_id, tf, row[9]) for turn_id, bag, row
                in zip(ids, counted, rows, strict=True) for term, tf in bag.items()]
        if post:
            cur.execute(self._q(
                "INSERT INTO {s}.turn_terms(user_id, term, turn_id, tf, dl) SELECT %s, *"
                " FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[])"),
                [user, *([list(col) for col in zip(*post, strict=True)])])
        self._add_stats(cur, user, "turn", len(ids), sum(r[9] for r in rows))
        events = [(user, *e) for turn_id, turn, row in zip(ids, turns, rows, strict=True)
                  if row[8] for e in event_rows(turn_id, turn.text, float(turn.timestamp))]
        if events:
            cur.executemany(self._q(
                "INSERT INTO {s}.turn_events(user_id, turn_id, start_at, end_at, precision,"
                " words) VALUES (%s, %s, %s, %s, %s, %s)"), events)
        self._add_blocks(cur, user, rows, counted)
        return ids

    def load_session(self, turns: Sequence[StoredTurn]) -> int:
        """Store one session's turns as they were stored elsewhere (positions, times and
        vectors kept; a turn without a vector gets one from this index's embedder, if it
        has one), in one transaction; return how many were added: 0 when the session
        already has turns here (so loading twice adds nothing)."""
        if not turns:
            return 0
        user, session = turns[0].user_id, turns[0].session_id
        if any((t.user_id, t.session_id) != (user, session) for t in turns):
            raise ValueError("load_session: every turn must be of one user's one session")
        checked = [base._check(base.TurnInput(t.session_id, t.speaker, t.text, t.timestamp,
                                              t.source_id, t.user_id or None), i)
                   for i, t in enumerate(turns)]
        counted = terms([base._body(t.speaker, t.text) for t in checked])
        missing = [n for n, t in enumerate(turns) if t.vector is None]
        made = (self.embedder.embed([turns[n].text for n in missing])
                if self.embedder is not None and missing else [])
        fresh = dict(zip(missing, made, strict=False))
        words = postgres_expand.new_words(self, self._link, user, [t.text for t in turns])
        word_blobs = ([vectors.encode(v) for v in self.embedder.embed(words)]
                      if self.embedder is not None and words else [])

        def load(cur: Cursor) -> int:
            pgschema.lock_user(cur, pgschema.TURNS_LOCK, user)
            if cur.execute(self._q("SELECT 1 FROM {s}.turns WHERE user_id = %s"
                                   " AND session_id = %s LIMIT 1"), (user, session)).fetchone():
                return 0
            rows = [(user, t.session_id, t.position, t.speaker, t.text, float(t.timestamp),
                     t.source_id, float(t.recorded_at), int(has_temporal_expression(t.text)),
                     sum(bag.values())) for t, bag in zip(turns, counted, strict=True)]
            found = cur.execute(self._q(
                "INSERT INTO {s}.turns(user_id, session_id, position, speaker, text,"
                " timestamp, source_id, recorded_at, temporal, length) SELECT * FROM unnest("
                "%s::text[], %s::text[], %s::int[], %s::text[], %s::text[], %s::float8[],"
                " %s::text[], %s::float8[], %s::int[], %s::int[]) RETURNING position, id"),
                [list(col) for col in zip(*rows, strict=True)]).fetchall()
            by_position = {int(p): int(i) for p, i in found}
            ids = [by_position[r[2]] for r in rows]
            self._index_rows(cur, user, checked, counted, rows, ids)
            vecs = [(i, t.vector[0], t.vector[1])
                    for i, t in zip(ids, turns, strict=True) if t.vector is not None]
            name = self.embedder.name if self.embedder is not None else ""
            vecs += [(ids[n], name, vectors.encode(v)) for n, v in fresh.items()]
            store_vectors(self, cur, user, vecs)
            postgres_expand.insert_words(self, cur, user, words, word_blobs)
            return len(ids)
        added = self._run(load, "load", user)
        if added:
            with self._lock:
                postgres_expand.remember(self, user, words, word_blobs)
        return added

    def _add_stats(self, cur: Cursor, user: str, kind: str, docs: int, tokens: int) -> None:
        cur.execute(self._q(
            "INSERT INTO {s}.term_stats(user_id, kind, docs, tokens) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (user_id, kind) DO UPDATE SET docs = term_stats.docs + excluded.docs,"
            " tokens = term_stats.tokens + excluded.tokens"), (user, kind, docs, tokens))

    def _add_blocks(self, cur: Cursor, user: str, rows: list[tuple[Any, ...]],
                    counted: list[Counter[str]]) -> None:
        """Add the new turns' postings and lengths to their session blocks (a block's text
        is its turns' joined by newlines, so its postings are the sums of theirs)."""
        blocks: dict[tuple[str, int], tuple[Counter[str], int]] = {}
        for row, bag in zip(rows, counted, strict=True):
            bag_sum, length = blocks.get((row[1], row[2] // BLOCK_TURNS), (Counter(), 0))
            bag_sum.update(bag)
            blocks[(row[1], row[2] // BLOCK_TURNS)] = (bag_sum, length + row[9])
        for (session, number), (bag, length) in blocks.items():
            # one statement per block, nothing read back (a pipelined write does not wait)
            cur.execute(self._q(
                "WITH b AS (INSERT INTO {s}.turn_blocks(user_id, session_id, block, length)"
                " VALUES (%(u)s, %(session)s, %(block)s, %(length)s)"
                " ON CONFLICT (user_id, session_id, block) DO UPDATE"
                " SET length = turn_blocks.length + excluded.length RETURNING id, xmax = 0 AS new),"
                " t AS (INSERT INTO {s}.block_terms(user_id, term, block_id, tf)"
                " SELECT %(u)s, x.term, b.id, x.tf FROM b,"
                " unnest(%(terms)s::text[], %(tfs)s::int[]) AS x(term, tf)"
                " ON CONFLICT (user_id, term, block_id) DO UPDATE"
                " SET tf = block_terms.tf + excluded.tf)"
                " INSERT INTO {s}.term_stats(user_id, kind, docs, tokens)"
                " SELECT %(u)s, 'block', b.new::int, %(length)s FROM b"
                " ON CONFLICT (user_id, kind) DO UPDATE SET docs = term_stats.docs"
                " + excluded.docs, tokens = term_stats.tokens + excluded.tokens"),
                {"u": user, "session": session, "block": number, "length": length,
                 "terms": list(bag), "tfs": list(bag.values())})

    # ------------------------------------------------------------------ the queries of candidates()
    def _read(self, fn: Callable[[Cursor], T], scope: str) -> T:
        """A one-statement read inside :meth:`candidates` (the caller holds the lock)."""
        return self._call(fn, "read", scope, write=False)

    def _main_scores(self, match: str, scope: str
                     ) -> tuple[dict[tuple[str, int], float], list[_Row]]:
        """The best turns by BM25 (see :meth:`TurnIndex._main_scores`); the same one
        statement (:mod:`.postgres_query`) also fetches what :meth:`_block_scores`,
        :meth:`_candidate_rows` and :meth:`_latest` return next, kept for this thread."""
        local = self._local
        local.scope = scope
        local.blocks, local.extra, local.covered, local.latest = {}, {}, set(), None
        words = phrase_terms(match)
        if not words:
            local.latest = self._latest_now(scope)
            return {}, []
        params = {"terms": words, "user": scope,
                  "depth": base.MAIN_DEPTH, "session_depth": base.SESSION_DEPTH,
                  "block_turns": BLOCK_TURNS}
        rows = self._read(lambda c: c.execute(self._search, params).fetchall(), scope)
        found = sorted((r for r in rows if r[0] == 0), key=lambda r: (-r[-1], r[1]))
        blocks = sorted((r for r in rows if r[0] == 2), key=lambda r: (-r[-1], r[1]))
        local.blocks = {(r[2], r[3]): float(r[-1]) for r in blocks}
        local.extra = {(r[2], r[3]): tuple(r[1:-1]) for r in rows if r[0] == 1}
        local.latest = next((r[6] for r in rows if r[0] == 3), None)
        covered: set[tuple[str, int]] = set()
        for r in found:
            covered.update(((r[2], r[3] - 1), (r[2], r[3] + 1)))
        for session, number in list(local.blocks)[:base.SESSION_DEPTH]:
            lo = number * BLOCK_TURNS
            covered.update((session, p) for p in range(lo, lo + BLOCK_TURNS))
        local.covered = covered
        return ({(r[2], r[3]): float(r[-1]) for r in found}, [tuple(r[1:-1]) for r in found])

    def _block_scores(self, match: str, scope: str) -> dict[tuple[str, int], float]:
        """The session-block scores fetched by :meth:`_main_scores`."""
        return dict(self._local.blocks)

    def _candidate_rows(self, scope: str, main: dict[tuple[str, int], float],
                        blocks: dict[tuple[str, int], float], found: list[_Row]) -> list[_Row]:
        """``found`` and the main turns' neighbours and the best blocks' turns (as
        :meth:`TurnIndex._candidate_rows`), from what :meth:`_main_scores` fetched; a
        key it did not cover is read here."""
        keys: set[tuple[str, int]] = set()
        for session, position in main:
            keys.update(((session, position - 1), (session, position), (session, position + 1)))
        best = sorted(blocks.items(), key=lambda kv: -kv[1])[:base.SESSION_DEPTH]
        for (session, number), _ in best:
            lo = number * BLOCK_TURNS
            keys.update((session, p) for p in range(lo, lo + BLOCK_TURNS))
        keys.difference_update(main)
        extra: dict[tuple[str, int], _Row] = self._local.extra
        rows = [extra[k] for k in sorted(keys) if k in extra]
        missing = sorted(keys - self._local.covered)
        if missing:
            rows += [tuple(r) for r in self._read(lambda c: c.execute(self._q(
                "SELECT " + COLUMNS + " FROM unnest(%s::text[], %s::int[]) AS k(s, p)"
                " JOIN {s}.turns t ON t.user_id = %s AND t.session_id = k.s"
                " AND t.position = k.p"),
                ([k[0] for k in missing], [k[1] for k in missing], scope)).fetchall(), scope)]
        return list(found) + rows

    def _latest(self, scope: str) -> float | None:
        """The scope's latest turn time, fetched by :meth:`_main_scores`."""
        latest = self._local.latest
        return float(latest) if latest is not None else None

    def _latest_now(self, scope: str) -> float | None:
        row = self._read(lambda c: c.execute(self._q(
            "SELECT max(timestamp) FROM {s}.turns WHERE user_id = %s"), (scope,)).fetchone(),
            scope)
        return float(row[0]) if row and row[0] is not None else None

    def _overlapping(self, rows: list[_Row], periods: Sequence[tuple[float, float]]) -> set[int]:
        ids = [r[0] for r in rows if r[7]]
        if not ids:
            return set()
        scope: str = self._local.scope
        with self._lock:
            found = self._read(lambda c: c.execute(self._q(
                "SELECT turn_id, start_at, end_at FROM {s}.turn_events"
                " WHERE user_id = %s AND turn_id = ANY(%s)"), (scope, ids)).fetchall(), scope)
        return {tid for tid, lo, hi in found
                if any(lo < p_hi and p_lo < hi for p_lo, p_hi in periods)}

    def _query_vector(self, query: str) -> array[float]:
        """The query's vector: the query encoder's in this search's scope (its map fitted
        by the background writer), else the model's (the last one is kept: a search asks
        twice)."""
        assert self.embedder is not None
        if self._encoder is not None:  # the query encoder in this search's scope
            return self._encoder.vector(query, getattr(self._local, "scope", None))
        last: tuple[str, array[float]] | None = getattr(self._local, "qvec", None)
        if last is not None and last[0] == query:
            return last[1]
        vec = self.embedder.embed([query])[0]
        self._local.qvec = (query, vec)
        return vec

    def _add_nearest(self, query: str, scope: str, rows: list[_Row]) -> list[_Row]:
        """``rows`` and the scope's :data:`~.vectors.DENSE_DEPTH` turns nearest the query
        by vector not among them, nearest first, ties by id (as the SQLite index's
        in-memory search): pgvector's inner product in SQL, else the stored float32
        vectors scored here."""
        if self.embedder is None or vectors.DENSE_DEPTH <= 0:
            return rows
        qvec, name = self._query_vector(query), self.embedder.name
        with self._lock:
            if self._vector_type.startswith("vector"):
                nearest = [int(r[0]) for r in self._read(lambda c: c.execute(self._q(
                    "SELECT turn_id FROM {s}.turn_vectors WHERE user_id = %s AND model = %s"
                    " AND vector_dims(vec) = %s ORDER BY vec <#> %s::vector, turn_id"
                    " LIMIT %s"), (scope, name, len(qvec), float4_array(qvec),
                                   vectors.DENSE_DEPTH)
                ).fetchall(), scope)]
            else:
                stored = self._read(lambda c: c.execute(self._q(
                    "SELECT turn_id, vec FROM {s}.turn_vectors WHERE user_id = %s"
                    " AND model = %s ORDER BY turn_id"), (scope, name)).fetchall(), scope)
                cos = [sum(a * b for a, b in zip(qvec, vec, strict=True))
                       if len(vec := vectors.decode(bytes(v))) == len(qvec) else -2.0
                       for _, v in stored]
                order = sorted(range(len(stored)), key=lambda n: (-cos[n], stored[n][0]))
                nearest = [int(stored[n][0]) for n in order[:vectors.DENSE_DEPTH]]
            have = {r[0] for r in rows}
            extra = [i for i in nearest if i not in have]
            if not extra:
                return rows
            found = {int(r[0]): tuple(r) for r in self._read(lambda c: c.execute(self._q(
                "SELECT " + COLUMNS + " FROM {s}.turns t WHERE t.user_id = %s"
                " AND t.id = ANY(%s)"), (scope, extra)).fetchall(), scope)}
        return rows + [found[i] for i in extra if i in found]

    def _dense(self, query: str, rows: list[_Row]) -> list[float]:
        """The ``dense`` signal (see :meth:`TurnIndex._dense`): the candidates' vectors
        from memory, those not held read in binary (and kept)."""
        if self.embedder is None or not rows:
            return [0.0] * len(rows)
        qvec = self._query_vector(query)
        scope: str = self._local.scope
        if self._vector_writer is not None:
            self._vector_writer.touch(scope)  # back-fill the scope once per process
        ids = [r[0] for r in rows]
        held = self._vcache.get(ids)
        if len(held) < len(ids):
            with self._lock:
                held.update(read_vectors(self, scope, [i for i in ids if i not in held]))
        return vectors.dense_scores(qvec, [None if (b := held.get(i)) is None
                                           else vectors.decode(b) for i in ids])
