"""Relevance ranking of the PostgreSQL session store, the twin of the SQLite one.

The steps and constants are those of :mod:`memoryport.storage.sessions.sqlite.search`,
with ``ts_rank_cd`` (cover density, normalised by length) in place of BM25, so both
backends rank alike:

* **A bounded candidate set.** A query matching at most :data:`RELEVANCE_WINDOW`
  messages ranks all of them; a more common one ranks its newest
  :data:`RELEVANCE_WINDOW` matches (``ORDER BY id DESC LIMIT`` inside a ``MATERIALIZED``
  CTE, so ``ts_rank_cd`` never runs over hundreds of thousands of rows), widened eight
  times over when the scope filters out too many. An OR of terms ranks its rarest terms'
  matches exactly first (very common terms then act as stopwords).
* **Context re-rank.** Natural-language queries of two or more terms are re-ordered by
  :func:`~memoryport.storage.sessions.temporal.context_rerank` (neighbours, session,
  speaker and time signals) over the top :data:`CONTEXT_DEPTH` candidates; other queries
  with time hints by its time signals alone (``TIME_ONLY``).
* **Literal text first.** Punctuated text the word index drops (``what?``, ``a/b``) ranks
  the messages containing it literally first; when the ranked candidates hold too few,
  the newest matches of the literal's words are checked (at most :data:`LITERAL_SCAN`).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from operator import itemgetter
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg import sql

from memoryport.storage import search_lexemes
from memoryport.storage.sessions.postgres.dialect import (
    Owners,
    Ranked,
    Scope,
    decode_text,
    encode_text,
    filter_scope,
    keep_in_scope,
)
from memoryport.storage.sessions.postgres.migrations import (
    SCOPE_SETTING,
    SEARCH_VIEW,
)
from memoryport.storage.sessions.query import Node, Or, ParsedQuery, Term, literal_node
from memoryport.storage.sessions.temporal import (
    CONTEXT_DEPTH,
    SESSION_SCAN,
    TIME_ONLY,
    WEIGHTS,
    ContextRow,
    ContextWeights,
    TimeHint,
    context_rerank,
    session_totals,
)

__all__ = [
    "LITERAL_SCAN",
    "RELEVANCE_WINDOW",
    "estimate",
    "estimates",
    "literal_first",
    "natural",
    "pipelined",
    "ranked_ids",
    "rerank_context",
    "tsquery_text",
    "weights_for",
]

Cursor = psycopg.Cursor[Any]

RELEVANCE_WINDOW = 1500
"""Relevance ranks at most this many of the newest matches first (as SQLite does)."""
LITERAL_SCAN = 20000
"""At most this many word-index matches (newest first) are checked for literal text."""
_LITERAL_FETCH = 2000
"""Literal text whose words the statistics expect in at most this many messages is looked
for among all of them through the GIN index; more common words walk id ranges."""


def natural(parsed: ParsedQuery) -> bool:
    """True for a natural-language query of two or more terms (no boolean syntax or
    prefix, not only phrases): the queries the context signals re-rank."""
    terms = parsed.terms
    if parsed.explicit or len(terms) < 2 or any(t.prefix for t in terms):
        return False
    return not all(t.quoted for t in terms)


def weights_for(parsed: ParsedQuery, plan: str, hint: TimeHint) -> ContextWeights | None:
    """The re-rank weights of a relevance search (``None``: plain ranking order)."""
    if plan == "fts" and natural(parsed):
        return WEIGHTS
    return TIME_ONLY if hint else None


def tsquery_text(cur: Cursor, schema: sql.Identifier, node: Node) -> str:
    """The tsquery of ``node`` ("" when no lexeme or only negations remain), built by the
    function that builds the stored lexemes (``search_lexemes.tsquery``; no round trip)."""
    return search_lexemes.tsquery(node)


_OWNERS: WeakKeyDictionary[Cursor, Owners] = WeakKeyDictionary()
"""The session and role of every candidate the ranking read on a cursor (one search's
transaction), for the re-rank's scope checks and session totals."""
_ESTIMATES: WeakKeyDictionary[Cursor, dict[str, int]] = WeakKeyDictionary()
"""Estimates already read on a cursor (one search's transaction): the ranking and the
literal walk ask for the same query's."""
_HIGHEST: WeakKeyDictionary[Cursor, int] = WeakKeyDictionary()
"""The newest message id the ranking read on a cursor (one search call), where the
literal walk starts."""


