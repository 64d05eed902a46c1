"""The turn index: every completed turn, its author and time, searchable with context.

One SQLite file (WAL), shared with the fact store; this component's tables and its own
migration namespace are in :mod:`.schema`, the scoring in :mod:`.rank`.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memoryport.errors import StoreError
from memoryport.storage.sessions.sqlite.connect import create_private_file
from memoryport.storage.sessions.temporal import (
    event_rows,
    has_temporal_expression,
    time_hint,
)
from memoryport.storage.sqlite_wal import enable_wal
from memoryport.storage.timeexpr import has_time_words
from memoryport.storage.turns import expand, query_encoder, rank, schema, vectors
from memoryport.storage.turns.candidates import candidate_rows
from memoryport.storage.turns.order import best
from memoryport.storage.turns.rank import (
    DENSE_WEIGHTS,
    Components,
    Weights,
    asks_for_name,
    combine_columns,
    fts_query,
    fts_terms,
    name_stems,
    names_other,
    query_words,
)
from memoryport.storage.turns.rowcache import BlockTexts, RowCache

__all__ = ["MAX_LIMIT", "TurnHit", "TurnIndex", "TurnInput"]

MAX_LIMIT = 1000
"""The largest ``limit`` :meth:`TurnIndex.search` accepts."""
MAIN_DEPTH = 80
"""How many best-matching turns (by their own BM25) a query considers: the cap that bounds
a search's cost (with their neighbours and ``SESSION_DEPTH`` blocks, at most about
``3 * MAIN_DEPTH + SESSION_DEPTH * BLOCK_TURNS`` candidates are scored). LoCoMo cat 1-4
R@5/R@10 is flat from 300 down to 60 (0.700/0.774-0.776, both halves) and starts to drop
at 30-40 (0.694-0.695/0.765); 80 keeps twice the knee as margin at about a third of the
cost of 200."""
SESSION_DEPTH = 1
"""How many best-matching session blocks contribute all their turns as candidates (every
matching block still scores its turns' ``session`` signal). 1, 2 and 3 give the same
LoCoMo cat 1-4 R@5/R@10 at MAIN_DEPTH 80 (0.700/0.776-0.777); 1 scores 64 fewer turns."""

NAMES_CACHE = 100_000
"""How many turns' :func:`~memoryport.storage.turns.rank.name_stems` a TurnIndex keeps
in memory (cleared when full)."""

_TURN_COLUMNS = "id, session_id, position, speaker, text, timestamp, source_id, temporal"
_T_COLUMNS = ", ".join("t." + c for c in _TURN_COLUMNS.split(", "))
_Row = tuple[int, str, int, str, str, float, str, int]


@dataclass(frozen=True)
class TurnInput:
    """One completed turn to store."""

    session_id: str
    speaker: str
    text: str
    timestamp: float
    source_id: str = ""
    user_id: str | None = None


@dataclass(frozen=True)
class TurnHit:
    """One search result, best first; ``score`` is the combined score (higher is better)."""

    turn_id: int
    session_id: str
    speaker: str
    text: str
    timestamp: float
    source_id: str
    score: float


def _check(turn: object, index: int) -> TurnInput:
    """``turn`` when valid; otherwise ``ValueError`` saying which field and why."""
    where = f"turn {index}"
    if not isinstance(turn, TurnInput):
        raise ValueError(f"{where}: expected a TurnInput, got {type(turn).__name__}")
    for name in ("session_id", "speaker", "text", "source_id"):
        if not isinstance(getattr(turn, name), str):
            raise ValueError(f"{where}: {name} must be a string")
    if not turn.session_id.strip():
        raise ValueError(f"{where}: session_id is empty; pass the id of the turn's session")
    if "\x00" in turn.text or "\x00" in turn.speaker:
        raise ValueError(f"{where}: text and speaker may not contain NUL characters")
    stamp = turn.timestamp
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp):
        raise ValueError(f"{where}: timestamp must be finite epoch seconds, got {stamp!r}")
    _scope(turn.user_id)
    return turn


def _scope(user_id: str | None) -> str:
    """The stored user scope: ``''`` for turns without a user."""
    if user_id is None:
        return ""
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValueError("user_id must be None or a non-empty string")
    return user_id


def _body(speaker: str, text: str) -> str:
    return f"{speaker}: {text}" if speaker else text


class TurnIndex:
    """Turns stored in SQLite and ranked by :mod:`memoryport.storage.turns.rank`.

    ``user_id`` scopes every call: turns stored with a user are found only with that
    user, and ``user_id=None`` means the turns stored without one. Thread-safe (one
    connection behind a lock).

    Another database subclasses this and replaces the reads (``_main_scores``,
    ``_block_scores``, ``_candidate_rows``, ``_latest``, ``_overlapping``, ``_dense``);
    the signals are built once, in :meth:`_signals`. :meth:`search` calls
    :meth:`_signals` directly, or :meth:`candidates` when a subclass overrides it.
    """

    _names: dict[int, frozenset[str]]
    """Each candidate turn's name stems, by turn id (see :meth:`_naming`)."""

    _expand_candidates = expand.candidates  # PostgreSQL's: .postgres_expand
    def __init__(
        self,
        path: Path,
        *,
        weights: Weights | None = None,
        embedder: vectors.Embedder | None = None,
        dense: bool = True,
        query_vectors: str = "table",
    ) -> None:
        """Open (creating and migrating) the index at ``path``.

        ``embedder`` gives each turn a dense vector; when it is ``None`` and ``dense`` is
        true, the installed model of the ``embeddings`` extra is used if there is one
        (:func:`vectors.load_default`); ``dense=False`` ranks without vectors.
        ``query_vectors`` (:data:`.query_encoder.CHOICES`): ``table`` gives queries their
        vectors from the model's token table when it is built, ``model`` runs the model
        on each query.
        """
        self.query_vectors = query_encoder.check_choice(query_vectors)
        self.path = Path(path)
        self.embedder = embedder if embedder is not None or not dense else vectors.load_default()
        self.weights = weights or (DENSE_WEIGHTS if self.embedder is not None else Weights())
        in_memory = str(path) == ":memory:"
        if not in_memory:
            create_private_file(self.path)
        self._write_lock = threading.Lock()
        self._writer = sqlite3.connect(
            str(path), timeout=10.0, isolation_level=None, check_same_thread=False
        )
        self._lock, self._conn = self._write_lock, self._writer
        self._cache = RowCache(schema.BLOCK_TURNS)  # searches' rows (under self._lock)
        self._blocks = BlockTexts()  # the writer's (under self._write_lock)
        try:
            enable_wal(self._writer)
            self._writer.execute("PRAGMA synchronous=NORMAL")
            schema.migrate(self._writer)
            if not in_memory:  # searches read a WAL snapshot while a write commits
                self._lock, self._conn = threading.Lock(), sqlite3.connect(
                    str(path), timeout=10.0, isolation_level=None, check_same_thread=False)
                self._conn.execute("PRAGMA query_only=1")
        except BaseException:
            self._writer.close()
            self._conn.close()
            raise
        self._vectors = (vectors.DenseIndex(self._writer, self._write_lock, self.embedder,
                                            reader=(self._conn, self._lock),
                                            query_vectors=query_vectors)
                         if self.embedder is not None else None)
        if self._vectors is not None and not in_memory:
            self._vectors.notify()  # back-fill turns left without a vector (crash, model)

    def close(self) -> None:
        """Close the connections (idempotent); the vector writer stops after its batch."""
        if self._vectors is not None:
            self._vectors.stop()
        with self._write_lock:
            self._writer.close()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> TurnIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self, user_id: str | None = None) -> int:
        """How many turns are stored in ``user_id``'s scope."""
        scope = _scope(user_id)
        with self._lock:
            row = self._conn.execute("SELECT count(*) FROM turns WHERE user_id = ?", (scope,))
            return int(row.fetchone()[0])

    def add_turns(self, turns: Sequence[TurnInput]) -> list[int]:
        """Store ``turns`` in one transaction, each after the last stored turn of its
        session (so neighbours follow session order); return their ids in input order.

        Invalid input raises ``ValueError`` naming the turn and stores nothing.
        """
        checked = [_check(t, i) for i, t in enumerate(turns)]
        if not checked:
            return []
        with self._write_lock:
            conn = self._writer
            written: dict[tuple[str, str, int], tuple[int, int, str]] = {}
            try:
                conn.execute("BEGIN IMMEDIATE")
                ids = self._insert(checked, written)
                conn.execute("COMMIT")
                self._blocks.remember(written)
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"could not store turns in {self.path}: {exc}") from exc
                raise
        if self._vectors is not None:  # vectors are written off the turn's path
            self._vectors.notify()
        return ids

    def catch_up(self) -> None:
        """Take in the turns stored since the last search now (their rows and the query
        words' postings: :meth:`.rowcache.RowCache.catch_up`, in a read snapshot of its
        own), so that the next search, which starts with the same catch-up, finds nothing
        left to read. The writer of a live agent calls it right after storing a turn, off
        the next turn's path; searches are exact either way. Nothing for a subclass that
        reads its own way (it replaces ``_main_scores``)."""
        if type(self)._main_scores is not TurnIndex._main_scores:
            return
        try:
            with self._lock, self._snapshot():
                self._cache.catch_up(self._conn)
        except sqlite3.Error as exc:
            raise StoreError(f"could not read new turns from {self.path}: {exc}") from exc

    def flush_vectors(self, timeout: float | None = None) -> bool:
        """Wait until every stored turn has its dense vector (True), or ``timeout``
        seconds passed (False); True at once without an embedder."""
        return self._vectors is None or self._vectors.flush(timeout)

    def _insert(self, turns: list[TurnInput],
                written: dict[tuple[str, str, int], tuple[int, int, str]]) -> list[int]:
        conn = self._writer
        nexts: dict[tuple[str, str], int] = {}
        touched: dict[tuple[str, str, int], list[tuple[int, str]]] = {}  # new (pos, body)
        ids = []
        now = time.time()
        for turn in turns:
            key = (_scope(turn.user_id), turn.session_id)
            if key not in nexts:
                row = conn.execute(
                    "SELECT coalesce(max(position) + 1, 0) FROM turns"
                    " WHERE user_id = ? AND session_id = ?",
                    key,
                ).fetchone()
                nexts[key] = int(row[0])
            position = nexts[key]
            nexts[key] = position + 1
            temporal = int(has_temporal_expression(turn.text))
            cur = conn.execute(
                "INSERT INTO turns(user_id, session_id, position, speaker, text, timestamp,"
                " source_id, recorded_at, temporal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*key, position, turn.speaker, turn.text, float(turn.timestamp),
                 turn.source_id, now, temporal),
            )
            turn_id = int(cur.lastrowid or 0)
            conn.execute(
                "INSERT INTO turns_fts(rowid, body) VALUES (?, ?)",
                (turn_id, _body(turn.speaker, turn.text)),
            )
            if temporal:
                conn.executemany(
                    "INSERT INTO turn_events(turn_id, start_at, end_at, precision, words)"
                    " VALUES (?, ?, ?, ?, ?)",
                    event_rows(turn_id, turn.text, float(turn.timestamp)),
                )
            ids.append(turn_id)
            touched.setdefault((*key, position // schema.BLOCK_TURNS), []).append(
                (position, _body(turn.speaker, turn.text)))
        for block, added in touched.items():
            written[block] = self._reindex_block(block, added)
        return ids

    def _reindex_block(self, block: tuple[str, str, int], added: list[tuple[int, str]]
                       ) -> tuple[int, int, str]:
        """Replace a session block's document with its turns' text; return the block's
        ``(id, next position, text)``. ``added`` are the turns this transaction stored
        in it (position, body), in position order. The old text (for the FTS5 delete) is
        the one this writer committed last when the block has not grown since (turns are
        append-only and positions gapless: nobody else wrote to it), else it is rebuilt
        from the turns stored before this transaction."""
        conn = self._writer
        first_new = added[0][0]
        kept = self._blocks.get(block, first_new)
        block_id, old = kept if kept is not None else self._stored_block(block, first_new)
        if block_id:
            conn.execute(
                "INSERT INTO blocks_fts(blocks_fts, rowid, body) VALUES ('delete', ?, ?)",
                (block_id, old),
            )
        else:
            block_id = int(
                conn.execute(
                    "INSERT INTO turn_blocks(user_id, session_id, block) VALUES (?, ?, ?)", block
                ).lastrowid
                or 0
            )
        older = first_new > block[2] * schema.BLOCK_TURNS  # turns before this transaction's
        new = "\n".join([old, *(body for _, body in added)] if older else
                        [body for _, body in added])
        conn.execute("INSERT INTO blocks_fts(rowid, body) VALUES (?, ?)", (block_id, new))
        return block_id, added[-1][0] + 1, new

    def _stored_block(self, block: tuple[str, str, int], first_new: int) -> tuple[int, str]:
        """The block's id (0 when it has none yet) and the text of its turns stored
        before ``first_new``."""
        conn = self._writer
        user, session, number = block
        found = conn.execute(
            "SELECT id FROM turn_blocks WHERE user_id = ? AND session_id = ? AND block = ?",
            block,
        ).fetchone()
        rows = conn.execute(
            "SELECT speaker, text FROM turns WHERE user_id = ? AND session_id = ?"
            " AND position >= ? AND position < ? ORDER BY position",
            (user, session, number * schema.BLOCK_TURNS, first_new),
        ).fetchall()
        return (int(found[0]) if found else 0), "\n".join(_body(s, t) for s, t in rows)

    def search(self, query: str, *, limit: int = 10, user_id: str | None = None) -> list[TurnHit]:
        """The ``limit`` best turns for ``query`` in ``user_id``'s scope, best first."""
        if not isinstance(query, str):
            raise ValueError("query must be a string")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
        if type(self).candidates is TurnIndex.candidates:
            rows, columns = self._signals(query, user_id)
        else:  # a subclass wrapping candidates() (to prepare its reads) goes through it
            rows, parts = self.candidates(query, user_id=user_id)
            columns = [list(c) for c in zip(*parts, strict=True)]
        if not rows:
            return []
        scores = combine_columns(columns, self.weights)
        return [
            TurnHit(
                turn_id=row[0], session_id=row[1], speaker=row[3], text=row[4],
                timestamp=row[5], source_id=row[6], score=round(scores[i], 6),
            )
            for row, i in ((rows[i], i) for i in best(scores, columns[0], rows, limit))
        ]

    def candidates(
        self, query: str, *, user_id: str | None = None
    ) -> tuple[list[tuple[int, str, int, str, str, float, str, int]], list[Components]]:
        """The candidate turns of ``query`` and their raw signals (before weighting).

        Rows are ``(id, session_id, position, speaker, text, timestamp, source_id,
        temporal)``. Public for the benchmark, which fits weights on these signals.
        """
        rows, columns = self._signals(query, user_id)
        return rows, list(map(Components._make, zip(*columns, strict=True)))

    def _signals(
        self, query: str, user_id: str | None
    ) -> tuple[list[_Row], list[list[float]]]:
        """The candidate rows and their signals column by column, in the order of the
        :class:`Components` fields (what :func:`combine_columns` takes)."""
        scope = _scope(user_id)
        words = query_words(query)
        match = fts_query(words)
        if not match:
            return [], []
        if (dense := getattr(self, "_vectors", None)) is not None:
            dense.start_query(query, scope)  # the query embedded beside the lexical part
        maybe_time = has_time_words(query)
        with self._lock, self._snapshot():
            main, found = self._main_scores(match, scope)
            blocks = self._block_scores(match, scope)
            rows = self._candidate_rows(scope, main, blocks, found)
            anchor = self._latest(scope) if maybe_time else None
        dense_query = vectors.query_text(query, {r[3] for r in rows}) if self.embedder else query
        rows = self._add_nearest(dense_query, scope, rows)
        rows, expanded = self._expand_candidates(dense_query, words, scope, rows)
        hint = time_hint(query, anchor)
        events = self._overlapping(rows, hint.events) if hint.events else set()
        wordset = set(words)
        named = {speaker: float(bool(speaker) and set(query_words(speaker)) <= wordset)
                 for speaker in {r[3] for r in rows}}
        get_main, get_block, block_turns = main.get, blocks.get, schema.BLOCK_TURNS
        zeros = [0.0] * len(rows)
        windows = hint.windows
        keys = [(r[1], r[2]) for r in rows]  # (session, position), built once
        speaker = [named[r[3]] for r in rows]
        expanded_col = [expanded.get(r[0], 0.0) for r in rows] if expanded else zeros
        return rows, [
            [get_main(k, 0.0) for k in keys],
            [get_main((s, p - 1), 0.0) for s, p in keys],
            [get_main((s, p + 1), 0.0) for s, p in keys],
            [get_block((s, p // block_turns), 0.0) for s, p in keys],
            speaker,
            [1.0 if any(lo <= r[5] < hi for lo, hi in windows) else 0.0 for r in rows]
            if windows else zeros,
            [1.0 if r[7] else 0.0 for r in rows] if hint.intent else zeros,
            self._dense(dense_query, rows),
            [1.0 if r[0] in events else 0.0 for r in rows] if events else zeros,
            self._naming(words, rows),
            expanded_col,
            rank.listed_column(query, speaker, expanded_col) if expanded else zeros,
        ]

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """The candidate queries in one read transaction on the search connection (one
        WAL snapshot: a write committing meanwhile is seen whole or not at all); nothing
        when searches share the writer's connection (``:memory:``, a subclass)."""
        conn = self._conn
        if conn is self._writer:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def _naming(self, words: list[str], rows: Sequence[_Row]) -> list[float]:
        """The ``named`` signal of each candidate row (all 0 unless the query asks for a
        name); the query's words and every candidate speaker's name words are known.
        Each turn's names are computed once per process (turn text never changes)."""
        if not asks_for_name(words):
            return [0.0] * len(rows)
        known = set(words)
        for speaker in {r[3] for r in rows}:
            known.update(query_words(speaker))
        cache: dict[int, frozenset[str]] | None = getattr(self, "_names", None)
        if cache is None:  # set here, not in __init__: subclasses open their own way
            cache = {}
            self._names = cache
        if len(cache) > NAMES_CACHE:
            cache.clear()
        out = []
        for row in rows:
            stems = cache.get(row[0])
            if stems is None:
                stems = cache[row[0]] = name_stems(row[4])
            out.append(1.0 if names_other(stems, known) else 0.0)
        return out

    def _latest(self, scope: str) -> float | None:
        """The scope's latest turn time: "now" for relative dates in a query."""
        row = self._conn.execute(
            "SELECT max(timestamp) FROM turns WHERE user_id = ?", (scope,)
        ).fetchone()
        return float(row[0]) if row and row[0] is not None else None

    def _overlapping(
        self, rows: list[_Row], periods: Sequence[tuple[float, float]]
    ) -> set[int]:
        """Ids of the candidate turns (those that mention a time) with an event window
        overlapping one of ``periods``."""
        ids = [r[0] for r in rows if r[7]]
        if not ids:
            return set()
        with self._lock:
            found = self._conn.execute(
                "SELECT e.turn_id, e.start_at, e.end_at FROM json_each(?) j"
                " CROSS JOIN turn_events e ON e.turn_id = j.value",
                (json.dumps(ids),),
            ).fetchall()
        return {tid for tid, lo, hi in found if any(lo < p_hi and p_lo < hi
                                                      for p_lo, p_hi in periods)}

    def _add_nearest(self, query: str, scope: str, rows: list[_Row]) -> list[_Row]:
        """``rows`` and the turns nearest the query by vector not among them
        (:data:`vectors.DENSE_DEPTH`; none without an embedder)."""
        dense = getattr(self, "_vectors", None)
        if dense is None or vectors.DENSE_DEPTH <= 0:
            return rows
        have = {r[0] for r in rows}
        extra = [i for i in dense.nearest(dense.query_vector(query), scope) if i not in have]
        if not extra:
            return rows
        with self._lock:
            found = self._conn.execute(
                f"SELECT {_T_COLUMNS} FROM json_each(?) j CROSS JOIN turns t"
                " ON t.id = j.value WHERE t.user_id = ?", (json.dumps(extra), scope),
            ).fetchall()
        return rows + found

    def _dense(self, query: str, rows: list[_Row]) -> list[float]:
        """The ``dense`` signal of each candidate row (all 0 without an embedder)."""
        dense = getattr(self, "_vectors", None)
        if dense is None or not rows:
            return [0.0] * len(rows)
        qvec = dense.query_vector(query)
        return vectors.zscores(dense.cosines(qvec, [r[0] for r in rows]))

    def _main_scores(
        self, match: str, scope: str
    ) -> tuple[dict[tuple[str, int], float], list[_Row]]:
        """The ``MAIN_DEPTH`` best turns by their own BM25: scores by (session, position)
        and the turns' rows (fetched here, so the candidate query skips them).

        When every stored turn is in ``scope`` (one user: the usual store; known to the row
        cache once checked) the word index alone ranks, and the rows come from the row
        cache; the same turns in the same order as the query joined with the turns."""
        conn, cache = self._conn, self._cache
        cache.catch_up(conn)
        if cache.single != scope and conn.execute(
                "SELECT EXISTS(SELECT 1 FROM turns WHERE user_id < ?1)"
                " OR EXISTS(SELECT 1 FROM turns WHERE user_id > ?1)", (scope,)).fetchone()[0]:
            ranked = conn.execute(
                f"SELECT {_T_COLUMNS}, bm25(turns_fts) AS s FROM turns_fts f"
                " JOIN turns t ON t.id = f.rowid WHERE turns_fts MATCH ? AND t.user_id = ?"
                " ORDER BY s LIMIT ?",
                (match, scope, MAIN_DEPTH),
            ).fetchall()
            found: list[_Row] = [tuple(r[:-1]) for r in ranked]
            cache.keep(scope, found)
            scores = [-float(r[-1]) for r in ranked]  # bm25() once per row, negated here
        else:
            cache.single = scope  # every stored turn is in it (kept while catch-ups say so)
            top = cache.postings.top(conn, fts_terms(match), MAIN_DEPTH)  # in process
            if top is None:  # a word FTS5 makes several terms of: the query itself
                top = [(i, -s) for i, s in conn.execute(
                    "SELECT rowid, bm25(turns_fts) AS s FROM turns_fts WHERE turns_fts"
                    " MATCH ? ORDER BY s LIMIT ?", (match, MAIN_DEPTH))]
            found = cache.by_ids(conn, [i for i, _ in top], scope)
            scores = [s for _, s in top]
        return {(r[1], r[2]): s for r, s in zip(found, scores, strict=True)}, found

    def _block_scores(self, match: str, scope: str) -> dict[tuple[str, int], float]:
        found = (self._cache.postings.blocks(self._conn, fts_terms(match), MAIN_DEPTH)
                 if self._cache.single == scope else None)  # in process, as the main
        if found is not None:
            return found
        rows = self._conn.execute(
            "SELECT b.session_id, b.block, bm25(blocks_fts) AS s FROM blocks_fts f"
            " JOIN turn_blocks b ON b.id = f.rowid WHERE blocks_fts MATCH ? AND b.user_id = ?"
            " ORDER BY s LIMIT ?",
            (match, scope, MAIN_DEPTH),
        )
        return {(s, b): -float(v) for s, b, v in rows}

    def _candidate_rows(
        self,
        scope: str,
        main: dict[tuple[str, int], float],
        blocks: dict[tuple[str, int], float],
        found: list[_Row],
    ) -> list[_Row]:
        """``found`` and the other candidates: the main turns' neighbours and the turns
        of the ``SESSION_DEPTH`` best blocks (:func:`.candidates.candidate_rows`)."""
        return candidate_rows(self._conn, self._cache, scope, main, blocks, found, SESSION_DEPTH)
