"""Query expansion through the stored vocabulary (the ``expand`` signal; needs a model).

With the ``embeddings`` extra's model, every distinct word of the stored turns is embedded
once (by the background writer of :class:`.vectors.DenseIndex`, table ``turn_words``).
A query's vector is compared with those word vectors: the :data:`TERMS` nearest words
(cosine at least :data:`FLOOR`; not a word of the query, nor sharing its first five
letters with one, nor a speaker's name) are the query's expansion terms. "What
instruments does Melanie play?" expands to piano, violin, guitar, clarinet, ...; "What
animal do both Nate and Joanna like?" to pets, reptiles, turtles, ... — the words of
the answers of list-style questions, which share no word with the question.

A turn's ``expand`` score is the sum over the expansion terms it contains (FTS5, Porter
stemmer) of the term's cosine times its BM25 idf in the scope; the :data:`DEPTH` best
such turns join the candidates. Deterministic, no LLM, nothing downloaded. LoCoMo dev
(docs/holographic.md): categories 1-4 R@5 / R@10 0.737 / 0.803 -> 0.741 / 0.808,
multi-hop R@10 0.459 -> 0.477, open-domain 0.464 -> 0.503.
"""

from __future__ import annotations

import math
import re
import sqlite3
from array import array
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from memoryport.storage.sessions.query import STOPWORDS

if TYPE_CHECKING:
    from memoryport.storage.turns.bm25 import Postings

__all__ = ["DEPTH", "FLOOR", "TERMS", "Vocabulary", "query_vector", "scores", "terms",
           "words_of"]

TERMS = 20
"""How many vocabulary words expand a query at most."""
FLOOR = 0.35
"""The least query-word cosine of an expansion term (MiniLM: unrelated words lie under
0.3; "instruments" -> "violin" 0.60, "animal" -> "turtles" 0.38)."""
DEPTH = 30
"""How many turns with the best ``expand`` score join the candidates."""
COMMON = 2000
"""A term found in more turns of the scope than this is skipped (its idf is near 0 and
reading its turns would cost more than it gives)."""
_WORD = re.compile(r"[^\W\d_]+")
_MIN, _MAX = 3, 24


def words_of(text: str) -> set[str]:
    """The vocabulary words of ``text``: lower-cased letter runs of 3-24 letters that are
    not stopwords."""
    return {w for w in _WORD.findall(text.lower())
            if _MIN <= len(w) <= _MAX and w not in STOPWORDS}


class Vocabulary:
    """Word vectors in memory: words and a float32 matrix grown by doubling, and for each
    user scope loaded the words its turns hold (a query expands through those only)."""

    def __init__(self, np: Any, dim: int) -> None:
        self.np = np
        self.words: list[str] = []
        self.rows: dict[str, int] = {}
        self.data = np.zeros((256, dim), dtype=np.float32)
        self._scopes: dict[str, set[str]] = {}
        self._picks: dict[str, tuple[int, int, Any]] = {}  # scope -> sizes, vocab rows

    def add(self, word: str, blob: bytes) -> None:
        """Keep ``word``'s vector (float32 bytes of the matrix's width; others ignored)."""
        if word in self.rows or len(blob) != 4 * self.data.shape[1]:
            return
        if len(self.words) == len(self.data):
            grown = self.np.zeros((2 * len(self.data), self.data.shape[1]), dtype=self.np.float32)
            grown[: len(self.words)] = self.data
            self.data = grown
        self.rows[word] = len(self.words)
        self.data[len(self.words)] = self.np.frombuffer(blob, dtype=self.np.float32)
        self.words.append(word)

    def has_scope(self, scope: str) -> bool:
        """Whether ``scope``'s words are loaded."""
        return scope in self._scopes

    def load_scope(self, scope: str, words: Iterable[str]) -> None:
        """Set the words ``scope``'s turns hold (as stored)."""
        self._scopes[scope] = set(words)

    def occurs(self, scope: str, word: str) -> None:
        """Note that a turn of ``scope`` holds ``word`` (kept only once the scope is
        loaded: loading reads the stored pairs)."""
        held = self._scopes.get(scope)
        if held is not None:
            held.add(word)

    def _scope_rows(self, scope: str) -> Any:
        """The vocabulary rows of ``scope``'s words that have a vector (rebuilt when the
        words or the vectors grew)."""
        held = self._scopes.get(scope, set())
        sizes = (len(held), len(self.words))
        pick = self._picks.get(scope)
        if pick is None or pick[:2] != sizes:
            found = sorted(self.rows[w] for w in held if w in self.rows)
            pick = (*sizes, self.np.array(found, dtype=self.np.int64))
            self._picks[scope] = pick
        return pick[2]

    def vector(self, scope: str, word: str) -> Any:
        """The stored vector of ``word`` when ``scope``'s turns hold it (a float32 row),
        else None."""
        row = self.rows.get(word)
        if row is None or word not in self._scopes.get(scope, ()):
            return None
        return self.data[row]

    def nearest(self, query: bytes, depth: int, floor: float, scope: str
                ) -> list[tuple[str, float]]:
        """The ``depth`` words of ``scope`` nearest ``query`` (float32 bytes) with cosine
        >= ``floor``, nearest first."""
        count = len(self.words)
        if not count or len(query) != 4 * self.data.shape[1]:
            return []
        rows = self._scope_rows(scope)
        if not len(rows):
            return []
        sims = (self.data[:count] @ self.np.frombuffer(query, dtype=self.np.float32))[rows]
        depth = min(depth, len(rows))
        part = self.np.argpartition(-sims, depth - 1)[:depth]
        top = part[self.np.argsort(-sims[part], kind="stable")]
        return [(self.words[rows[i]], float(sims[i])) for i in top.tolist() if sims[i] >= floor]