def pipelined(
    cur: Cursor, queries: Sequence[tuple[sql.Composed, Sequence[Any]]]
) -> list[list[Any]]:
    """The rows of independent ``queries``, sent together (pipeline mode: one round trip
    for all, in the cursor's transaction)."""
    if len(queries) == 1:
        return [cur.execute(queries[0][0], queries[0][1]).fetchall()]
    conn = cur.connection
    cursors = [conn.cursor() for _ in queries]
    with conn.pipeline():
        for each, (query, params) in zip(cursors, queries, strict=True):
            each.execute(query, params)
    return [each.fetchall() for each in cursors]


def _estimate_sql(schema: sql.Identifier, compiled: str) -> sql.Composed:
    return sql.SQL(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {{s}}.{SEARCH_VIEW} m WHERE m.tsv @@ {{q}}::tsquery"
    ).format(s=schema, q=sql.Literal(compiled))


def _plan_rows(rows: list[Any]) -> int:
    """The largest row estimate of an ``EXPLAIN (FORMAT JSON)`` plan: the index scan's,
    before the row-level security filter."""
    plan = rows[0][0] if rows else None
    nodes = [plan[0]["Plan"]] if isinstance(plan, list) and plan else []
    most = 0.0
    while nodes:
        node = nodes.pop()
        most = max(most, float(node.get("Plan Rows", 0)))
        nodes.extend(node.get("Plans", []))
    return int(most)


def estimates(
    cur: Cursor,
    schema: sql.Identifier,
    compiled: Sequence[str],
    extra: tuple[sql.Composed, Sequence[Any]] | None = None,
) -> tuple[list[int], list[Any]]:
    """The planner's estimates of the messages matching each tsquery of ``compiled`` (from
    the ``tsv`` column's statistics; no row is read), asked together, and the rows of
    ``extra``, a query sent with them. Only costs depend on estimates: every path they
    pick returns the same rows."""
    known = _ESTIMATES.setdefault(cur, {})
    missing = [c for c in dict.fromkeys(compiled) if c not in known]
    queries = [(_estimate_sql(schema, c), ()) for c in missing]
    results = pipelined(cur, [*queries, *([extra] if extra else [])]) if queries or extra else []
    known.update((c, _plan_rows(rows)) for c, rows in zip(missing, results, strict=False))
    return [known[c] for c in compiled], (results[-1] if extra else [])


def estimate(cur: Cursor, schema: sql.Identifier, compiled: str) -> int:
    """:func:`estimates` of one tsquery."""
    return estimates(cur, schema, [compiled])[0][0]


_ALL = (
    "SELECT m.id, ts_rank_cd(m.tsv, q, 1), m.session_id, m.role"
    f" FROM {{s}}.{SEARCH_VIEW} m, CAST(%s AS tsquery) AS q WHERE m.tsv @@ q"
)
_RANGE = _ALL + " AND m.id > %s AND m.id <= %s"
_RANGE_READ = (
    "SELECT x.id, ts_rank_cd(x.tsv, q, 1), x.session_id, x.role FROM (SELECT m.id, m.tsv,"
    f" m.session_id, m.role FROM {{s}}.{SEARCH_VIEW} m"
    " WHERE m.id > %s AND m.id <= %s OFFSET 0) AS x, CAST(%s AS tsquery) AS q"
    " WHERE x.tsv @@ q"
)
_NEWEST_READ = (
    "SELECT m.id, ts_rank_cd(m.tsv, q, 1), m.session_id, m.role"
    f" FROM {{s}}.{SEARCH_VIEW} m, CAST(%s AS tsquery) AS q"
    " WHERE (m.tsv @@ q) IS TRUE ORDER BY m.id DESC LIMIT %s"
)
"""The newest matches of a common word: the primary key read backwards, each row tested,
stopping at the limit (``IS TRUE`` is no index condition, so the GIN index, which would
list every match first, is not a choice)."""
_TID_COST = 0.2
"""What listing one match of the GIN index costs, in rows read in id order."""


