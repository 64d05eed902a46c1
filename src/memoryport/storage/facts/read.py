"""The read queries of the fact store: ranked search, the entity-index queries (probe,
related, reason), contradictions, listings and history. Every query is scoped to one
``user_id``; recall queries return live facts at or above the trust floor only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memoryport.storage.facts.connection import Connection
from memoryport.storage.facts.entities import entity_key
from memoryport.storage.facts.records import (
    FACT_COLUMNS,
    Contradiction,
    Fact,
    Revision,
    fact_from_row,
)
from memoryport.storage.facts.searchcache import SearchCache
from memoryport.storage.facts.text import STOPWORDS, fts_words, jaccard, tokens
from memoryport.storage.timeexpr import has_time_words, resolve

__all__ = [
    "WHEN",
    "believed",
    "chain",
    "content_words",
    "contradictions",
    "entity_candidates",
    "in_windows",
    "list_facts",
    "probe",
    "query_windows",
    "reason",
    "related",
    "revisions",
    "search",
    "window_candidates",
    "with_entities",
]

_F = ", ".join("f." + c.strip() for c in FACT_COLUMNS.split(","))
_LIVE = "f.user_id = ? AND f.retired_at IS NULL AND f.trust_score >= ?"
_AS_OF = ("f.user_id = ? AND COALESCE(f.valid_from, f.recorded_at) <= ? AND (f.valid_to IS NULL"
          " OR f.valid_to > ?) AND f.trust_score >= ?")


def believed(user_id: str, min_trust: float, as_of: float | None) -> tuple[str, list[Any]]:
    """The filter of recallable facts: live now, or (``as_of``) true and known then:
    ``valid_from`` (else ``recorded_at``) at or before it and ``valid_to`` (set when a
    fact is superseded or removed) after it."""
    if as_of is None:
        return _LIVE, [user_id, min_trust]
    return _AS_OF, [user_id, as_of, as_of, min_trust]


def with_entities(conn: Connection, facts: Sequence[Fact],
                  scores: Sequence[float] | None = None) -> list[Fact]:
    """``facts`` with their entity names filled in (one query), and with ``scores`` (one
    per fact) when given."""
    if not facts:
        return []
    marks = ",".join("?" * len(facts))
    names: dict[int, list[str]] = {}
    for fact_id, name in conn.execute(
        f"SELECT fe.fact_id, e.name FROM fact_entities fe JOIN entities e ON e.id = fe.entity_id"
        f" WHERE fe.fact_id IN ({marks}) ORDER BY e.id",
        [f.id for f in facts],
    ):
        names.setdefault(fact_id, []).append(name)
    if scores is not None:
        return [replace(f, entities=tuple(names.get(f.id, ())), score=score)
                for f, score in zip(facts, scores, strict=True)]
    return [replace(f, entities=tuple(names.get(f.id, ()))) for f in facts]


_CONTENT_WORDS: dict[str, frozenset[str]] = {}
"""The :func:`tokens` of fact contents search has scored (cleared past
:data:`CONTENT_WORDS` entries): a store's facts come back query after query."""
CONTENT_WORDS = 4096
"""How many fact contents' word sets :func:`search` keeps."""


def content_words(content: str) -> frozenset[str]:
    """The :func:`tokens` of a fact's content as a set (kept, see ``CONTENT_WORDS``)."""
    words = _CONTENT_WORDS.get(content)
    if words is None:
        if len(_CONTENT_WORDS) >= CONTENT_WORDS:
            _CONTENT_WORDS.clear()
        words = _CONTENT_WORDS[content] = frozenset(tokens(content))
    return words


def _entity_keys(words: list[str]) -> set[str]:
    """The entity keys ``words`` may name: each word and each pair of neighbours."""
    return set(words) | {" ".join(words[i:i + 2]) for i in range(len(words) - 1)}


def _entity_boost(conn: Connection, user_id: str, words: list[str]) -> set[int]:
    """Ids of facts linked to an entity the query names (by key, word-wise); ``words``
    are the query's :func:`tokens`, stopwords kept."""
    keys = _entity_keys(words)
    if not keys:
        return set()
    marks = ",".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT fe.fact_id FROM entities e JOIN fact_entities fe ON fe.entity_id = e.id"
        f" WHERE e.user_id = ? AND e.key IN ({marks})",
        [user_id, *keys],
    )
    return {row[0] for row in rows}


