"""FTS5's ``bm25()`` of the turn index's main query, computed in process from postings
kept in memory: the same turns, the same scores (to the bit) and the same order as
``SELECT rowid, bm25(turns_fts) AS s FROM turns_fts WHERE turns_fts MATCH ? ORDER BY s
LIMIT n`` in the same read snapshot.

Why: FTS5 computes ``bm25()`` for every turn holding any query word (its instances and
its size read per row, about 0.8 µs each), and common words are in most turns, so that
query was most of a recall's CPU. Here each query word's postings (turn id and how often
the turn holds it, grouped by that count and the turn's length in tokens) are read once
and then kept: turns are append-only and never change, so a kept posting is never stale,
and what was stored since is exactly the turns with a larger id, which the row cache's
catch-up (:meth:`.rowcache.RowCache.catch_up`, inside the search's snapshot) hands over
(:meth:`Postings.take`). A search then computes one score per (count, length) group of a
word, and sums them per turn. The session blocks' BM25 (``blocks_fts``, :meth:`Postings.blocks`)
likewise: a block's text is its turns' texts, one per line, so each new turn adds
its counts and its length to its block's. A store of up to :data:`VOCABULARY_TURNS` turns
also keeps its whole vocabulary, so a query word no turn holds needs no FTS5 query. A
process's first search runs the FTS5 queries (reading postings costs more than one query:
a one-shot command searches once).

Exactness, as ``fts5Bm25Function`` (SQLite's ``fts5_aux.c``) computes it: the table's row
and token counts are read from FTS5's own averages record in the same snapshot; a
phrase's idf is ``log((N - n + 0.5) / (n + 0.5))`` (``1e-6`` when not positive) with
``n`` the turns holding it; a turn's score sums each phrase's term in query order with
the same float operations in the same order (Python floats are C doubles, ``math.log``
the C library's); ``ORDER BY s LIMIT n`` keeps ties in the order FTS5 returned them
(rowid order), so ties go to the older turn. Words are turned into FTS5 terms by FTS5
itself (:func:`tokens`: an in-memory table with the same tokenizer and ``fts5vocab``),
once per word; a new turn's ASCII text is split as ``unicode61`` splits it (runs of ASCII
letters and digits), other text by FTS5 whole. A query word that is not exactly one FTS5
term (a phrase of several, or none) makes :meth:`Postings.top` return None: the caller
then runs the SQL query.

With numpy installed, a term's postings are also kept as columns and the top is computed
with array operations (:mod:`.bm25_arrays`, :data:`ARRAYS`), to the same bits.

The query expansion's words (:mod:`.expand`) are looked up here too
(:meth:`Postings.holders`): each word's turns, read once by its FTS5 phrase query and then
followed by the catch-up like the postings.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import sys
import threading
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import add, ge, itemgetter
from typing import Any

from memoryport.storage.turns import bm25_arrays

__all__ = ["ARRAYS", "ARRAYS_IMPORT_TURNS", "BLOCKS_MAX", "POSTINGS_MAX", "TERM_MAX",
           "TOKENIZER", "VOCABULARY_AFTER", "VOCABULARY_MAX", "VOCABULARY_TURNS", "WORDS_MAX",
           "Postings", "first_varint", "tokens", "varints"]

TOKENIZER = "porter unicode61"
"""The turn index's FTS5 tokenizer (``schema.m001_turns``)."""
POSTINGS_MAX = 1_000_000
"""How many (word, turn) postings a cache holds at most (cleared when past it)."""
WORDS_MAX = 50_000
"""How many query words' FTS5 terms a cache remembers (cleared when past it)."""
VOCABULARY_TURNS = 50_000
"""Up to this many stored turns, a cache reads the store's whole vocabulary (each term and
how many turns hold it) once and keeps it up to date, so a query word no turn holds costs
no FTS5 query; above, each new word is looked up."""
VOCABULARY_MAX = 300_000
"""The most terms a kept vocabulary holds (dropped, and not read again, when past it)."""
TERM_MAX = 200_000
"""A word held by more turns than this is ranked by the FTS5 query (its postings are not
read: a search would pay more for them than the query costs)."""
VOCABULARY_AFTER = 32
"""A cache reads the vocabulary once it has looked up this many new words in FTS5 (a
one-shot process never pays for reading it)."""
BLOCKS_MAX = 200_000
"""How many session blocks' ids a cache remembers (cleared when past it)."""
ARRAYS = bm25_arrays.AVAILABLE
"""Whether a cache created now keeps each term's postings as columns too and computes the
top with numpy (:mod:`.bm25_arrays`; installed with the ``embeddings`` extra) once numpy
is imported: by the model (the ``embeddings`` extra with its model), by the application,
or here once the store holds more than :data:`ARRAYS_IMPORT_TURNS` turns."""
ARRAYS_IMPORT_TURNS = 5_000
"""Past this many stored turns a search imports numpy for the top if nothing has (about
0.1 s and 12 MB once; at 20,000 turns it saves ~1.5 ms a search); below, it ranks with
the Python loop until numpy is imported."""
_COMPOUND = 100  # phrase queries per statement (SQLite allows 500 compound SELECTs)