def by_index(expected: int, rows: int) -> bool:
    """Whether ``rows`` ids of a word with ``expected`` matches are cheaper to read with
    the GIN index and the primary key together (``BitmapAnd``: the bitmap lists every
    match of the word) than row by row in id order (``OFFSET 0`` keeps the range a
    primary-key read: the planner prices a long posting list far too low, and took
    100 ms to list ``really``'s 490,000 matches for a range of 4,000 rows)."""
    return expected * _TID_COST < rows


def range_sql(template: str, fenced: str, expected: int, rows: int) -> tuple[str, bool]:
    """``template`` (the word test in ``WHERE``) when :func:`by_index`, else ``fenced``;
    and whether the fenced one was chosen."""
    return (template, False) if by_index(expected, rows) else (fenced, True)


def _scored(rows: Sequence[Sequence[Any]], owners: Owners) -> list[tuple[int, float]]:
    """``(id, score)`` of candidate rows (id, score, session, role), newest first; their
    sessions and roles go to ``owners``."""
    owners.update({r[0]: (r[2], r[3]) for r in rows})  # bigint, text: int and str already
    return sorted([(r[0], r[1]) for r in rows], reverse=True)  # real: a float already


def _newest(
    cur: Cursor, schema: sql.Identifier, compiled: str, window: int, owners: Owners
) -> list[tuple[int, float]]:
    """The newest ``window`` matches with their ``ts_rank_cd``. A query the statistics
    call rare reads every match through the GIN index; a more common one reads id
    ranges backwards, sized from the estimated share of matches. The planner serves a
    range with the GIN index and the primary key together (``BitmapAnd``: only the
    range's matches are fetched, so ``photo*``, 18,000 of 1M messages, fetches ~2,000
    rows, not 18,000); a word as common as ``really`` (40%) is read row by row backwards
    from the newest, until ``window`` match (:data:`_NEWEST_READ`: ~4,000 rows instead of
    fetching 400,000 matches to keep the newest 1,500, and no range read past the last
    one needed)."""
    stats = sql.SQL(
        "SELECT max(id), (SELECT greatest(reltuples, 1) FROM pg_class"
        " WHERE oid = %s::regclass), CASE WHEN current_setting(%s, true) = '*' THEN NULL"
        " ELSE (SELECT sum(message_count) FROM {s}.sessions) END FROM {s}.messages"
    ).format(s=schema)
    table = sql.SQL("{s}.messages").format(s=schema).as_string(cur)
    counted, found_stats = estimates(cur, schema, [compiled], (stats, (table, SCOPE_SETTING)))
    expected, row = counted[0], (found_stats[0] if found_stats else None)
    high = _HIGHEST[cur] = int(row[0]) if row and row[0] is not None else 0
    rows_total = max(float(row[1]) if row and row[1] else 1.0, float(expected), 1.0)
    # a connection bound to one user sees only its rows (row-level security), so an id
    # range holds fewer of its matches
    seen = 1.0 if not row or row[2] is None else min(1.0, float(row[2]) / rows_total)
    share = expected / rows_total * max(seen, 1e-6)
    if expected <= 2 * window:
        rows = cur.execute(sql.SQL(_ALL).format(s=schema), (compiled,)).fetchall()
        return _scored(rows, owners)[:window]
    chunk = int(window / share * 1.25) + 64
    if not by_index(expected, chunk):  # common: the newest rows in id order, until enough
        newest = sql.SQL(_NEWEST_READ).format(s=schema)
        return _scored(cur.execute(newest, (compiled, window)).fetchall(), owners)
    found: list[tuple[int, float]] = []
    while high > 0 and len(found) < window:
        low = max(0, high - chunk)
        query, fenced = range_sql(_RANGE, _RANGE_READ, expected, high - low)
        params = (low, high, compiled) if fenced else (compiled, low, high)
        rows = cur.execute(sql.SQL(query).format(s=schema), params).fetchall()
        found.extend(_scored(rows, owners))
        high, chunk = low, chunk * 2
    return found[:window]


