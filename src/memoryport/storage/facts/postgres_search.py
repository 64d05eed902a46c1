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

One round trip while nothing changed: a pipeline sends the ranking, whatever the cache
lacks for the generation it holds (the entity links of the query's keys, the latest fact
time) and, last, the user's counter. When the counter is still the cache's, every
statement before it read that generation's tables (the counter moves in every
transaction writing them), so the cache answers the rest; a lookup it still has to make
(entity candidates for new ids, entity names, a time window's facts) is followed by one
more read of the counter. When the counter moved, the search runs again in one
read-only ``REPEATABLE READ`` snapshot, the counter read first, and the cache starts
over at that generation. The results are :func:`~.postgres_sql.search`'s, to the bit
(the same candidates, blend and order; the tests compare them after every kind of
write, and with the SQLite store's).
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
_GENERATION = b"SELECT fact_generation_of(%s)"
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
    ask = _Ask(query, match, timed, limit, min_trust, as_of)
    if cache.generation is not None:
        found = _unchanged(pg, cache, ask)
        if found is not None:
            return found
    return _in_snapshot(pg, cache, ask)


class _Ask:
    """One search's arguments and what follows from them."""

    def __init__(self, query: str, match: str, timed: bool, limit: int, min_trust: float,
                 as_of: float | None) -> None:
        self.query, self.match, self.timed, self.limit = query, match, timed, limit
        self.min_trust, self.as_of = min_trust, as_of
        self.words = phrase_terms(match) if match else []
        self.keys = entity_keys(query)
        self.depth = max(limit * 4, 20)

    def scope(self, user_id: str) -> tuple[str, list[Any]]:
        """The filter of the facts this search may return (``read.believed``)."""
        return read.believed(user_id, self.min_trust, self.as_of)


def _first_round(pg: PgConnection, cache: SearchCache, ask: _Ask, *, snapshot: bool
                 ) -> tuple[int | None, list[tuple[Fact, float, list[str]]],
                            list[str], Any, Any]:
    """The pipeline: (with ``snapshot``, a read-only ``REPEATABLE READ`` transaction
    first and the counter next) the ranking, the links and latest time the cache lacks
    for the generation it holds, and (without ``snapshot``) the counter last. Returns the
    counter, the ranked facts, the keys asked and the cursors of links and latest."""
    conn, user = pg.conn, pg.user_id
    scope = ask.scope(user)
    missing = cache.missing(user, ask.keys)
    with conn.pipeline():
        if snapshot:
            conn.execute(_BEGIN)
            first = conn.cursor().execute(_GENERATION, (user,))
        ranked = conn.cursor().execute(*ranked_query(
            pg, ask.words, where_named(scope[0], len(scope[1])), scope[1], ask.depth)
        ) if ask.words else None
        links = conn.cursor().execute(_LINKS, (user, missing)) if missing else None
        latest = conn.cursor().execute(_LATEST.replace("?", "%s").encode(), (user,)) if (
            ask.timed and not cache.has_latest(user)) else None
        if not snapshot:
            first = conn.cursor().execute(_GENERATION, (user,))
    row = first.fetchone()
    rows = ranked_rows(ranked.fetchall()) if ranked is not None else []
    return _counter(row), rows, missing, links, latest


def _counter(row: Any) -> int | None:
    """The counter a ``fact_generation_of`` row holds (None: the user has none yet)."""
    return int(row[0]) if row and row[0] is not None else None


def _learn(cache: SearchCache, user: str, missing: list[str], links: Any,
           latest: Any) -> None:
    """Keep the links and latest time :func:`_first_round` read."""
    if links is not None:
        cache.put_links(user, missing, links.fetchall())
    if latest is not None:
        value = latest.fetchone()
        cache.put_latest(user, float(value[0]) if value and value[0] is not None else None)


def _unchanged(pg: PgConnection, cache: SearchCache, ask: _Ask) -> list[Fact] | None:
    """The search in one pipeline when the counter, read last, is still the cache's
    (every earlier statement then read that generation's tables: the counter moves in
    every writing transaction); a lookup the cache had to make after it is followed by
    one more read of the counter. None when the counter moved: the caller searches in
    one snapshot instead."""
    generation, ranked, missing, links, latest = _first_round(pg, cache, ask, snapshot=False)
    if generation is None or generation != cache.generation:
        return None
    cache.seen(generation)
    _learn(cache, pg.user_id, missing, links, latest)
    before = pg.statements
    found = _rank(pg, cache, ask, ranked)
    if pg.statements != before and _counter(
            pg.conn.execute(_GENERATION, (pg.user_id,)).fetchone()) != generation:
        cache.clear()
        return None
    return found


def _in_snapshot(pg: PgConnection, cache: SearchCache, ask: _Ask) -> list[Fact]:
    """The search in one read-only snapshot, the counter read first (the cache learns
    the generation); then ``COMMIT``."""
    conn = pg.conn
    try:
        generation, ranked, missing, links, latest = _first_round(pg, cache, ask,
                                                                   snapshot=True)
        cache.seen(generation)
        _learn(cache, pg.user_id, missing, links, latest)
        found = _rank(pg, cache, ask, ranked)
        conn.execute(b"COMMIT")
        return found
    except BaseException:
        if conn.info.transaction_status != pq.TransactionStatus.IDLE and not conn.broken:
            try:
                conn.execute(b"ROLLBACK")
            except psycopg.Error:
                pass  # the connection is gone: the store reconnects on its next call
        raise


def _rank(pg: PgConnection, cache: SearchCache, ask: _Ask,
          ranked: list[tuple[Fact, float, list[str]]]) -> list[Fact]:
    """``postgres_sql.search``'s blend and order over the ranked facts, the entity and
    time candidates, through the cache."""
    user, limit = pg.user_id, ask.limit
    scope = ask.scope(user)
    windows: list[tuple[float, float]] = []
    latest = cache.latest(pg, user, _LATEST) if ask.timed else None
    if latest is not None:
        try:
            windows = [(t.start, t.end) for t in resolve(ask.query, latest)]
        except ValueError:
            windows = []
    if not ask.match and not windows:
        return []
    boosted = cache.linked(pg, user, ask.keys)
    best = max((score for _, score, _ in ranked), default=1.0) or 1.0
    lexical = {fact.id: score / best for fact, score, _ in ranked}
    candidates = [fact for fact, _, _ in ranked]
    others, depth = boosted - set(lexical), max(limit * 2, 10)
    if others:
        candidates += cache.candidates(
            (user, ask.min_trust, ask.as_of, depth, frozenset(others)),
            lambda: read.entity_candidates(pg, others, scope, depth))
    if windows:
        seen = {f.id for f in candidates}
        candidates += [f for f in read.window_candidates(pg, windows, scope, depth)
                       if f.id not in seen]
    wanted = set(tokens(ask.query))
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