def query_vector(query: array[float], text: str, scope: str, vocabulary: Vocabulary,
                 encoder: Any) -> array[float]:
    """The vector an expansion is looked up with when the query's vector came from the
    query encoder (:mod:`.query_encoder`) rather than the model: that vector plus, with
    equal weight, the sum of the model's vectors of the query's own words
    (:func:`words_of` of ``text``, the query as embedded: without the speakers' names),
    each the word's stored vector when ``scope``'s turns hold it, else the encoder's
    :meth:`~.query_encoder.QueryEncoder.word_vector`; both unit length, the sum too.

    Expansion terms are single words compared with single words' vectors; the encoder's
    sentence vector is fitted to the model's vectors of whole turns, and alone it finds
    terms the model's own query vector would not (LoCoMo dev, categories 1-4, with the
    encoder: open-domain R@10 0.460, 0.483 with the model's query vector for the expansion
    only). With this vector: categories 1-4 R@5 / R@10 0.723 / 0.807 -> 0.728 / 0.812,
    open-domain 0.460 -> 0.499, weights fitted on one half and scored on the other
    0.739 / 0.810 -> 0.741 / 0.813 and 0.704 / 0.787 -> 0.709 / 0.785
    (docs/holographic.md). The same query always gives the same vector in a scope whose
    vocabulary did not change."""
    np = vocabulary.np
    total = np.zeros(len(query), dtype=np.float32)
    for word in sorted(words_of(text)):
        held = vocabulary.vector(scope, word)
        row = held if held is not None else encoder.word_vector(word)
        norm = float(np.linalg.norm(row))
        if norm > 0:
            total += row / norm
    norm = float(np.linalg.norm(total))
    if norm == 0:
        return query
    mixed = total / norm + np.frombuffer(query.tobytes(), dtype=np.float32)
    mixed /= max(float(np.linalg.norm(mixed)), 1e-9)
    return array("f", mixed.astype(np.float32).tobytes())


def _related(word: str, other: str) -> bool:
    """Whether two words are forms of one another (same first five letters, or equal)."""
    return word[:5] == other[:5] if min(len(word), len(other)) >= 5 else word == other


def terms(nearest: Iterable[tuple[str, float]], query_words: Sequence[str],
          speakers: Iterable[str]) -> list[tuple[str, float]]:
    """The first :data:`TERMS` of ``nearest`` (word, cosine) that are not a query word
    (or a form of one) nor a word of a speaker's name."""
    asked = [w for w in query_words if w not in STOPWORDS]
    names = {w for speaker in speakers for w in _WORD.findall(speaker.lower())}
    out: list[tuple[str, float]] = []
    for word, sim in nearest:
        if word in names or any(_related(word, w) for w in asked):
            continue
        out.append((word, sim))
        if len(out) >= TERMS:
            break
    return out


