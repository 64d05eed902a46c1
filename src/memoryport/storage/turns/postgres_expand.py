"""Query expansion on the PostgreSQL turn index: the same ``expand`` signal as SQLite's.

The SQLite index's background writer embeds each word of the stored turns
(:mod:`.expand`); here the index's vector writer (:mod:`.postgres_vectors`) embeds the
words of a batch of turns the user lacks (:func:`new_words`) and stores them with the
turns' vectors, in one transaction (:func:`insert_words`), per user in ``turn_words``
(under row-level security: a user's vocabulary, like its turns, is visible to that user
only). A search loads its scope's words once (:class:`.expand.Vocabulary`; the words a
writer here adds join it once committed, :func:`remember`), picks the expansion terms
with :func:`.expand.terms`, and scores each turn holding a term by cosine times the
term's BM25 idf from the scope's own postings (``turn_terms``, the terms cut by FTS5's
tokenizer, :mod:`.postgres_terms`): the numbers SQLite's FTS5 lookups give for a store
of one user.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Iterable, Sequence
from typing import Any

from psycopg import Cursor

from memoryport.storage.turns import expand
from memoryport.storage.turns.postgres_query import COLUMNS
from memoryport.storage.turns.postgres_terms import phrase_terms

__all__ = ["candidates", "insert_words", "new_words", "remember"]

_NP: Any = importlib.import_module("numpy") if importlib.util.find_spec("numpy") else None


def new_words(index: Any, user: str, texts: Iterable[str]) -> list[str]:
    """The words of ``texts`` (:func:`.expand.words_of`) that ``user``'s vocabulary lacks,
    sorted (one read; none without an embedder)."""
    if index.embedder is None:
        return []
    words = sorted(set().union(*(expand.words_of(t) for t in texts)))
    if not words:
        return []
    with index._lock:
        have = {r[0] for r in index._read(lambda c: c.execute(index._q(
            "SELECT word FROM {s}.turn_words WHERE user_id = %s AND model = %s"
            " AND word = ANY(%s)"), (user, index.embedder.name, words)).fetchall(), user)}
    return [w for w in words if w not in have]


def insert_words(index: Any, cur: Cursor[Any], user: str, words: Sequence[str],
                 blobs: Sequence[bytes]) -> None:
    """Store ``words`` of ``user`` with their vectors (float32 bytes) in the caller's
    transaction (a word another writer stored meanwhile is kept as it is)."""
    if words:
        cur.execute(index._q(
            "INSERT INTO {s}.turn_words(user_id, model, word, vec) SELECT %s, %s, *"
            " FROM unnest(%s::text[], %s::bytea[]) ON CONFLICT DO NOTHING"),
            (user, index.embedder.name, list(words), list(blobs)))


def remember(index: Any, scope: str, words: Sequence[str], blobs: Sequence[bytes]) -> None:
    """Add ``words``, just committed for ``scope``, to its vocabulary in memory if it is
    loaded (a search then needs no reload; caller holds the index's lock)."""
    held: expand.Vocabulary | None = index._vocabs.get(scope)
    if held is None:
        return
    for word, blob in zip(words, blobs, strict=True):
        held.add(word, blob)
        held.occurs(scope, word)


def _vocabulary(index: Any, scope: str, dim: int) -> expand.Vocabulary:
    """``scope``'s words and vectors in memory (loaded on first use; caller holds the
    index's lock)."""
    held: expand.Vocabulary | None = index._vocabs.get(scope)
    if held is None:
        rows = index._read(lambda c: c.execute(index._q(
            "SELECT word, vec FROM {s}.turn_words WHERE user_id = %s AND model = %s"
            " ORDER BY word"), (scope, index.embedder.name)).fetchall(), scope)
        held = expand.Vocabulary(_NP, dim)
        for word, blob in rows:
            held.add(word, bytes(blob))
        held.load_scope(scope, held.words)
        index._vocabs[scope] = held
    return held


def _scores(index: Any, scope: str, expansion: Sequence[tuple[str, float]]
            ) -> dict[int, float]:
    """As :func:`.expand.scores`, from the scope's postings (caller holds the lock)."""
    stems = {word: phrase_terms(f'"{word}"') for word, _ in expansion}
    wanted = sorted({s[0] for s in stems.values() if s})
    if not wanted:
        return {}

    def read(cur: Cursor[Any]) -> tuple[int, list[tuple[str, int]]]:
        total = cur.execute(index._q("SELECT count(*) FROM {s}.turns WHERE user_id = %s"),
                            (scope,)).fetchone()
        found = cur.execute(index._q(
            "SELECT w.term, p.turn_id FROM unnest(%s::text[]) AS w(term) CROSS JOIN LATERAL"
            " (SELECT turn_id FROM {s}.turn_terms WHERE user_id = %s AND term = w.term"
            " LIMIT %s) p"), (wanted, scope, expand.COMMON + 1)).fetchall()
        return int(total[0]) if total else 0, [(str(t), int(i)) for t, i in found]

    total, found = index._read(read, scope)
    by_term: dict[str, list[int]] = {}
    for term, turn_id in found:
        by_term.setdefault(term, []).append(turn_id)
    out: dict[int, float] = {}
    for word, sim in expansion:
        ids = by_term.get(stems[word][0], []) if stems[word] else []
        if not ids or len(ids) > expand.COMMON:
            continue
        weight = sim * math.log(1 + (total - len(ids) + 0.5) / (len(ids) + 0.5))
        for turn_id in ids:
            out[turn_id] = out.get(turn_id, 0.0) + weight
    return out


def candidates(index: Any, query: str, query_words: Sequence[str], scope: str,
               rows: list[expand.Row]) -> tuple[list[expand.Row], dict[int, float]]:
    """As :func:`.expand.candidates` for a
    :class:`~.postgres.PostgresTurnIndex`: ``rows`` and the :data:`.expand.DEPTH` turns
    of ``scope`` with the best ``expand`` score not among them, and each turn's score."""
    if index.embedder is None or _NP is None or not rows or not index.weights.expand:
        return rows, {}
    qvec = index._query_vector(query)
    with index._lock:
        near = _vocabulary(index, scope, len(qvec)).nearest(
            qvec.tobytes(), 3 * expand.TERMS, expand.FLOOR, scope)
        expansion = expand.terms(near, query_words, {r[3] for r in rows})
        if not expansion:
            return rows, {}
        found = _scores(index, scope, expansion)
        have = {r[0] for r in rows}
        best = sorted(found, key=lambda i: (-found[i], i))[:expand.DEPTH]
        extra = [i for i in best if i not in have]
        if not extra:
            return rows, found
        got = {int(r[0]): tuple(r) for r in index._read(lambda c: c.execute(index._q(
            "SELECT " + COLUMNS + " FROM {s}.turns t WHERE t.user_id = %s"
            " AND t.id = ANY(%s)"), (scope, extra)).fetchall(), scope)}
    return rows + [got[i] for i in extra if i in got], found
