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
from collections.abc import Iterable, Sequence
from typing import Any

from psycopg import Cursor

from memoryport.storage.turns import expand
from memoryport.storage.turns.postgres_link import PgLink
from memoryport.storage.turns.postgres_query import COLUMNS
from memoryport.storage.turns.postgres_terms import phrase_terms

__all__ = ["candidates", "insert_words", "new_words", "remember"]

_NP: Any = importlib.import_module("numpy") if importlib.util.find_spec("numpy") else None


def new_words(index: Any, link: PgLink, user: str, texts: Iterable[str]) -> list[str]:
    """The words of ``texts`` (:func:`.expand.words_of`) that ``user``'s vocabulary lacks,
    sorted (one read on ``link``, which takes its lock; none without an embedder)."""
    if index.embedder is None:
        return []
    words = sorted(set().union(*(expand.words_of(t) for t in texts)))
    if not words:
        return []
    with link.lock:
        have = {r[0] for r in link.call(lambda c: c.execute(index._q(
            "SELECT word FROM {s}.turn_words WHERE user_id = %s AND model = %s"
            " AND word = ANY(%s)"), (user, index.embedder.name, words)).fetchall(),
            "read", user, write=False)}
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


_SCORED = f"""
    WITH x AS (
        SELECT * FROM unnest(%(terms)s::text[], %(sims)s::float8[]) WITH ORDINALITY
        AS x(term, sim, ord)
    ), p AS (
        SELECT w.term, p.turn_id FROM (SELECT DISTINCT term FROM x) w CROSS JOIN LATERAL (
            SELECT turn_id FROM {{s}}.turn_terms WHERE user_id = %(user)s AND term = w.term
            LIMIT %(common)s + 1) p
    ), c AS (
        SELECT term, count(*)::float8 AS n FROM p GROUP BY term HAVING count(*) <= %(common)s
    ), n AS (
        SELECT coalesce((SELECT docs FROM {{s}}.term_stats WHERE user_id = %(user)s
            AND kind = 'turn'), 0)::float8 AS total
    ), w AS (
        SELECT x.ord, x.term, x.sim * ln(1::float8 + (n.total - c.n + 0.5::float8)
            / (c.n + 0.5::float8)) AS weight FROM x JOIN c USING (term) CROSS JOIN n
    ), sc AS (
        SELECT p.turn_id, sum(w.weight ORDER BY w.ord) AS score
        FROM w JOIN p USING (term) GROUP BY p.turn_id
    ), top AS (
        SELECT turn_id, score FROM sc ORDER BY score DESC, turn_id LIMIT %(depth)s
    )
    SELECT 0 AS kind, sc.turn_id, '', 0, '', '', 0::float8, '', 0, sc.score FROM sc
        WHERE sc.turn_id = ANY(%(have)s)
    UNION ALL
    SELECT 1, {COLUMNS}, top.score FROM top CROSS JOIN LATERAL (
        SELECT * FROM {{s}}.turns t WHERE t.id = top.turn_id LIMIT 1) t
        WHERE NOT top.turn_id = ANY(%(have)s)
"""
"""The ``expand`` scores of the turns holding an expansion term, in one statement (as
:func:`.expand.scores`: a term in more than :data:`.expand.COMMON` turns is skipped,
each turn sums its terms' cosine times BM25 idf in the expansion's order, so the floats
are Python's): the candidates' scores (kind 0) and the rows of the
:data:`.expand.DEPTH` best turns that are not candidates yet (kind 1)."""


def candidates(index: Any, query: str, query_words: Sequence[str], scope: str,
               rows: list[expand.Row]) -> tuple[list[expand.Row], dict[int, float]]:
    """As :func:`.expand.candidates` for a
    :class:`~.postgres.PostgresTurnIndex`: ``rows`` and the :data:`.expand.DEPTH` turns
    of ``scope`` with the best ``expand`` score not among them, and the candidates'
    scores (one statement, :data:`_SCORED`)."""
    if index.embedder is None or _NP is None or not rows or not index.weights.expand:
        return rows, {}
    qvec = index._query_vector(query)
    with index._lock:
        vocabulary = _vocabulary(index, scope, len(qvec))
        if index._encoder is not None:  # the query encoder's vector (as SQLite's index)
            qvec = expand.query_vector(qvec, query, scope, vocabulary, index._encoder)
        near = vocabulary.nearest(qvec.tobytes(), 3 * expand.TERMS, expand.FLOOR, scope)
        expansion = expand.terms(near, query_words, {r[3] for r in rows})
        stemmed = [(stems[0], sim) for word, sim in expansion
                   if (stems := phrase_terms(f'"{word}"'))]
        if not stemmed:
            return rows, {}
        params = {"terms": [t for t, _ in stemmed], "sims": [float(v) for _, v in stemmed],
                  "user": scope, "common": expand.COMMON, "depth": expand.DEPTH,
                  "have": [r[0] for r in rows]}
        found = index._read(lambda c: c.execute(index._q(_SCORED), params).fetchall(), scope)
    scores = {int(r[1]): float(r[-1]) for r in found}
    extra = sorted((r for r in found if r[0] == 1), key=lambda r: (-float(r[-1]), int(r[1])))
    return rows + [tuple(r[1:-1]) for r in extra], scores