def scores(conn: sqlite3.Connection, scope: str, expansion: Sequence[tuple[str, float]],
           postings: Postings | None = None) -> dict[int, float]:
    """Each turn of ``scope`` holding an expansion term: the sum of its terms' cosine
    times BM25 idf, ``log(1 + (N - n + 0.5) / (n + 0.5))`` with ``N`` the scope's turns
    and ``n`` those holding the term; terms in more than :data:`COMMON` turns are
    skipped.

    ``postings``: the row cache's (:meth:`.bm25.Postings.holders`) when ``scope`` is the
    file's only user and the caller holds the search lock, inside a read snapshot, after
    the cache's catch-up. They know each term's turns from memory (``N`` is then FTS5's
    row count: every turn is the scope's); without them, or when a word is not one FTS5
    term, one FTS5 lookup per term, all in one statement with the scope's turn count.
    Either way the same turns and the same sums, to the bit."""
    if not expansion:
        return {}
    found = (postings.holders(conn, [w for w, _ in expansion], COMMON)
             if postings is not None else None)
    total, held = found if found is not None else _holders(conn, scope, expansion)
    out: dict[int, float] = {}
    for (_, sim), ids in zip(expansion, held, strict=True):
        if not ids:  # none, or too many
            continue
        weight = sim * math.log(1 + (total - len(ids) + 0.5) / (len(ids) + 0.5))
        for turn_id in ids:  # (a loop in C, as bm25.top's, is slower for ~10 turns)
            out[turn_id] = out.get(turn_id, 0.0) + weight
    return out


def _holders(conn: sqlite3.Connection, scope: str, expansion: Sequence[tuple[str, float]]
             ) -> tuple[int, list[list[int] | None]]:
    """The scope's turn count and each term's turns in it (None: more than
    :data:`COMMON`): one FTS5 phrase query per term, all in one statement."""
    parts = ["SELECT -1, count(*) FROM turns WHERE user_id = ?"]
    params: list[object] = [scope]
    for n, (word, _) in enumerate(expansion):
        parts.append(f"SELECT * FROM (SELECT {n}, t.id FROM turns_fts f CROSS JOIN turns t"
                     " ON t.id = f.rowid WHERE turns_fts MATCH ? AND t.user_id = ? LIMIT ?)")
        params += [f'"{word}"', scope, COMMON + 1]
    found: list[list[int]] = [[] for _ in expansion]
    total = 0
    for term, turn_id in conn.execute(" UNION ALL ".join(parts), params):
        if term < 0:
            total = int(turn_id)
        else:
            found[term].append(turn_id)
    return total, [ids if len(ids) <= COMMON else None for ids in found]


Row = tuple[int, str, int, str, str, float, str, int]


def candidates(index: Any, query: str, query_words: Sequence[str], scope: str,
               rows: list[Row]) -> tuple[list[Row], dict[int, float]]:
    """``rows`` and the :data:`DEPTH` turns of ``scope`` with the best ``expand`` score
    not among them, and each turn's score (``rows`` and ``{}`` without a model or word
    vectors, or when the index's ``expand`` weight is 0: then the signal is off and adds
    no candidate either; a PostgreSQL index has no vector writer, so no expansion).

    ``index`` is the :class:`~.index.TurnIndex` searching: its vectors, its search
    connection and lock (not held by the caller) and its row cache."""
    dense = getattr(index, "_vectors", None)
    if dense is None or not rows or not index.weights.expand:
        return rows, {}
    expansion = dense.expansion(dense.query_vector(query), query_words, {r[3] for r in rows},
                                scope, text=query)
    if not expansion:
        return rows, {}
    conn, cache = index._conn, index._cache
    with index._lock:
        single = cache.single == scope  # the file's only user: the postings answer
        with index._snapshot() if single else nullcontext():
            if single:
                cache.catch_up(conn)  # the turns stored since the search's snapshot
            found = scores(conn, scope, expansion,
                           cache.postings if cache.single == scope else None)
            have = {r[0] for r in rows}
            best = sorted(found, key=lambda i: (-found[i], i))[:DEPTH]
            extra = [i for i in best if i not in have]
            return (rows + cache.by_ids(conn, extra, scope) if extra else rows), found
