"""Terms and BM25 for the PostgreSQL turn index and fact store: the same numbers as FTS5.

PostgreSQL's ``ts_rank`` is not BM25 and its Snowball stemmer is not FTS5's Porter
stemmer, so ranking with them would change which turns a query finds. Instead:

* **Terms** come from SQLite's own FTS5 tokenizer (``porter unicode61``, the SQLite
  backend's): :class:`Fts5Terms` inserts the texts into a private in-memory FTS5 table
  inside a transaction, reads their term instances from an ``fts5vocab`` table and rolls
  back. Case folding, diacritics, separators and stemming are therefore identical by
  construction, not by a second stemmer that agrees "closely enough".
* **BM25** is FTS5's formula (``k1`` 1.2, ``b`` 0.75, ``idf = ln((N - n + 0.5) / (n +
  0.5))`` floored at 1e-6, summed over the query's phrases, a repeated phrase counting
  again), computed in SQL over a postings table with the per-scope document and token
  counts (:func:`bm25_sql`). SQLite's statistics cover its whole file; these cover one
  user's scope, which is the same when a store holds one user, and never lets one
  tenant's words move another's ranking.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence

from psycopg import sql

__all__ = ["K1", "B", "Fts5Terms", "bm25_sql", "phrase_terms", "terms"]

K1 = 1.2
"""FTS5's BM25 ``k1``."""
B = 0.75
"""FTS5's BM25 ``b``."""

_PHRASE = re.compile(r'"((?:[^"]|"")*)"')


class Fts5Terms:
    """Cut texts into terms exactly as an FTS5 ``porter unicode61`` column does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute("CREATE VIRTUAL TABLE tok USING fts5(body, tokenize='porter unicode61')")
        self._conn.execute("CREATE VIRTUAL TABLE tok_v USING fts5vocab(tok, 'instance')")

    def count(self, texts: Sequence[str]) -> list[Counter[str]]:
        """Each text's terms with their counts (the sum of the counts is the text's BM25
        length)."""
        out: list[Counter[str]] = [Counter() for _ in texts]
        if not texts:
            return out
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                conn.executemany("INSERT INTO tok(rowid, body) VALUES (?, ?)",
                                 [(i + 1, t) for i, t in enumerate(texts)])
                rows = conn.execute("SELECT doc, term, count(*) FROM tok_v GROUP BY doc, term")
                for doc, term, n in rows:
                    out[doc - 1][term] = n
            finally:
                conn.execute("ROLLBACK")
        return out


_SHARED = Fts5Terms()


def terms(texts: Sequence[str]) -> list[Counter[str]]:
    """:meth:`Fts5Terms.count` on the process's shared tokenizer."""
    return _SHARED.count(texts)


def phrase_terms(match: str) -> list[str]:
    """The terms of an FTS5 ``"a" OR "b"`` expression, one per phrase, repeats kept (FTS5
    scores each phrase); a phrase that is not one term (none, or several) is dropped."""
    phrases = [p.replace('""', '"') for p in _PHRASE.findall(match)]
    out: list[str] = []
    for counted in terms(phrases):
        if sum(counted.values()) == 1:
            out.append(next(iter(counted)))
    return out


def bm25_sql(postings: str, key: str, length: str, join: str, kind: str,
             stats: str = "term_stats") -> sql.SQL:
    """A query ranking the documents of ``postings`` (``{s}``-qualified table) for the
    query's phrases ``%(terms)s`` (one term each, in query order, repeats kept) in the
    scope ``%(user)s``: ``(document key, score, the terms it holds)`` best first,
    ``%(depth)s`` of them (None: every matching document).

    The arithmetic is FTS5's ``fts5Bm25Function``, step for step and in the same order
    (each phrase's ``idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)))`` added
    in phrase order), so scores are equal to the last bit and ties fall the same way. One
    index range per phrase (``LATERAL ... OFFSET 0`` keeps the planner from hashing a
    whole scope's postings when its statistics are stale); a phrase's document frequency
    is the size of its partition. ``key`` is the postings' document column, ``length``
    the expression of a document's length (from the postings row ``p`` or the document
    table joined as ``d`` by ``join``), ``kind`` names the scope's ``stats`` row
    (``term_stats``: the turn index's; ``fact_stats``: the fact store's).
    """
    k1, b = f"{K1}::float8", f"{B}::float8"
    idf = "ln((st.n - x.n + 0.5::float8) / (x.n + 0.5::float8))"
    return sql.SQL(f"""
        SELECT x.{key}, sum(CASE WHEN {idf} <= 0 THEN 1e-6::float8 ELSE {idf} END
            * ((x.tf * ({k1} + 1.0::float8))
               / (x.tf + {k1} * (1.0::float8 - {b} + {b} * x.dl / st.avgdl)))
            ORDER BY x.ord) AS score,
            array_agg(x.term) AS matched
        FROM (
            SELECT p.{key}, p.tf, p.dl, q.term, q.ord,
                count(*) OVER (PARTITION BY q.ord)::float8 AS n
            FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS q(term, ord)
            CROSS JOIN LATERAL (
                SELECT p.{key}, p.tf::float8 AS tf, {length}::float8 AS dl
                FROM {{s}}.{postings} p {join}
                WHERE p.user_id = %(user)s AND p.term = q.term OFFSET 0
            ) p
        ) x, (
            SELECT docs::float8 AS n, tokens::float8 / greatest(docs, 1)::float8 AS avgdl
            FROM {{s}}.{stats} WHERE user_id = %(user)s AND kind = '{kind}'
        ) st
        GROUP BY x.{key} ORDER BY score DESC, x.{key} LIMIT %(depth)s
    """)
