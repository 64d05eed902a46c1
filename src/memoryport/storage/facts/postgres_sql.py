"""The fact store's queries on PostgreSQL: one copy of the query code for both backends.

:mod:`memoryport.storage.facts.read` and :mod:`~memoryport.storage.facts.write` hold the
fact store's queries, written in the SQL both engines share. :class:`PgConnection` runs
them on a psycopg cursor: it speaks the part of the DB-API those functions use
(``execute``/``executemany``, ``fetchone``/``fetchall``/iteration, ``lastrowid``) and
rewrites the few SQLite spellings they contain (:data:`REWRITES`; ``?`` placeholders,
``INSERT OR IGNORE``, ``group_concat``, two-argument ``max``/``min``, ``lastrowid`` from
``RETURNING id``). psycopg errors are raised as the ``sqlite3`` error types the store
catches (an ``IntegrityError`` stays one), with PostgreSQL's message.

The full-text parts are PostgreSQL's own: :func:`index_dirty` keeps the postings of
changed facts, :func:`search` and :func:`find_duplicate` are the FTS5 queries of
``read.search`` and ``write.find_duplicate`` over them, with FTS5's BM25
(:mod:`memoryport.storage.turns.postgres_terms`) so a query ranks facts as on SQLite.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.facts import read, write
from memoryport.storage.facts.records import FACT_COLUMNS, Fact, fact_from_row
from memoryport.storage.facts.text import content_hash, fts_query, jaccard, tokens, variants
from memoryport.storage.facts.triples import Triple
from memoryport.storage.timeexpr import has_time_words, resolve
from memoryport.storage.turns.postgres_terms import bm25_sql, phrase_terms, terms

__all__ = [
    "REWRITES",
    "PgConnection",
    "entity_keys",
    "find_duplicate",
    "index_dirty",
    "ranked_query",
    "ranked_rows",
    "search",
    "to_pg",
    "where_named",
]

Cursor = psycopg.Cursor[Any]

REWRITES = (
    ("INSERT OR IGNORE INTO", "INSERT INTO"),
    ("group_concat(fe.entity_id)", "string_agg(fe.entity_id::text, ',')"),
    ("max(0.0, min(1.0, trust_score + ?))", "greatest(0.0, least(1.0, trust_score + ?))"),
)
"""SQLite spellings in the shared queries and their PostgreSQL equivalents."""

_CACHE: dict[str, tuple[str, bool]] = {}


def to_pg(statement: str) -> tuple[str, bool]:
    """``statement`` in PostgreSQL's spelling, and whether it returns the new row's id."""
    found = _CACHE.get(statement)
    if found is not None:
        return found
    text = statement
    ignore = text.lstrip().startswith("INSERT OR IGNORE")
    for old, new in REWRITES:
        text = text.replace(old, new)
    text = text.replace("%", "%%").replace("?", "%s")
    if ignore:
        text += " ON CONFLICT DO NOTHING"
    returning = text.lstrip().startswith("INSERT INTO facts(")
    if returning:
        text += " RETURNING id"
    _CACHE[statement] = (text, returning)
    return text, returning


class PgResult:
    """The rows of one statement (what the shared queries read from a cursor)."""

    def __init__(self, cur: Cursor, returning: bool) -> None:
        self._cur = cur
        self.lastrowid: int | None = None
        if returning:
            row = cur.fetchone()
            self.lastrowid = int(row[0]) if row else None

    def fetchone(self) -> tuple[Any, ...] | None:
        """The next row, or None."""
        return self._cur.fetchone()

    def fetchall(self) -> list[tuple[Any, ...]]:
        """The remaining rows."""
        return self._cur.fetchall()

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._cur.fetchall())


def _as_sqlite_error(exc: psycopg.Error) -> sqlite3.Error:
    kind = sqlite3.IntegrityError if isinstance(exc, psycopg.IntegrityError) else (
        sqlite3.OperationalError)
    return kind(f"PostgreSQL: {exc}")


class PgConnection:
    """The shared queries' connection, on one PostgreSQL connection (see the module): a
    :class:`~memoryport.storage.facts.connection.Connection`."""

    def __init__(self, conn: psycopg.Connection[Any], user_id: str, schema: str) -> None:
        self.conn = conn
        self.user_id = user_id
        self.schema = sql.Identifier(schema)
        self.statements = 0
        """Statements run through :meth:`execute` (a search checks whether it read more)."""

    def execute(self, statement: str, params: Sequence[Any] = (), /) -> PgResult:
        """Run one statement of the shared queries."""
        text, returning = to_pg(statement)
        self.statements += 1
        cur = self.conn.cursor()
        try:
            cur.execute(text.encode(), list(params))
        except psycopg.Error as exc:
            raise _as_sqlite_error(exc) from exc
        return PgResult(cur, returning)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]], /) -> None:
        """Run one statement for each parameter row."""
        rows = list(rows)
        if not rows:
            return
        text, _ = to_pg(statement)
        try:
            with self.conn.cursor() as cur:
                cur.executemany(text.encode(), [list(r) for r in rows])
        except psycopg.Error as exc:
            raise _as_sqlite_error(exc) from exc


# ---------------------------------------------------------------------------- postings


def index_dirty(pg: PgConnection) -> int:
    """Index the scope's facts whose ``content`` or ``tags`` changed (or are new): their
    postings, length and the scope's counts; return how many. Runs inside the caller's
    transaction."""
    user = pg.user_id
    with pg.conn.cursor() as cur:
        rows = cur.execute("SELECT id, content, tags, length FROM facts"
                           " WHERE user_id = %s AND NOT indexed", (user,)).fetchall()
        if not rows:
            return 0
        bags = terms([f"{content}\n{tags}" for _, content, tags, _ in rows])
        ids = [int(r[0]) for r in rows]
        lengths = [sum(bag.values()) for bag in bags]
        cur.execute("DELETE FROM fact_terms WHERE fact_id = ANY(%s)", (ids,))
        post = [(term, fact_id, tf) for fact_id, bag in zip(ids, bags, strict=True)
                for term, tf in bag.items()]
        if post:
            cur.execute("INSERT INTO fact_terms(user_id, term, fact_id, tf) SELECT %s, *"
                        " FROM unnest(%s::text[], %s::bigint[], %s::int[])",
                        [user, *([list(c) for c in zip(*post, strict=True)])])
        cur.execute("UPDATE facts f SET indexed = true, length = x.length FROM unnest("
                    "%s::bigint[], %s::int[]) AS x(id, length) WHERE f.id = x.id", (ids, lengths))
        new_docs = sum(1 for r in rows if r[3] < 0)
        tokens_delta = sum(n - max(r[3], 0) for r, n in zip(rows, lengths, strict=True))
        cur.execute("INSERT INTO fact_stats(user_id, kind, docs, tokens) VALUES (%s, 'fact', %s,"
                    " %s) ON CONFLICT (user_id, kind) DO UPDATE SET docs = fact_stats.docs"
                    " + excluded.docs, tokens = fact_stats.tokens + excluded.tokens",
                    (user, new_docs, tokens_delta))
    return len(rows)


_RANK = bm25_sql("fact_terms", "fact_id", "d.length", "JOIN {s}.facts d ON d.id = p.fact_id",
                 "fact", stats="fact_stats")
_F = ", ".join("f." + c.strip() for c in FACT_COLUMNS.split(","))


_NAMES = ("(SELECT coalesce(array_agg(e.name ORDER BY e.id), ARRAY[]::text[])"
          " FROM {s}.fact_entities fe"
          " JOIN {s}.entities e ON e.id = fe.entity_id WHERE fe.fact_id = f.id)")


def ranked_query(pg: PgConnection, words: list[str], where: str, params: Sequence[Any],
                  limit: int | None) -> tuple[sql.Composed, dict[str, Any]]:
    """The statement of :func:`_ranked` and its parameters."""
    statement = sql.SQL(
        "WITH r AS ({rank}) SELECT " + _F + ", {names}, r.score, r.matched FROM r"
        " CROSS JOIN LATERAL (SELECT * FROM {s}.facts f WHERE f.id = r.fact_id LIMIT 1) f"
        " WHERE " + where
        + " ORDER BY r.score DESC, f.id LIMIT %(limit)s"
    ).format(rank=_RANK.format(s=pg.schema), names=sql.SQL(_NAMES).format(s=pg.schema),
             s=pg.schema)
    named = {"terms": words, "user": pg.user_id, "depth": None, "limit": limit}
    named.update({f"p{i}": v for i, v in enumerate(params)})
    return statement, named


def ranked_rows(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Fact, float, list[str]]]:
    """(fact with its entity names, score, the words it holds) of :func:`_ranked` rows."""
    return [(replace(fact_from_row(r[:-3]), entities=tuple(r[-3])), float(r[-2]), list(r[-1]))
            for r in rows]


def _ranked(pg: PgConnection, words: list[str], where: str, params: Sequence[Any],
            limit: int | None) -> list[tuple[Fact, float, list[str]]]:
    """Facts holding any of ``words`` that pass ``where`` (over ``f``), best BM25 first:
    (fact with its entity names, score, the words it holds)."""
    if not words:
        return []
    with pg.conn.cursor() as cur:
        return ranked_rows(cur.execute(*ranked_query(pg, words, where, params, limit))
                            .fetchall())


def where_named(scope: str, count: int) -> str:
    """A shared filter with ``?`` placeholders as the named ``%(pN)s`` of :func:`_ranked`."""
    out, n = "", 0
    for char in scope:
        if char == "?":
            out += f"%(p{n})s"
            n += 1
        else:
            out += char
    if n != count:
        raise ValueError("placeholder count mismatch")
    return out


def entity_keys(query: str) -> list[str]:
    """The entity keys a query may name (``read._entity_boost``'s: words and word pairs)."""
    words = tokens(query, keep_stopwords=True)
    return sorted(set(words) | {" ".join(words[i:i + 2]) for i in range(len(words) - 1)})


def _first_round(pg: PgConnection, query: str, match: str, scope: tuple[str, list[Any]],
                 limit: int) -> tuple[list[tuple[float, float]],
                                      list[tuple[Fact, float, list[str]]], set[int]]:
    """The independent reads of a search in one round trip (a pipeline): the query's
    time windows (``read.query_windows``), the BM25-ranked facts and the ids of facts
    linked to an entity the query names (``read._entity_boost``)."""
    words, keys = phrase_terms(match) if match else [], entity_keys(query)
    timed = has_time_words(query)
    with pg.conn.pipeline():
        when = pg.conn.cursor().execute(
            f"SELECT max({read.WHEN}) FROM facts f WHERE f.user_id = %s".encode(),
            (pg.user_id,)) if timed else None
        ranked = pg.conn.cursor().execute(*ranked_query(
            pg, words, where_named(scope[0], len(scope[1])), scope[1], limit)) if words else None
        boost = pg.conn.cursor().execute(
            b"SELECT fe.fact_id FROM entities e JOIN fact_entities fe ON fe.entity_id = e.id"
            b" WHERE e.user_id = %s AND e.key = ANY(%s)", (pg.user_id, keys)) if keys else None
    windows: list[tuple[float, float]] = []
    latest = when.fetchone() if when is not None else None
    if latest and latest[0] is not None:
        try:
            windows = [(t.start, t.end) for t in resolve(query, float(latest[0]))]
        except ValueError:
            windows = []
    found = ranked_rows(ranked.fetchall()) if ranked is not None else []
    return windows, found, {int(r[0]) for r in boost.fetchall()} if boost is not None else set()


def search(pg: PgConnection, query: str, *, limit: int, min_trust: float,
           as_of: float | None = None) -> list[Fact]:
    """``read.search`` on PostgreSQL: the same candidates, blend and order (BM25 from the
    postings, normalised by the best, as FTS5's is there). The first reads share one
    round trip (:func:`_first_round`) and the ranked facts come with their entities."""
    match = fts_query(query)
    scope = read.believed(pg.user_id, min_trust, as_of)
    windows, ranked, boosted = _first_round(pg, query, match, scope, max(limit * 4, 20))
    if not match and not windows:
        return []
    best = max((score for _, score, _ in ranked), default=1.0) or 1.0
    lexical = {fact.id: score / best for fact, score, _ in ranked}
    candidates = [fact for fact, _, _ in ranked]
    candidates += read.entity_candidates(pg, boosted - set(lexical), scope,
                                          max(limit * 2, 10))
    if windows:
        seen = {f.id for f in candidates}
        candidates += [f for f in read.window_candidates(pg, windows, scope,
                                                          max(limit * 2, 10))
                       if f.id not in seen]
    wanted = set(tokens(query))
    scored: list[Fact] = []
    for fact in candidates:
        relevance = 0.6 * lexical.get(fact.id, 0.0)
        relevance += 0.25 * jaccard(wanted, set(tokens(fact.content)))
        relevance += 0.15 if fact.id in boosted else 0.0
        relevance += 0.15 if windows and read.in_windows(fact, windows) else 0.0
        scored.append(replace(fact, score=relevance * fact.trust_score))
    scored.sort(key=lambda f: (-f.score, -f.recorded_at))
    top = scored[:limit]
    named = {f.id for f in top if f.id in lexical}
    filled = iter(read.with_entities(pg, [f for f in top if f.id not in named]))
    return [f if f.id in named else next(filled) for f in top]


def find_duplicate(pg: PgConnection, content: str, triple: Triple | None, speaker: str
                   ) -> Fact | None:
    """``write.find_duplicate`` on PostgreSQL (the facts of this transaction indexed
    first, so a batch sees its own earlier facts as SQLite's FTS5 does)."""
    user_id = pg.user_id
    if triple is not None:
        return write.find_duplicate(pg, user_id, content, triple, speaker)
    row = pg.execute(
        f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND content_hash = ?"
        " AND retired_at IS NULL", (user_id, content_hash(content))).fetchone()
    if row:
        return fact_from_row(row)
    mine = set(tokens(content))
    if not mine:
        return None
    index_dirty(pg)
    live = "f.user_id = %(p0)s AND f.retired_at IS NULL AND f.relation = ''"
    if len(mine) <= write.ALL_TERMS_UP_TO:
        # fts_all: every word (or one of its spelling variants) must be there
        stems = [phrase_terms(" OR ".join(f'"{w}"' for w in variants(word)))
                 for word in sorted(mine) if len(word) >= 2 or word.isdigit()]
        found = [(f, m) for f, _, m in _ranked(pg, [t for g in stems for t in g], live,
                                               [user_id], None)
                 if all(set(g) & set(m) for g in stems if g)]
        facts = [f for f, _ in found[:8]] if any(stems) else []
    else:
        facts = [f for f, _, _ in _ranked(pg, phrase_terms(fts_query(content)), live,
                                          [user_id], 8)]
    for candidate in facts:
        if jaccard(mine, set(tokens(candidate.content))) >= write.NEAR_DUPLICATE:
            return candidate
    return None