def _rank(
    cur: Cursor,
    schema: sql.Identifier,
    compiled: str,
    scope: Scope,
    need: int,
    window: int | None,
    scores: dict[int, float],
) -> Ranked:
    """Rank every match (``window=None``) or the newest ``window`` ones, widened when the
    scope leaves fewer than ``need``; ``scores`` receives every match read, in scope or
    not. Ties: the newest first. The scope is checked in rank order, a chunk at a time,
    until ``need`` pass (:func:`keep_in_scope`)."""
    owners = _OWNERS.setdefault(cur, {})
    while True:
        if window is None:
            rows = cur.execute(sql.SQL(_ALL).format(s=schema), (compiled,)).fetchall()
            found = _scored(rows, owners)
        else:
            found = _newest(cur, schema, compiled, window, owners)
        ordered = sorted(found, key=itemgetter(1, 0), reverse=True)  # score, then newest
        scores.update(ordered)
        # every chunk read is kept (as SQLite's _rank): the page, the re-rank and
        # literal_first read no further; checking all 1,500 candidates of a window
        # cost more than the rest of a discover call
        kept = keep_in_scope(cur, schema, ordered, scope, need, owners, whole_chunks=True)
        if len(kept) >= need or window is None or len(found) < window:
            return kept
        window *= 8


def ranked_ids(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    compiled: str,
    scope: Scope,
    need: int,
    scores: dict[int, float],
) -> Ranked:
    """Relevance order over a bounded candidate set (see the module docstring). Only the
    first ``need`` in scope are certain to be listed (see :func:`_in_scope`)."""
    root = parsed.root
    if not (isinstance(root, Or) and all(isinstance(c, Term) for c in root.children)):
        return _rank(cur, schema, compiled, scope, need, RELEVANCE_WINDOW, scores)
    terms = [tsquery_text(cur, schema, child) for child in root.children]
    counts, _ = estimates(cur, schema, [compiled, *[t for t in terms if t]])
    if counts[0] <= RELEVANCE_WINDOW:
        return _rank(cur, schema, compiled, scope, need, None, scores)
    ranked: Ranked = []
    selective = _selective(cur, schema, terms)
    if selective:
        ranked = _rank(cur, schema, selective, scope, need, None, scores)
        if len(ranked) >= need:
            return ranked
    seen = {i for i, _ in ranked}
    more = _rank(cur, schema, compiled, scope, need, RELEVANCE_WINDOW, scores)
    return ranked + [r for r in more if r[0] not in seen]


def _selective(cur: Cursor, schema: sql.Identifier, terms: list[str]) -> str:
    """The tsquery of an OR's rarest terms (total matches <= the window), or "" (``terms``:
    each child's tsquery, "" for one without lexemes; their estimates are known)."""
    counts, _ = estimates(cur, schema, [t for t in terms if t])
    counted = sorted(zip(counts, range(len(counts)), [t for t in terms if t], strict=True))
    chosen, total = [], 0
    for matches, _, text in counted:
        if total + matches > RELEVANCE_WINDOW:
            break
        chosen.append(f"({text})")
        total += matches
    return " | ".join(chosen)


