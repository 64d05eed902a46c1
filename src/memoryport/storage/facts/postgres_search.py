"""The PostgreSQL fact search with the SQLite store's per-generation cache (issue 19).

:func:`memoryport.storage.facts.postgres_sql.search` reads, for every search, the user's
latest fact time, the BM25-ranked facts, the facts linked to an entity the query names,
those facts' rows and the entity names of the facts it returns: two to four round trips.
All but the ranking depend on the fact tables only, which change seldom (a fact stated, a
tool call) while recall runs every turn. :func:`search` keeps those answers in a
:class:`~.searchcache.SearchCache`, as the SQLite store does, valid while the user's
``fact_generation`` counter is unchanged (migration ``m004_fact_generation``: statement
triggers bump it in every transaction writing ``facts``, ``entities`` or
``fact_entities``, whatever host writes, so another host's write is seen on the next
search).

One round trip in the common case: a pipeline opens a read-only ``REPEATABLE READ``
transaction and sends the counter's read, the ranking and whatever the cache does not
hold for the generation it last saw (the entity links of the query's keys, the latest
fact time); only when the counter moved, or a lookup the cache cannot answer remains
(entity candidates, entity names, a time window's facts), do further statements run, in
the same snapshot. The results are :func:`~.postgres_sql.search`'s, to the bit (the
same candidates, blend and order; the test compares them after every kind of write).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg
from psycopg import pq

from memoryport.storage.facts import read
from memoryport.storage.facts.postgres_sql import (
    PgConnection,
    entity_keys,
    ranked_query,
    ranked_rows,
    where_named,
)
from memoryport.storage.facts.records import Fact
from memoryport.storage.facts.searchcache import SearchCache
from memoryport.storage.facts.text import fts_query, jaccard, tokens
from memoryport.storage.timeexpr import has_time_words, resolve
from memoryport.storage.turns.postgres_terms import phrase_terms

__all__ = ["search"]

_BEGIN = b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_GENERATION = b"SELECT n FROM fact_generation WHERE user_id = %s"
_LATEST = f"SELECT max({read.WHEN}) FROM facts f WHERE f.user_id = ?"
_LINKS = (b"SELECT e.key, fe.fact_id FROM entities e JOIN fact_entities fe"
          b" ON fe.entity_id = e.id WHERE e.user_id = %s AND e.key = ANY(%s)")


def search(pg: PgConnection, cache: SearchCache, query: str, *, limit: int,
           min_trust: float, as_of: float | None = None) -> list[Fact]:
    """``postgres_sql.search`` through ``cache`` (see the module); the store calls it
    under its lock (the cache is not thread-safe)."""
    match = fts_query(query)
    timed = has_time_words(query)
    if not match and not timed:
        return []  # no word to rank and no time: nothing is a candidate
    conn = pg.conn
    try:
        found = _search(pg, cache, query, match, timed, limit, min_trust, as_of)
        conn.execute(b"COMMIT")
        return found
    except BaseException:
        if conn.info.transaction_status != pq.TransactionStatus.IDLE and not conn.broken:
            try:
                conn.execute(b"ROLLBACK")
            except psycopg.Error:
                pass  # the connection is gone: the store reconnects on its next call
        raise


def _first_round(pg: PgConnection, cache: SearchCache, match: str, keys: list[str],
                 timed: bool, scope: tuple[str, list[Any]], depth: int,
                 ) -> list[tuple[Fact, float, list[str]]]:
    """The pipeline: the snapshot, the user's counter, the ranking, and the links and
    latest time the cache lacks; the cache learns the counter and those answers. Returns
    the ranked facts (with their entity names, score and matched terms)."""
    conn, user = pg.conn, pg.user_id
    words = phrase_terms(match) if match else []
    missing = cache.missing(user, keys)
    with conn.pipeline():
        conn.execute(_BEGIN)
        generation = conn.cursor().execute(_GENERATION, (user,))
        latest = conn.cursor().execute(_LATEST.replace("?", "%s").encode(), (user,)) if (
            timed and not cache.has_latest(user)) else None
        ranked = conn.cursor().execute(*ranked_query(
            pg, words, where_named(scope[0], len(scope[1])), scope[1], depth)) if words else None
        links = conn.cursor().execute(_LINKS, (user, missing)) if missing else None
    row = generation.fetchone()
    cache.seen(int(row[0]) if row else None)
    if links is not None:
        cache.put_links(user, missing, links.fetchall())
    if latest is not None:
        value = latest.fetchone()
        cache.put_latest(user, float(value[0]) if value and value[0] is not None else None)
    return ranked_rows(ranked.fetchall()) if ranked is not None else []


def _search(pg: PgConnection, cache: SearchCache, query: str, match: str, timed: bool,
            limit: int, min_trust: float, as_of: float | None) -> list[Fact]:
    """The search inside the snapshot :func:`_first_round` opens."""
    user = pg.user_id
    scope = read.believed(user, min_trust, as_of)
    keys = entity_keys(query)
    ranked = _first_round(pg, cache, match, keys, timed, scope, max(limit * 4, 20))
    windows: list[tuple[float, float]] = []
    latest = cache.latest(pg, user, _LATEST) if timed else None
    if latest is not None:
        try:
            windows = [(t.start, t.end) for t in resolve(query, latest)]
        except ValueError:
            windows = []
    if not match and not windows:
        return []
    boosted = cache.linked(pg, user, keys)
    best = max((score for _, score, _ in ranked), default=1.0) or 1.0
    lexical = {fact.id: score / best for fact, score, _ in ranked}
    candidates = [fact for fact, _, _ in ranked]
    others, depth = boosted - set(lexical), max(limit * 2, 10)
    if others:
        candidates += cache.candidates(
            (user, min_trust, as_of, depth, frozenset(others)),
            lambda: read.entity_candidates(pg, others, scope, depth))
    if windows:
        seen = {f.id for f in candidates}
        candidates += [f for f in read.window_candidates(pg, windows, scope, depth)
                       if f.id not in seen]
    wanted = set(tokens(query))
    scored: list[Fact] = []
    for fact in candidates:
        relevance = 0.6 * lexical.get(fact.id, 0.0)
        relevance += 0.25 * jaccard(wanted, read.content_words(fact.content))
        relevance += 0.15 if fact.id in boosted else 0.0
        relevance += 0.15 if windows and read.in_windows(fact, windows) else 0.0
        scored.append(replace(fact, score=relevance * fact.trust_score))
    scored.sort(key=lambda f: (-f.score, -f.recorded_at))
    top = scored[:limit]
    names = cache.names(pg, [f.id for f in top if f.id not in lexical])
    return [f if f.id in lexical else replace(f, entities=names[f.id]) for f in top]