_ASCII_RUN = re.compile(r"[a-z0-9]+")  # unicode61's tokens of lower-cased ASCII text
_K1 = 1.2  # fts5_aux.c's constants
_B = 0.75
_Group = dict[tuple[int, int], list[int]]  # (count in the turn, turn length) -> turn ids


def _idf(rows: int, hits: int) -> float:
    """A phrase's idf as ``fts5Bm25Function`` computes it: ``log((N - n + 0.5) / (n + 0.5))``
    for ``n`` of ``N`` rows holding it, ``1e-6`` when not positive."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


_tokenizer: sqlite3.Connection | None = None  # one in-memory FTS5 table per process
_tokenizer_lock = threading.Lock()


def tokens(texts: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(rowid, term)`` of every token FTS5 makes of each ``(rowid, text)``: an in-memory
    table with the turn index's tokenizer (one per process, emptied after each call)."""
    global _tokenizer
    with _tokenizer_lock:
        conn = _tokenizer
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(body, content='',"
                         f" tokenize='{TOKENIZER}')")
            conn.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(words, instance)")
            _tokenizer = conn
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO words(rowid, body) VALUES (?, ?)", texts)
            found: list[tuple[int, str]] = conn.execute("SELECT doc, term FROM terms").fetchall()
        finally:
            conn.execute("INSERT INTO words(words) VALUES ('delete-all')")
            conn.execute("COMMIT")
        return found


def varints(blob: bytes) -> list[int]:
    """The SQLite-format varints (big-endian 7-bit groups) FTS5 stores in ``blob``."""
    out: list[int] = []
    value = width = 0
    for byte in blob:
        width += 1
        if width == 9:  # a varint's 9th byte holds 8 bits
            out.append((value << 8) | byte)
            value = width = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = width = 0
    return out


def first_varint(blob: bytes) -> int:
    """The first of :func:`varints` (a row's size in a one-column ``*_docsize`` table):
    the byte itself when it is below 128 (sizes under 128 tokens), without a loop."""
    return blob[0] if blob and blob[0] < 0x80 else varints(blob)[0]