def _context_columns(a: str) -> str:
    """A context row of message ``a``: id, session, time, content, the ids of the
    session's messages before and after it, metadata, role."""
    return (
        f"{a}.id, {a}.session_id, {a}.timestamp, {a}.content,"
        f" (SELECT max(x.id) FROM {{s}}.messages x WHERE x.session_id = {a}.session_id"
        f" AND x.id < {a}.id), (SELECT min(x.id) FROM {{s}}.messages x"
        f" WHERE x.session_id = {a}.session_id AND x.id > {a}.id), {a}.metadata, {a}.role"
    )


_CONTEXT = f"SELECT {_context_columns('m')}, true FROM {{s}}.messages m WHERE m.id = ANY(%s)"
_CONTEXT_NEAR = (
    "WITH t(id, session_id, timestamp, content, prev, next, metadata, role, top)"
    f" AS MATERIALIZED ({_CONTEXT}) SELECT * FROM t UNION ALL"
    f" SELECT {_context_columns('n')}, false FROM {{s}}.messages n"
    " WHERE n.id = ANY(ARRAY(SELECT t.prev FROM t UNION SELECT t.next FROM t))"
    " AND (n.id = ANY(%b)) IS TRUE"
)
"""The context rows of the top candidates (flag true) and of their neighbours among the
scored ids (flag false), in one statement: the neighbours' rows are kept only for those
in scope (their sessions are the candidates', already checked). The neighbours are
primary-key probes; the scored ids (``IS TRUE``: no index condition) only filter them
(as an index condition the planner probed all 1,500 scored ids)."""


def _speaker(metadata: str | None, role: str) -> Any:
    """``metadata["speaker"]``, else ``metadata["name"]``, else the role (as SQLite's
    ``json_extract`` reads them: a value that is not a string counts as no name)."""
    try:
        found = json.loads(metadata) if metadata else None
    except ValueError:
        found = None
    if isinstance(found, dict):
        for key in ("speaker", "name"):
            if found.get(key) is not None:
                return found[key]
    return role


def _context_rows(
    cur: Cursor, schema: sql.Identifier, ids: list[int], near: Sequence[int] | None = None
) -> tuple[dict[int, ContextRow], dict[int, ContextRow]]:
    """The context rows of ``ids``, and (``near``: the scored ids) those of their
    neighbours in ``near`` (see :data:`_CONTEXT_NEAR`)."""
    if near is None:
        rows = cur.execute(sql.SQL(_CONTEXT).format(s=schema), (ids,)).fetchall()
    else:
        query = sql.SQL(_CONTEXT_NEAR).format(s=schema)
        rows = cur.execute(query, (ids, list(near))).fetchall()
    found: tuple[dict[int, ContextRow], dict[int, ContextRow]] = ({}, {})
    for r in rows:
        found[0 if r[8] else 1][int(r[0])] = (
            int(r[0]),
            str(r[1]),
            float(r[2]),
            decode_text(r[3]) or "",
            None if r[4] is None else int(r[4]),
            None if r[5] is None else int(r[5]),
            _speaker(r[6], str(r[7])),
        )
    return found


