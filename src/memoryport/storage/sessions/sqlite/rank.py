"""Relevance order for the SQLite session store: which matches are ranked, and how.

* **A bounded candidate set** (:func:`ranked_ids`): a query matching at most
  :data:`RELEVANCE_WINDOW` messages is ranked by exact BM25 over all of them; a common word
  ranks its newest matches; a query of several words keeps its rarest terms first.
* **The context re-rank** (:func:`rerank_context`): a natural-language query's best
  candidates are re-ordered with the neighbour, session, speaker and date signals of
  :mod:`memoryport.storage.sessions.temporal`, as the PostgreSQL backend's ``rank`` module
  does.
* **Literal text first** (:func:`literal_first`): punctuated text the word index drops
  (``what?``, ``a/b``) is checked in the newest matches.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from memoryport.storage.sessions.query import (
    Node,
    Or,
    ParsedQuery,
    Term,
    compile_fts5,
    literal_node,
)
from memoryport.storage.sessions.temporal import (
    CONTEXT_DEPTH,
    SESSION_SCAN,
    ContextWeights,
    TimeHint,
    context_rerank,
    session_totals,
)

__all__ = [
    "LITERAL_SCAN",
    "RELEVANCE_WINDOW",
    "count_upto",
    "filter_scope",
    "literal_first",
    "natural",
    "ranked_ids",
    "rerank_context",
]

RELEVANCE_WINDOW = 1500
"""Relevance ranks at most this many of the newest matches first (widened when filters
leave too few hits); a rare term's matches all fit, a very common word's newest do."""


def natural(parsed: ParsedQuery) -> bool:
    """True for a natural-language query of two or more terms (no boolean syntax or
    prefix, not only phrases): the queries the context signals re-rank. A one-word lookup
    or a phrase search keeps exact BM25 order."""
    terms = parsed.terms
    if parsed.explicit or len(terms) < 2 or any(t.prefix for t in terms):
        return False
    return not all(t.quoted for t in terms)


LITERAL_SCAN = 20000
"""At most this many word-index matches (newest first) are checked for a query's literal
punctuated text (``what?``, ``a/b``): the word index drops the punctuation."""


def literal_first(
    conn: sqlite3.Connection,
    literals: Sequence[str],
    scope: tuple[str, list[Any]],
    need: int,
    ranked: list[tuple[int, float]],
) -> list[tuple[int, float]]:
    """``ranked`` with the messages containing every literal (case-insensitive) first:
    those already ranked keep their order, then the newest others the scan found."""
    node = literal_node(literals)
    if node is None:
        return ranked
    expr = compile_fts5(node)
    checks = " AND ".join("content LIKE ? ESCAPE '\\'" for _ in literals)
    patterns = [
        "%" + lit.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        for lit in literals
    ]
    check_sql = f"SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?)) AND {checks}"
    walk_sql = (
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid < ?"
        " ORDER BY rowid DESC LIMIT ?"
    )
    top = [i for i, _ in ranked[:need]]
    found = [r[0] for r in conn.execute(check_sql, [json.dumps(top), *patterns])]
    if len(found) >= need:  # the best-ranked hits already contain the literal text
        literal = set(found)
        return [r for r in ranked if r[0] in literal] + [r for r in ranked if r[0] not in literal]
    bound, scanned, chunk = 2**62, 0, 256
    while len(found) < need and scanned < LITERAL_SCAN:
        ids = [r[0] for r in conn.execute(walk_sql, (expr, bound, chunk))]
        if not ids:
            break
        scanned, bound = scanned + len(ids), ids[-1]
        hit = {r[0] for r in conn.execute(check_sql, [json.dumps(ids), *patterns])}
        known = set(found)
        ordered = [i for i in ids if i in hit and i not in known]
        keep = filter_scope(conn, ordered, scope) if ordered else set()
        found.extend(i for i in ordered if i in keep)
        if len(ids) < chunk:
            break
        chunk = min(chunk * 4, 8192)
    literal = set(found)
    first = [r for r in ranked if r[0] in literal]
    seen = {i for i, _ in first}
    first += [(i, 0.0) for i in found if i not in seen]
    return first + [r for r in ranked if r[0] not in literal]


_CONTEXT_SQL = (
    "SELECT m.id, m.session_id, m.timestamp, m.content,"
    " (SELECT max(x.id) FROM messages x WHERE x.session_id = m.session_id AND x.id < m.id),"
    " (SELECT min(x.id) FROM messages x WHERE x.session_id = m.session_id AND x.id > m.id),"
    " coalesce(CASE WHEN json_valid(m.metadata) THEN coalesce(json_extract(m.metadata,"
    " '$.speaker'), json_extract(m.metadata, '$.name')) END, m.role)"
    " FROM messages m WHERE m.id IN (SELECT value FROM json_each(?))"
)
_IDS = "(SELECT value FROM json_each(?))"


def rerank_context(
    conn: sqlite3.Connection,
    ranked: list[tuple[int, float]],
    scores: dict[int, float],
    hint: TimeHint,
    search: tuple[str, tuple[str, list[Any]]],
    weights: ContextWeights,
) -> list[tuple[int, float]]:
    """Re-rank the top ``CONTEXT_DEPTH`` candidates and their matching neighbours in
    ``search``'s scope (the query, the scope) with :func:`context_rerank` (``scores``: the
    BM25 of every match the ranking pass read, in scope or not)."""
    query, scope = search
    top = ranked[:CONTEXT_DEPTH]
    rows = {r[0]: r for r in conn.execute(_CONTEXT_SQL, (json.dumps([i for i, _ in top]),))}
    near = {n for r in rows.values() for n in r[4:6] if n in scores and n not in rows}
    if near and (weights.prev or weights.next):
        ids = json.dumps(sorted(filter_scope(conn, sorted(near), scope)))
        rows.update((r[0], r) for r in conn.execute(_CONTEXT_SQL, (ids,)))
    sessions: dict[str, float] = {}
    if weights.session:
        best = heapq.nlargest(SESSION_SCAN, scores.items(), key=itemgetter(1))
        owner = {i: r[1] for i, r in rows.items()}
        missing = [i for i, _ in best if i not in owner]
        sql = f"SELECT id, session_id FROM messages WHERE id IN {_IDS}"
        owner.update(conn.execute(sql, (json.dumps(missing),)) if missing else ())
        sessions = session_totals(best, owner)
    events: dict[int, list[tuple[float, float]]] = {}
    if hint.events and weights.event:
        sql = f"SELECT message_id, start_at, end_at FROM message_events WHERE message_id IN {_IDS}"
        for message_id, start, end in conn.execute(sql, (json.dumps(list(rows)),)):
            events.setdefault(message_id, []).append((start, end))
    candidates = sorted(rows.values(), key=lambda r: (-scores.get(r[0], 0.0), r[0]))
    order = context_rerank(
        candidates, scores, hint, query=query, sessions=sessions, events=events, weights=weights
    )
    return order + [r for r in ranked[CONTEXT_DEPTH:] if r[0] not in rows]


def filter_scope(conn: sqlite3.Connection, ids: list[int], scope: tuple[str, list[Any]]
                 ) -> set[int]:
    """The ``ids`` that pass the search scope (user, source, role filters)."""
    where, params = scope
    if not where:
        return set(ids)
    sql = (
        "SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id "
        f"WHERE m.id IN (SELECT value FROM json_each(?)){where}"
    )
    return {row[0] for row in conn.execute(sql, [json.dumps(ids), *params])}


def count_upto(conn: sqlite3.Connection, table: str, expr: str, cap: int) -> int:
    """How many rows of ``table`` match ``expr``, counted up to ``cap + 1`` only."""
    sql = f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (expr, cap + 1)).fetchone()[0])


def _rank(
    conn: sqlite3.Connection,
    table: str,
    expr: str,
    scope: tuple[str, list[Any]],
    need: int,
    window: int | None,
    known: list[int] | None = None,
    scores: dict[int, float] | None = None,
) -> list[tuple[int, float]]:
    """BM25 order over a bounded match set: every match (``window=None``; callers check
    there are at most ``RELEVANCE_WINDOW``) or the newest ``window`` ones (widened when
    filters leave too few; with fewer matches than ``window`` that is every match).

    ``bm25()`` is selected without ``ORDER BY rank`` and sorted here: FTS5's rank sorter
    evaluates BM25 on a second cursor and so pays its fixed cost (a pass over each
    phrase's whole doclist to count documents) twice -- 32 ms instead of 15 ms for a word
    in 40% of 1M messages. The newest-``window`` set is one ``ORDER BY rowid DESC LIMIT``
    pass (FTS5 walks its doclists backwards), not a count, a floor seek and a rank pass.
    ``known`` receives the ids the pass read, ascending: every match from its first on,
    which lets the snippet pass of ``search`` scan instead of seeking; ``scores`` receives
    the (positive) BM25 of every match the pass read, in scope or not.
    """
    chunk = max(need * 4, 64)
    while True:
        if window is None:
            sql = f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?"
            rows = conn.execute(sql, (expr,)).fetchall()
        else:
            sql = (
                f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?"
                " ORDER BY rowid DESC LIMIT ?"
            )
            rows = conn.execute(sql, (expr, window)).fetchall()
        if known is not None:  # ascending for bisect (the newest window came descending)
            known[:] = [r[0] for r in (reversed(rows) if window else rows)]
        rows.sort(key=itemgetter(1, 0))  # bm25() is a REAL; ties: oldest first, as before
        if scores is not None:
            scores.update((r[0], -float(r[1])) for r in rows)
        kept: list[tuple[int, float]] = []
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            keep = filter_scope(conn, [r[0] for r in part], scope)
            kept.extend((r[0], -float(r[1])) for r in part if r[0] in keep)
            if len(kept) >= need:
                return kept
        if window is None or len(rows) < window:
            return kept
        window *= 8


def _terms_or(root: Node | None) -> bool:
    """True for an OR of plain terms (the shape :func:`_selective_terms` can narrow)."""
    return isinstance(root, Or) and all(isinstance(c, Term) for c in root.children)


def _selective_terms(
    conn: sqlite3.Connection, table: str, root: Node | None, leaf: Callable[[Node], str]
) -> str | None:
    """For an OR of terms, the OR of its rarest terms (total matches <= the window)."""
    if not isinstance(root, Or) or not _terms_or(root):
        return None
    counted = sorted(
        (count_upto(conn, table, leaf(c), RELEVANCE_WINDOW), i, c)
        for i, c in enumerate(root.children)
    )
    chosen, total = [], 0
    for df, _, child in counted:
        if total + df > RELEVANCE_WINDOW:
            break
        chosen.append(child)
        total += df
    if not chosen:
        return None
    return leaf(chosen[0]) if len(chosen) == 1 else leaf(Or(tuple(chosen)))


def ranked_ids(
    conn: sqlite3.Connection,
    table: str,
    parsed: ParsedQuery,
    leaf: Callable[[Node], str],
    scope: tuple[str, list[Any]],
    need: int,
    known: list[int] | None = None,
    scores: dict[int, float] | None = None,
) -> list[tuple[int, float]]:
    """Relevance order that stays fast on very common words (``known``, ``scores``: see
    :func:`_rank`).

    * At most ``RELEVANCE_WINDOW`` matches: exact BM25 over all of them.
    * An OR query with rarer terms: BM25 over the matches of its rarest terms (very common
      terms act as stopwords), then the newest matches of the full query fill up.
    * Otherwise: BM25 over the newest ``RELEVANCE_WINDOW`` matches.
    """
    expr = leaf(parsed.root) if parsed.root is not None else ""
    if not _terms_or(parsed.root):  # one pass: all matches, or the newest window of them
        return _rank(conn, table, expr, scope, need, RELEVANCE_WINDOW, known, scores)
    if count_upto(conn, table, expr, RELEVANCE_WINDOW) <= RELEVANCE_WINDOW:
        return _rank(conn, table, expr, scope, need, None, known, scores)
    ranked: list[tuple[int, float]] = []
    selective = _selective_terms(conn, table, parsed.root, leaf)
    if selective is not None:
        ranked = _rank(conn, table, selective, scope, need, None, None, scores)
        if len(ranked) >= need:
            return ranked
    seen = {i for i, _ in ranked}
    more = _rank(conn, table, expr, scope, need, RELEVANCE_WINDOW, known, scores)
    return ranked + [(i, score) for i, score in more if i not in seen]