class Postings:
    """The postings of the query words of one turn index's searches (not thread-safe:
    the index calls it under its search lock, inside one read transaction)."""

    def __init__(self, block_turns: int) -> None:
        self.block_turns = block_turns
        self.seen = 0
        """The largest turn id the postings account for."""
        self._terms: dict[str, _Group] = {}  # FTS5 term -> its postings, grouped
        self._columns: dict[str, bm25_arrays.Columns] | None = {} if ARRAYS else None
        self._np: Any = None  # numpy, imported at the first search that scores with it
        self._hits: dict[str, int] = {}  # FTS5 term -> how many turns hold it
        self._lengths: dict[int, int] = {}  # turn id -> its length in tokens
        self._in_blocks: dict[str, dict[int, int]] = {}  # term -> block id -> count
        self._block_lengths: dict[int, int] = {}  # block id -> its length in tokens
        self._blocks: dict[int, tuple[str, str, int]] = {}  # id -> (scope, session, number)
        self._block_ids: dict[tuple[str, str, int], int] = {}
        self._blocks_seen = 0  # the largest block id read
        self.averages: tuple[bytes | None, bytes | None] | None = None
        """FTS5's averages records of ``turns_fts`` and ``blocks_fts``, read by the row
        cache's catch-up at the start of each search (in its snapshot); None: read here."""
        self._vocabulary: dict[str, int] | None = None  # term -> turns holding it
        self._vocabulary_off = False  # it grew past VOCABULARY_MAX once
        self._lookups = 0  # words looked up in FTS5 (no vocabulary kept)
        self._searches = 0
        self._size = 0  # postings held
        self._words: dict[str, str | None] = {}  # query word -> its one FTS5 term
        self._vocab: sqlite3.Connection | None = None  # the connection with the vocab table
        self._holders: dict[str, list[int]] = {}  # expansion term -> turns holding it
        self._over: dict[str, int] = {}  # expansion term -> a count its turns exceed

    def clear(self) -> None:
        """Forget every posting (the word-to-term memory stays: it does not depend on the
        store)."""
        self._terms.clear()
        if self._columns is not None:
            self._columns.clear()
        self._hits.clear()
        self._lengths.clear()
        self._in_blocks.clear()
        self._block_lengths.clear()
        self._vocabulary = None
        self._holders.clear()
        self._over.clear()
        self._size = 0

    def take(self, conn: sqlite3.Connection, before: int, top: int,
             rows: Sequence[Sequence[Any]] | None) -> None:
        """Account for the turns stored since: ``rows`` are ``(id, user scope, session,
        position, speaker, text, ...)`` of every turn with an id above ``before`` up to
        ``top`` (None when they were not read: the postings are dropped)."""
        if rows is None or before != self.seen:
            self.clear()
        elif rows and (self._terms or self._holders or self._vocabulary is not None):
            self._add(conn, rows)
        self.seen = top

    def _add(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> None:
        terms, lengths, in_blocks = self._terms, self._lengths, self._in_blocks
        columns = self._columns
        per_turn = sorted(self._counts([(r[0], r[4], r[5]) for r in rows]),
                          key=itemgetter(0))  # in id order: the columns' order
        vocabulary = self._vocabulary
        if vocabulary is not None:
            for _, counts in per_turn:
                for term in counts:
                    vocabulary[term] = vocabulary.get(term, 0) + 1
            if len(vocabulary) > VOCABULARY_MAX:
                self._vocabulary, self._vocabulary_off = None, True
        holders = self._holders
        if holders:  # ids grow: each kept list stays in id order
            for turn_id, counts in per_turn:
                for term in counts:
                    ids = holders.get(term)
                    if ids is not None:
                        ids.append(turn_id)
                        self._size += 1
        if not terms:
            if self._size > POSTINGS_MAX:
                self.clear()
            return
        where = {row[0]: (row[1], row[2], row[3] // self.block_turns) for row in rows}
        if not all(key in self._block_ids for key in where.values()):
            self._read_blocks(conn)  # a new block (ids never change: read once)
        grown: dict[int, int] = {}  # block id -> tokens added to its text
        for turn_id, counts in per_turn:
            block = self._block_ids.get(where[turn_id])
            if block is None:  # not stored as the writer stores blocks: start over
                self.clear()
                return
            length = sum(counts.values())
            grown[block] = grown.get(block, 0) + length
            for term, count in counts.items():
                group = terms.get(term)
                if group is not None:
                    group.setdefault((count, length), []).append(turn_id)
                    if columns is not None:
                        columns[term].append(turn_id, count, length)
                    self._hits[term] += 1
                    lengths[turn_id] = length
                    held = in_blocks[term]
                    held[block] = held.get(block, 0) + count
                    self._size += 1
        # A block's text is its turns' texts, one per line: its length grows by theirs.
        block_lengths, unknown = self._block_lengths, []
        for block, added in grown.items():
            if block in block_lengths:
                block_lengths[block] += added
            else:
                unknown.append(block)
        self._read_block_lengths(conn, unknown)
        if self._size > POSTINGS_MAX:
            self.clear()

    def _read_blocks(self, conn: sqlite3.Connection) -> None:
        """Take in the session blocks created since (their ids never change)."""
        blocks, ids = self._blocks, self._block_ids
        if len(blocks) > BLOCKS_MAX:
            blocks.clear()
            ids.clear()
            self._blocks_seen = 0
        for block_id, scope, session, number in conn.execute(
                "SELECT id, user_id, session_id, block FROM turn_blocks WHERE id > ?",
                (self._blocks_seen,)):
            blocks[block_id] = (scope, session, number)
            ids[(scope, session, number)] = block_id
            self._blocks_seen = max(self._blocks_seen, block_id)

    def _read_block_lengths(self, conn: sqlite3.Connection, block_ids: list[int]) -> None:
        if block_ids:
            for block_id, size in conn.execute(
                    "SELECT d.id, d.sz FROM json_each(?) j CROSS JOIN blocks_fts_docsize d"
                    " ON d.id = j.value", (json.dumps(block_ids),)):
                self._block_lengths[block_id] = first_varint(size)

    def _counts(self, rows: Sequence[tuple[int, str, str]]
                ) -> list[tuple[int, dict[str, int]]]:
        """How often each turn holds each FTS5 term, as FTS5 indexed ``"Speaker: text"``.
        An ASCII text is split as ``unicode61`` splits it (runs of ASCII letters and
        digits, lower-cased) and each run mapped to its term (:meth:`_terms_of`: by FTS5
        itself, once per word); other texts are tokenized by FTS5 whole."""
        out: list[tuple[int, dict[str, int]]] = []
        other: list[tuple[int, str]] = []
        runs: list[tuple[int, list[str]]] = []
        for turn_id, speaker, text in rows:
            body = f"{speaker}: {text}" if speaker else text
            if body.isascii():
                runs.append((turn_id, _ASCII_RUN.findall(body.lower())))
            else:
                other.append((turn_id, body))
        if runs:
            self._terms_of([w for _, words in runs for w in words])
            known = self._words
            for turn_id, words in runs:
                counts: dict[str, int] = {}
                for word in words:
                    term = known.get(word)
                    if term is None:  # not one term (never seen): FTS5 tokenizes the text
                        other.append((turn_id, " ".join(words)))
                        break
                    counts[term] = counts.get(term, 0) + 1
                else:
                    out.append((turn_id, counts))
        if other:
            found: dict[int, dict[str, int]] = {}
            for turn_id, term in self._tokens(other):
                counts = found.setdefault(turn_id, {})
                counts[term] = counts.get(term, 0) + 1
            out.extend(found.items())
        return out

    def _tokens(self, texts: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
        """``(rowid, term)`` of every token FTS5 makes of each text (:func:`tokens`)."""
        return tokens(texts)

    def _terms_of(self, words: Sequence[str]) -> list[str] | None:
        """The FTS5 term of each word (None when one is not exactly one term). Porter
        leaves a token alone when it is shorter than 3 characters or ends in a digit
        (every rule it applies removes or changes a final letter), so such ASCII runs
        are their own term; other words are tokenized by FTS5 (once, then kept)."""
        known = self._words
        unknown = [w for w in dict.fromkeys(words) if w not in known]
        if unknown:
            if len(known) + len(unknown) > WORDS_MAX:
                known.clear()
                unknown = list(dict.fromkeys(words))
            ask = []
            for word in unknown:
                if word.isascii() and (len(word) < 3 or word[-1].isdigit()) and (
                        _ASCII_RUN.fullmatch(word)):
                    known[word] = word
                else:
                    ask.append(word)
            found: dict[int, list[str]] = {}
            for at, term in self._tokens((i + 1, w) for i, w in enumerate(ask)) if ask else ():
                found.setdefault(at, []).append(term)
            for i, word in enumerate(ask):
                terms = found.get(i + 1, [])
                known[word] = terms[0] if len(terms) == 1 else None
        out = [known.get(w) for w in words]
        return None if None in out else [t for t in out if t is not None]

    def _load(self, conn: sqlite3.Connection, term: str) -> _Group | None:
        """Read ``term``'s postings and the lengths of the turns holding it (None when more
        than :data:`TERM_MAX` turns hold it: they are not read)."""
        if self._vocab is not conn:
            read_only = conn.execute("PRAGMA query_only").fetchone()[0]
            if read_only:
                conn.execute("PRAGMA query_only=0")  # temp tables only, in memory
            try:
                for table in ("turns_fts", "blocks_fts"):
                    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances"
                                 f" USING fts5vocab(main, {table}, instance)")
                conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.turns_fts_terms"
                             " USING fts5vocab(main, turns_fts, row)")
            finally:
                if read_only:
                    conn.execute("PRAGMA query_only=1")
            self._vocab = conn
        counts: list[tuple[int, int]] = []
        in_blocks: dict[int, int] = {}
        vocabulary = self._vocabulary
        self._lookups += vocabulary is None
        if vocabulary is None and not self._vocabulary_off and self.seen <= VOCABULARY_TURNS \
                and self._lookups > VOCABULARY_AFTER:  # worth reading once: words keep coming
            vocabulary = self._vocabulary = dict(
                conn.execute("SELECT term, doc FROM temp.turns_fts_terms").fetchall())
        if vocabulary is not None:
            hits = vocabulary.get(term, 0)
        else:
            found = conn.execute("SELECT doc FROM temp.turns_fts_terms WHERE term = ?",
                                 (term,)).fetchone()
            hits = found[0] if found is not None else 0
        if hits > TERM_MAX:  # more than a search should read: the query ranks it
            return None
        if hits:
            counts = conn.execute(
                "SELECT doc, count(*) FROM temp.turns_fts_instances WHERE term = ?"
                " GROUP BY doc", (term,)).fetchall()
            in_blocks = dict(conn.execute(
                "SELECT doc, count(*) FROM temp.blocks_fts_instances WHERE term = ?"
                " GROUP BY doc", (term,)).fetchall())
            self._read_blocks(conn)
            self._read_block_lengths(
                conn, [b for b in in_blocks if b not in self._block_lengths])
        self._in_blocks[term] = in_blocks
        lengths = self._lengths
        missing = [doc for doc, _ in counts if doc not in lengths]
        if missing:
            for doc, size in conn.execute(
                    "SELECT d.id, d.sz FROM json_each(?) j CROSS JOIN turns_fts_docsize d"
                    " ON d.id = j.value", (json.dumps(missing),)):
                lengths[doc] = first_varint(size)
        self._size += len(in_blocks)
        return self._keep(term, counts)

    def _keep(self, term: str, counts: list[tuple[int, int]]) -> _Group:
        """Keep ``term``'s postings ``(turn id, count)``: grouped by (count, length), and
        as columns in id order when numpy scores."""
        lengths = self._lengths
        group: _Group = {}
        for doc, count in counts:
            group.setdefault((count, lengths[doc]), []).append(doc)
        self._terms[term] = group
        if self._columns is not None:
            self._columns[term] = bm25_arrays.Columns.of(_K1, _B, counts, lengths)
        self._hits[term] = len(counts)
        self._size += len(counts)
        return group

    def top(self, conn: sqlite3.Connection, words: Sequence[str], depth: int
            ) -> list[tuple[int, float]] | None:
        """``(turn id, score)`` of the ``depth`` best turns for the FTS5 query ORing the
        phrases ``words`` (``rank.fts_query``'s terms, in order), best first; the score
        is ``-bm25()``. None when a word is not exactly one FTS5 term (run the query)."""
        self._searches += 1
        if self._searches == 1:  # the only one of a one-shot process: the query costs less
            return None
        terms = self._terms_of(words)
        if terms is None:
            return None
        kept = self._terms
        groups = []
        for term in terms:
            group = kept[term] if term in kept else self._load(conn, term)
            if group is None:
                return None
            groups.append(group)
        columns = ([self._columns[term] for term in terms]
                   if self._columns is not None else None)
        if self._size > POSTINGS_MAX:  # kept for this search, dropped after
            self.clear()
        stats = self._averages(conn, 0)
        if stats is None:  # no turn stored yet
            return []
        rows, avgdl = stats
        hits = [self._hits.get(term) for term in terms]  # None: dropped (bounds): count
        idfs = [_idf(rows, n if n is not None else sum(map(len, group.values())))
                for n, group in zip(hits, groups, strict=True)]
        if columns is not None and self._np is None and (
                "numpy" in sys.modules or self.seen > ARRAYS_IMPORT_TURNS):
            self._np = bm25_arrays.numpy()
        if columns is not None and self._np is not None:
            found = bm25_arrays.top(self._np, columns, idfs, avgdl, depth, _K1, _B)
            if found is not None:
                return found
        k1, b, k1_plus = _K1, _B, _K1 + 1.0
        scores: dict[int, float] = {}
        get = scores.get
        for at, (idf, group) in enumerate(zip(idfs, groups, strict=True)):
            for (count, length), docs in group.items():
                freq = float(count)
                part = idf * ((freq * k1_plus) / (freq + k1 * (1 - b + b * length / avgdl)))
                if at == 0:
                    scores.update(dict.fromkeys(docs, part))
                else:  # scores[doc] = get(doc, 0.0) + part, looped in C
                    scores.update(zip(docs, map(add, map(get, docs, repeat(0.0)),
                                                repeat(part)), strict=False))
        # Best score first, ties oldest first (sorted by id, then a stable sort by score),
        # only those at or above the depth-th score: sorts and filters looped in C.
        values = scores.values()
        if len(scores) > depth:
            floor = sorted(values, reverse=True)[depth - 1]
            best = sorted(compress(scores, map(ge, values, repeat(floor))))
        else:
            best = sorted(scores)
        best.sort(key=scores.__getitem__, reverse=True)
        return [(doc, scores[doc]) for doc in best[:depth]]

    def blocks(self, conn: sqlite3.Connection, words: Sequence[str], depth: int
               ) -> dict[tuple[str, int], float] | None:
        """The ``depth`` best session blocks for the same query over ``blocks_fts`` (a
        block's text is its turns' texts, one per line, so its counts and length are
        their sums): ``(session, block number) -> -bm25()``, best first, as the FTS5
        query orders them. None when :meth:`top` would be (and when it did not run)."""
        terms = self._terms_of(words)
        if terms is None or any(t not in self._in_blocks for t in terms):
            return None
        stats = self._averages(conn, 1)
        if stats is None:
            return {}
        rows, avgdl = stats
        helds = [self._in_blocks[term] for term in terms]
        idfs = [_idf(rows, len(held)) for held in helds]
        lengths, named = self._block_lengths, self._blocks
        if self._columns is not None and self._np is not None:  # as top(), which ran first
            return {(named[block][1], named[block][2]): s for block, s in bm25_arrays.block_top(
                self._np, helds, idfs, lengths, avgdl, depth, _K1, _B)}
        k1, b, k1_plus = _K1, _B, _K1 + 1.0
        scores: dict[int, float] = {}
        for held, idf in zip(helds, idfs, strict=True):
            for block, count in held.items():
                freq = float(count)
                part = idf * ((freq * k1_plus) / (
                    freq + k1 * (1 - b + b * lengths[block] / avgdl)))
                scores[block] = scores.get(block, 0.0) + part
        ranked = sorted((-s, block) for block, s in scores.items())[:depth]
        return {(named[block][1], named[block][2]): -s for s, block in ranked}

    def holders(self, conn: sqlite3.Connection, words: Sequence[str], most: int
                ) -> tuple[int, list[list[int] | None]] | None:
        """``(rows, held)``: how many turns are stored (``turns_fts``'s rows, in this
        snapshot) and, for each of ``words``, the ids of the turns holding it (what the
        FTS5 phrase query ``"word"`` finds, in id order), or None when more than ``most``
        turns hold it. None when a word is not exactly one FTS5 term (run the queries).
        The lists are the kept ones: use them before the next catch-up, unchanged.

        A word's turns are read once, by that phrase query, up to ``most + 1`` of them (a
        word in more turns is not kept, only that fact; with the kept vocabulary its
        count says so without a query), the words not kept yet in one statement; then
        :meth:`take` adds the new turns holding them."""
        terms = self._terms_of(words)
        if terms is None:
            return None
        holders, vocabulary = self._holders, self._vocabulary
        if len(holders) + len(self._over) + len(terms) > WORDS_MAX:  # bounded: start over
            self._size -= sum(map(len, holders.values()))
            holders.clear()
            self._over.clear()
        ask: dict[str, str] = {}  # FTS5 term -> the (first) word to read it by
        for word, term in zip(words, terms, strict=True):
            if term in holders or term in ask or self._above(term, most):
                continue
            if vocabulary is not None and term not in vocabulary:  # no turn holds it
                holders[term] = []
            else:
                ask[term] = word
        if ask:
            self._read_holders(conn, ask, most)
        held: list[list[int] | None] = []
        for term in terms:
            ids = holders.get(term)
            held.append(ids if ids is not None and len(ids) <= most else None)
        if self._size > POSTINGS_MAX:  # kept for this search, dropped after
            self.clear()
        stats = self._averages(conn, 0)
        return (stats[0] if stats is not None else 0), held

    def _above(self, term: str, most: int) -> bool:
        """Whether more than ``most`` turns are known to hold ``term``."""
        vocabulary = self._vocabulary
        return self._over.get(term, -1) >= most or (
            vocabulary is not None and vocabulary.get(term, 0) > most)

    def _read_holders(self, conn: sqlite3.Connection, ask: dict[str, str], most: int
                      ) -> None:
        """Read the turns holding each term of ``ask`` (by its word's phrase query, up to
        ``most + 1`` of them): kept when at most ``most``, else noted as too many."""
        holders, over = self._holders, self._over
        order = list(ask)
        found: list[list[int]] = [[] for _ in order]
        for start in range(0, len(order), _COMPOUND):
            part = order[start:start + _COMPOUND]
            params: list[object] = []
            for term in part:
                params += ['"' + ask[term].replace('"', '""') + '"', most + 1]
            for at, doc in conn.execute(" UNION ALL ".join(
                    f"SELECT * FROM (SELECT {start + n}, rowid FROM turns_fts"
                    " WHERE turns_fts MATCH ? LIMIT ?)" for n in range(len(part))), params):
                found[at].append(doc)
        for term, ids in zip(order, found, strict=True):
            if len(ids) > most:
                over[term] = max(most, over.get(term, most))
            else:
                holders[term] = ids
                self._size += len(ids)

    def _averages(self, conn: sqlite3.Connection, which: int) -> tuple[int, float] | None:
        """``(rows, average row length in tokens)`` of ``turns_fts`` (``which`` 0) or
        ``blocks_fts`` (1), from FTS5's own averages record (None when it holds no row)."""
        if self.averages is not None:
            record = self.averages[which]
        else:
            table = ("turns_fts", "blocks_fts")[which]
            found = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
            record = found[0] if found is not None else None
        counts = varints(record) if record is not None else []  # rows, then tokens
        if len(counts) < 2 or counts[0] <= 0:
            return None
        return counts[0], counts[1] / counts[0]