def rerank_context(
    cur: Cursor,
    schema: sql.Identifier,
    ranked: Ranked,
    scores: dict[int, float],
    hint: TimeHint,
    search: tuple[str, Scope],
    weights: ContextWeights,
) -> Ranked:
    """Re-rank the top ``CONTEXT_DEPTH`` candidates and their matching neighbours in
    ``search``'s scope (the query, the scope) with :func:`context_rerank`."""
    query, scope = search
    known = _OWNERS.get(cur, {})  # every candidate's session and role, as ranking read them
    top = [i for i, _ in ranked[:CONTEXT_DEPTH]]
    neighbours = bool(weights.prev or weights.next)
    rows, spare = _context_rows(cur, schema, top, list(scores) if neighbours else None)
    near = {n for r in rows.values() for n in r[4:6] if n in scores and n not in rows}
    if near and neighbours:
        kept = filter_scope(cur, schema, [*near], scope, known)
        rows.update((i, spare[i]) for i in kept if i in spare)  # (near: all in spare)
    sessions: dict[str, float] = {}
    if weights.session:
        best = heapq.nlargest(SESSION_SCAN, scores.items(), key=itemgetter(1))
        owner = {i: r[1] for i, r in rows.items()}
        owner.update((i, known[i][0]) for i, _ in best if i not in owner and i in known)
        missing = [i for i, _ in best if i not in owner]
        if missing:
            found = cur.execute(
                sql.SQL("SELECT id, session_id FROM {s}.messages WHERE id = ANY(%s)").format(
                    s=schema
                ),
                (missing,),
            )
            owner.update((int(i), str(s)) for i, s in found)
        sessions = session_totals(best, owner)
    events: dict[int, list[tuple[float, float]]] = {}
    if hint.events and weights.event and rows:
        found = cur.execute(
            sql.SQL(
                "SELECT message_id, start_at, end_at FROM {s}.message_events"
                " WHERE message_id = ANY(%s)"
            ).format(s=schema),
            (list(rows),),
        )
        for message_id, start, end in found:
            events.setdefault(int(message_id), []).append((float(start), float(end)))
    candidates = sorted(rows.values(), key=lambda r: (-scores.get(r[0], 0.0), -r[0]))
    order = context_rerank(
        candidates, scores, hint, query=query, sessions=sessions, events=events, weights=weights
    )
    return order + [r for r in ranked[CONTEXT_DEPTH:] if r[0] not in rows]


def literal_first(
    cur: Cursor,
    schema: sql.Identifier,
    literals: Sequence[str],
    scope: Scope,
    need: int,
    ranked: Ranked,
) -> Ranked:
    """``ranked`` with the messages containing every literal (case-insensitive) first:
    those already ranked keep their order, then the newest others a bounded scan finds."""
    node = literal_node(literals)
    expr = tsquery_text(cur, schema, node) if node is not None else ""
    if not expr:
        return ranked
    checks = sql.SQL(" AND ").join(
        [sql.SQL("strpos(lower(m.content), lower(%s)) > 0")] * len(literals)
    )
    encoded: list[Any] = [encode_text(lit) for lit in literals]
    top = [i for i, _ in ranked[:need]]
    check = sql.SQL("SELECT m.id FROM {s}.messages m WHERE m.id = ANY(%s) AND {c}").format(
        s=schema, c=checks
    )
    # the walk's first statement goes with the check when it is known without asking
    # (the estimate and the newest id were read with the ranking): one round trip
    walk = _walk_start(cur, schema, expr, (checks, encoded))
    got = pipelined(cur, [(check, [top, *encoded]), *([walk] if walk else [])])
    hit = {int(r[0]) for r in got[0]}
    found = [i for i in top if i in hit]
    if len(found) < need:
        search, first = (expr, scope), (got[1] if walk else None)
        found.extend(_literal_walk(cur, schema, search, (checks, encoded), found, need, first))
    literal = set(found)
    first = [r for r in ranked if r[0] in literal]
    seen = {i for i, _ in first}
    first += [(i, 0.0) for i in found if i not in seen]
    return first + [r for r in ranked if r[0] not in literal]


_FOUND = "array_agg(ARRAY[m.id::text, m.session_id, m.role] ORDER BY m.id DESC)"
_LITERAL_RANGES = (
    f"SELECT count(*), {_FOUND} FILTER (WHERE {{c}})"
    f" FROM {{s}}.{SEARCH_VIEW} m, CAST(%s AS tsquery) AS q"
    " WHERE m.tsv @@ q AND m.id > %s AND m.id <= %s",
    f"SELECT count(*) FILTER (WHERE m.tsv @@ q), {_FOUND} FILTER (WHERE m.tsv @@ q AND {{c}})"
    f" FROM {{s}}.{SEARCH_VIEW} m, CAST(%s AS tsquery) AS q WHERE m.id > %s AND m.id <= %s",
)
"""A literal walk's chunk: the word test in ``WHERE`` (index), or in the filters (read
in id order: the test is a selected value, never a plan condition); each match found
with its session and role (for the scope check)."""