def entity_candidates(
    conn: Connection, ids: set[int], scope: tuple[str, list[Any]], limit: int
) -> list[Fact]:
    """The facts ``ids`` that pass ``scope`` (:func:`believed`), most trusted first."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT {_F} FROM facts f WHERE f.id IN ({marks}) AND {scope[0]}"
        " ORDER BY f.trust_score DESC, f.recorded_at DESC LIMIT ?",
        (*ids, *scope[1], limit),
    ).fetchall()
    return [fact_from_row(r) for r in rows]


WHEN = "COALESCE(f.stated_at, f.valid_from, f.recorded_at)"
"""When a fact (alias ``f``) was stated, in SQL: its time for the windows a query names."""
_LATEST = f"SELECT max({WHEN}) FROM facts f WHERE f.user_id = ?"


def query_windows(conn: Connection, user_id: str, query: str,
                  cache: SearchCache | None = None) -> list[tuple[float, float]]:
    """The time windows ``query`` names ("last May", "in 2022", "the week before 16 Nov
    2023"), resolved against the user's latest fact (the store's "now", not the wall
    clock: imported conversations keep their own time). ``cache``: the latest time kept
    per generation (:class:`~.searchcache.SearchCache`)."""
    if not has_time_words(query):
        return []
    if cache is not None:
        latest = cache.latest(conn, user_id, _LATEST)
    else:
        row = conn.execute(_LATEST, (user_id,)).fetchone()
        latest = float(row[0]) if row and row[0] is not None else None
    if latest is None:
        return []
    try:
        return [(t.start, t.end) for t in resolve(query, latest)]
    except ValueError:
        return []


def in_windows(fact: Fact, windows: Sequence[tuple[float, float]]) -> bool:
    """True when the fact's event window overlaps one of ``windows`` or it was stated in
    one."""
    said = fact.stated_at or fact.valid_from or fact.recorded_at
    for lo, hi in windows:
        if lo <= said < hi:
            return True
        if fact.event_start is not None and fact.event_start < hi and (
                fact.event_end or fact.event_start) > lo:
            return True
    return False


def window_candidates(
    conn: Connection, windows: Sequence[tuple[float, float]],
    scope: tuple[str, list[Any]], limit: int,
) -> list[Fact]:
    """Facts of ``scope`` stated in, or about an event in, one of ``windows``."""
    found: dict[int, Fact] = {}
    for lo, hi in windows:
        rows = conn.execute(
            f"SELECT {_F} FROM facts f WHERE {scope[0]} AND (({WHEN} >= ? AND {WHEN} < ?)"
            " OR (f.event_start < ? AND COALESCE(f.event_end, f.event_start) > ?))"
            " ORDER BY f.trust_score DESC, f.recorded_at DESC LIMIT ?",
            (*scope[1], lo, hi, hi, lo, limit),
        ).fetchall()
        found.update((r[0], fact_from_row(r)) for r in rows)
    return list(found.values())


def search(
    conn: Connection, user_id: str, query: str, *, limit: int, min_trust: float,
    as_of: float | None = None, cache: SearchCache | None = None,
) -> list[Fact]:
    """Live facts matching ``query`` (``as_of``: those believed at that time, see
    :func:`believed`): BM25 (normalised, best = 1) blended with word overlap, an entity
    match (facts linked to an entity the query names are candidates even without a shared
    word) and a time match (facts stated in, or about an event in, a window the query
    names — :func:`query_windows`; with no other words the window alone selects),
    multiplied by trust. ``cache`` (the SQLite store's, checked by the caller in the same
    read transaction) answers the entity and row lookups while the tables are unchanged;
    the results are the same."""
    words = tokens(query, keep_stopwords=True)
    wanted = [w for w in words if w not in STOPWORDS]  # tokens(query)
    match = fts_words(wanted)
    windows = query_windows(conn, user_id, query, cache)
    if not match and not windows:
        return []
    scope = believed(user_id, min_trust, as_of)
    # A query none of whose words any fact holds (known per generation) matches nothing:
    # the words are \w+ runs, so the phrases are the MATCH split at its ORs.
    if match and cache is not None and not cache.may_match(conn, match.split(" OR ")):
        match = ""
    rows = conn.execute(
        f"SELECT {_F}, bm25(facts_fts) FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid"
        f" WHERE facts_fts MATCH ? AND {scope[0]} ORDER BY bm25(facts_fts) LIMIT ?",
        (match, *scope[1], max(limit * 4, 20)),
    ).fetchall() if match else []
    best = min((row[-1] for row in rows), default=-1.0) or -1.0
    lexical = {row[0]: row[-1] / best for row in rows}
    boosted = (cache.linked(conn, user_id, _entity_keys(words)) if cache is not None
               else _entity_boost(conn, user_id, words))
    candidates = [fact_from_row(row[:-1]) for row in rows]
    others, depth = boosted - set(lexical), max(limit * 2, 10)
    if cache is not None and others:
        candidates += cache.candidates(
            (user_id, min_trust, as_of, depth, frozenset(others)),
            lambda: entity_candidates(conn, others, scope, depth))
    else:
        candidates += entity_candidates(conn, others, scope, depth)
    if windows:
        seen = {f.id for f in candidates}
        candidates += [f for f in window_candidates(conn, windows, scope, max(limit * 2, 10))
                       if f.id not in seen]
    query_set = set(wanted)
    scores: list[float] = []
    for fact in candidates:
        relevance = 0.6 * lexical.get(fact.id, 0.0)
        relevance += 0.25 * jaccard(query_set, content_words(fact.content))
        relevance += 0.15 if fact.id in boosted else 0.0
        # the same weight as an entity match: a named time is as specific as a named thing
        relevance += 0.15 if windows and in_windows(fact, windows) else 0.0
        scores.append(relevance * fact.trust_score)
    top = sorted(range(len(candidates)),
                 key=lambda i: (-scores[i], -candidates[i].recorded_at))[:limit]
    chosen = [candidates[i] for i in top]
    if cache is None:
        return with_entities(conn, chosen, [scores[i] for i in top])
    names = cache.names(conn, [f.id for f in chosen])
    return [replace(f, entities=names[f.id], score=scores[i])
            for f, i in zip(chosen, top, strict=True)]


def _entity_id(conn: Connection, user_id: str, name: str) -> int | None:
    row = conn.execute(
        "SELECT id FROM entities WHERE user_id = ? AND key = ?", (user_id, entity_key(name))
    ).fetchone()
    return int(row[0]) if row else None


def probe(
    conn: Connection, user_id: str, entity: str, *, limit: int, min_trust: float
) -> list[Fact]:
    """Live facts about ``entity`` (its subject first, then mentions; by trust, newest)."""
    entity_id = _entity_id(conn, user_id, entity)
    if entity_id is None:
        return []
    rows = conn.execute(
        f"SELECT {_F} FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id"
        f" WHERE fe.entity_id = ? AND {_LIVE}"
        " ORDER BY (f.subject = ?) DESC, f.trust_score DESC, f.recorded_at DESC LIMIT ?",
        (entity_id, user_id, min_trust, entity_key(entity), limit),
    ).fetchall()
    return with_entities(conn, [replace(fact_from_row(r), score=1.0) for r in rows])


def related(
    conn: Connection, user_id: str, entity: str, *, limit: int, min_trust: float
) -> tuple[list[dict[str, Any]], list[Fact]]:
    """Entities that share live facts with ``entity`` (most shared first), and the live
    facts about those entities that do not mention ``entity`` itself (one hop)."""
    entity_id = _entity_id(conn, user_id, entity)
    if entity_id is None:
        return [], []
    neighbours = conn.execute(
        "SELECT e.id, e.name, e.kind, count(*) AS shared FROM fact_entities a"
        " JOIN fact_entities b ON b.fact_id = a.fact_id AND b.entity_id != a.entity_id"
        " JOIN entities e ON e.id = b.entity_id JOIN facts f ON f.id = a.fact_id"
        f" WHERE a.entity_id = ? AND {_LIVE} GROUP BY e.id ORDER BY shared DESC, e.id LIMIT ?",
        (entity_id, user_id, min_trust, limit),
    ).fetchall()
    ids = [n[0] for n in neighbours]
    facts: list[Fact] = []
    if ids:
        marks = ",".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT DISTINCT {_F} FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id"
            f" WHERE fe.entity_id IN ({marks}) AND {_LIVE} AND f.id NOT IN"
            " (SELECT fact_id FROM fact_entities WHERE entity_id = ?)"
            " ORDER BY f.trust_score DESC, f.recorded_at DESC LIMIT ?",
            (*ids, user_id, min_trust, entity_id, limit),
        ).fetchall()
        facts = with_entities(conn, [fact_from_row(r) for r in rows])
    found = [{"name": n[1], "kind": n[2], "shared_facts": n[3]} for n in neighbours]
    return found, facts


def reason(
    conn: Connection, user_id: str, entities: Sequence[str], *, limit: int,
    min_trust: float,
) -> list[tuple[Fact, list[str]]]:
    """Live facts about the given entities, those linking the most of them first; each
    with the names it covers. A fact covering all of them answers "what do A and B ...?"."""
    wanted: dict[int, str] = {}
    for name in entities:
        entity_id = _entity_id(conn, user_id, name)
        if entity_id is not None:
            wanted[entity_id] = name
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT {_F}, group_concat(fe.entity_id) FROM fact_entities fe"
        f" JOIN facts f ON f.id = fe.fact_id WHERE fe.entity_id IN ({marks}) AND {_LIVE}"
        " GROUP BY f.id ORDER BY count(*) DESC, f.trust_score DESC, f.recorded_at DESC"
        " LIMIT ?",
        (*wanted, user_id, min_trust, limit),
    ).fetchall()
    facts = with_entities(conn, [fact_from_row(r[:-1]) for r in rows])
    covers = [[wanted[int(i)] for i in str(r[-1]).split(",")] for r in rows]
    total = len(entities)
    return [
        (replace(f, score=len(c) / total), c) for f, c in zip(facts, covers, strict=True)
    ]


def contradictions(
    conn: Connection, user_id: str, *, limit: int, fact_id: int | None = None
) -> list[Contradiction]:
    """Superseded facts with the fact that retired each, newest first (``fact_id``:
    only pairs that involve that fact)."""
    sql = (
        f"SELECT {_F} FROM facts f WHERE f.user_id = ? AND f.superseded_by IS NOT NULL"
        " AND f.retired_reason = 'superseded'"
    )
    params: list[Any] = [user_id]
    if fact_id is not None:
        sql += " AND (f.id = ? OR f.superseded_by = ?)"
        params += [fact_id, fact_id]
    rows = conn.execute(sql + " ORDER BY f.retired_at DESC, f.id DESC LIMIT ?",
                        (*params, limit)).fetchall()
    older = with_entities(conn, [fact_from_row(r) for r in rows])
    pairs: list[Contradiction] = []
    for old in older:
        row = conn.execute(f"SELECT {_F} FROM facts f WHERE f.id = ? AND f.user_id = ?",
                           (old.superseded_by, user_id)).fetchone()
        if row:
            pairs.append(Contradiction(old, with_entities(conn, [fact_from_row(row)])[0]))
    return pairs


def chain(conn: Connection, user_id: str, fact_id: int) -> list[Fact]:
    """The supersession chain through ``fact_id``, oldest first: the facts it replaced
    (and those they replaced), itself, and the facts that replaced it ([] if unknown)."""
    def one(sql: str, value: int) -> Fact | None:
        row = conn.execute(f"SELECT {_F} FROM facts f WHERE {sql} AND f.user_id = ?"
                           " ORDER BY f.id DESC LIMIT 1", (value, user_id)).fetchone()
        return fact_from_row(row) if row else None
    start = one("f.id = ?", fact_id)
    if start is None:
        return []
    found, seen = [start], {start.id}
    back = one("f.superseded_by = ?", start.id)
    while back is not None and back.id not in seen:
        found.insert(0, back)
        seen.add(back.id)
        back = one("f.superseded_by = ?", back.id)
    ahead = one("f.id = ?", start.superseded_by) if start.superseded_by else None
    while ahead is not None and ahead.id not in seen:
        found.append(ahead)
        seen.add(ahead.id)
        ahead = one("f.id = ?", ahead.superseded_by) if ahead.superseded_by else None
    return with_entities(conn, found)


def list_facts(
    conn: Connection, user_id: str, *, limit: int, offset: int = 0,
    include_retired: bool = False, category: str = "", min_trust: float | None = None,
) -> list[Fact]:
    """Facts newest first: live ones (also those under the trust floor, unless
    ``min_trust`` is given), and retired ones with ``include_retired``."""
    sql = f"SELECT {_F} FROM facts f WHERE f.user_id = ?"
    params: list[Any] = [user_id]
    if not include_retired:
        sql += " AND f.retired_at IS NULL"
    if category:
        sql += " AND f.category = ?"
        params.append(category)
    if min_trust is not None:
        sql += " AND f.trust_score >= ?"
        params.append(min_trust)
    sql += " ORDER BY f.recorded_at DESC, f.id DESC LIMIT ? OFFSET ?"
    rows = conn.execute(sql, (*params, limit, offset)).fetchall()
    return with_entities(conn, [fact_from_row(r) for r in rows])


def revisions(conn: Connection, user_id: str, fact_id: int) -> list[Revision]:
    """The history of ``fact_id``, oldest first."""
    rows = conn.execute(
        "SELECT id, fact_id, action, actor, at, session_id, tool_call_id, before, after"
        " FROM fact_revisions WHERE user_id = ? AND fact_id = ? ORDER BY id",
        (user_id, fact_id),
    ).fetchall()
    return [
        Revision(
            id=r[0], fact_id=r[1], action=r[2], actor=r[3], at=r[4], session_id=r[5],
            tool_call_id=r[6], before=json.loads(r[7]) if r[7] else None,
            after=json.loads(r[8]) if r[8] else None,
        )
        for r in rows
    ]