def _walk_statement(
    schema: sql.Identifier,
    expr: str,
    checks: tuple[sql.Composable, list[Any]],
    expected: int,
    span: tuple[int, int] | None,
) -> tuple[sql.Composed, list[Any]]:
    """A literal walk's statement: every match by index (``span`` None, few matches), or
    the matches in the id range ``span`` (low, high]."""
    if span is None:
        query = sql.SQL(
            f"SELECT m.id, m.session_id, m.role FROM {{s}}.{SEARCH_VIEW} m"
            " WHERE m.tsv @@ CAST(%s AS tsquery) AND {c} ORDER BY m.id DESC LIMIT %s"
        ).format(s=schema, c=checks[0])
        return query, [expr, *checks[1], LITERAL_SCAN]
    template = sql.SQL(range_sql(*_LITERAL_RANGES, expected, span[1] - span[0])[0])
    return template.format(s=schema, c=checks[0]), [*checks[1], expr, *span]


_FIRST_CHUNK = 4096


def _walk_start(
    cur: Cursor, schema: sql.Identifier, expr: str, checks: tuple[sql.Composable, list[Any]]
) -> tuple[sql.Composed, list[Any]] | None:
    """The literal walk's first statement when the cursor already knows ``expr``'s
    estimate (and, for a range walk, the newest id), else None."""
    expected = _ESTIMATES.get(cur, {}).get(expr)
    if expected is None:
        return None
    if expected <= _LITERAL_FETCH:
        return _walk_statement(schema, expr, checks, expected, None)
    high = _HIGHEST.get(cur)
    if not high:
        return None
    return _walk_statement(schema, expr, checks, expected, (max(0, high - _FIRST_CHUNK), high))


def _literal_walk(
    cur: Cursor,
    schema: sql.Identifier,
    search: tuple[str, Scope],
    checks: tuple[sql.Composable, list[Any]],
    known: list[int],
    need: int,
    first: list[Any] | None = None,
) -> list[int]:
    """The newest messages in scope matching the tsquery that contain the literal text
    (newest first, none of ``known``) until ``known`` and they make ``need``: id ranges
    read backwards in growing chunks until :data:`LITERAL_SCAN` word matches were
    checked. A chunk's matches are fetched through the GIN index and the primary key
    together (``BitmapAnd``), or, for a very common word, by reading the range in order.
    ``first``: the rows of the first statement, already read (:func:`_walk_start`)."""
    expr, scope = search
    seen = set(known)
    expected = estimate(cur, schema, expr)
    if expected <= _LITERAL_FETCH:  # few matches: read them all by index
        statement = _walk_statement(schema, expr, checks, expected, None)
        rows = first if first is not None else cur.execute(*statement).fetchall()
        owners = {int(r[0]): (str(r[1]), str(r[2])) for r in rows}
        fresh = [(i, 0.0) for i in owners if i not in seen]
        return [i for i, _ in keep_in_scope(cur, schema, fresh, scope, need, owners)]
    high = _HIGHEST.get(cur)
    if high is None:
        newest = sql.SQL("SELECT max(id) FROM {s}.messages").format(s=schema)
        row = cur.execute(newest).fetchone()
        high = int(row[0]) if row and row[0] is not None else 0
    found: list[int] = []
    scanned, chunk = 0, _FIRST_CHUNK
    while high > 0 and len(known) + len(found) < need and scanned < LITERAL_SCAN:
        low = max(0, high - chunk)
        statement = _walk_statement(schema, expr, checks, expected, (low, high))
        got = first[0] if first else cur.execute(*statement).fetchone()
        first = None
        scanned += int(got[0]) if got else 0
        owners = {int(i): (str(sid), str(role)) for i, sid, role in (got[1] if got else None) or []}
        fresh = [(i, 0.0) for i in owners if i not in seen]
        found.extend(i for i, _ in keep_in_scope(cur, schema, fresh, scope, len(fresh), owners))
        high, chunk = low, min(chunk * 4, 262144)
    return found
