"""Search and window queries of the PostgreSQL session store.

Plans mirror the SQLite store (see :meth:`ParsedQuery.plan`):

* ``fts`` -- ``tsv @@ tsquery`` on the GIN index. The tsquery's lexemes are built from
  the shared parse tree in Python by the same function that builds the stored rows'
  lexemes (:mod:`memoryport.storage.search_lexemes`), so the two agree by construction;
  a query left with only stopwords or only negations returns nothing
  instead of scanning the table. Relevance (``ts_rank_cd``, cover density normalised by
  length) runs over a bounded candidate set with the context re-rank of SQLite (see
  :mod:`~memoryport.storage.sessions.postgres.rank`).
* ``trigram`` -- ``content ILIKE`` over messages containing CJK text, which the partial
  ``pg_trgm`` GIN index answers when the extension is present (and a scan otherwise).
  Relevance counts occurrences of the terms, damped by length.
* ``like`` -- short CJK terms: the same ``ILIKE`` over all content, newest first.

Every candidate query reads ``messages`` alone and the scope (user, sources, roles,
sessions) is applied to the candidate ids afterwards: joined to ``sessions`` under the
row-level security policies the planner misjudged how many sessions pass and walked
every session's messages (seconds at 1M messages). Newest/oldest order walks the
``messages_time`` index in chunks (a common word) or sorts every match (at most
:data:`SMALL_MATCH`), as SQLite does.

Snippets (``ts_headline`` or :func:`make_snippet`) are computed only for the final page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.sessions.postgres import rank
from memoryport.storage.sessions.postgres.dialect import (
    RIDERS,
    Ranked,
    Scope,
    compile_ilike,
    decode_text,
    hit_from_row,
    keep_in_scope,
    message_from_row,
    session_of,
)
from memoryport.storage.sessions.postgres.migrations import (
    CJK_REGEX,
    SEARCH_VIEW,
    cjk_rows,
    ts_config,
)
from memoryport.storage.sessions.query import (
    And,
    Node,
    Or,
    ParsedQuery,
    Term,
    iter_terms,
    make_snippet,
)
from memoryport.storage.sessions.records import MessageRecord, SearchHit, SortOrder
from memoryport.storage.sessions.rows import HIT_COLUMNS, MESSAGE_COLUMNS, shape_window
from memoryport.storage.sessions.temporal import CONTEXT_DEPTH, ContextWeights, time_hint
from memoryport.storage.timeexpr import has_time_words

__all__ = ["SMALL_MATCH", "fetch_windows", "run_search", "snippets_for"]

Cursor = psycopg.Cursor[Any]

_HEADLINE_OPTIONS = (
    "StartSel=>>>, StopSel=<<<, MaxWords=24, MinWords=8, ShortWord=0, "
    "MaxFragments=1, FragmentDelimiter=..."
)
SMALL_MATCH = 1000
"""Chronological search sorts every match by time when a query matches at most this many
messages; more frequent queries walk the ``messages_time`` index instead."""
_CHUNK = 512


def run_search(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    *,
    scope: Scope,
    sort: SortOrder,
    limit: int,
    offset: int,
    snippets: bool = True,
) -> tuple[list[SearchHit], str]:
    """Run a parsed query; return the hits and the compiled expression.

    ``snippets=False`` leaves every snippet empty (see :func:`snippets_for`).
    """
    plan = parsed.plan()
    if parsed.root is None or plan == "empty":
        return [], ""
    if plan == "fts":
        expr = rank.tsquery_text(cur, schema, parsed.root)
        if not expr:
            return [], expr
        match: tuple[str, list[Any]] = ("m.tsv @@ CAST(%s AS tsquery)", [expr])
    else:
        where, params = compile_ilike(parsed.root, "m.content")
        if plan == "trigram":
            where = f"{cjk_rows('m.')} AND {where}"
        expr, match = where, (where, list(params))
    headline = expr if plan == "fts" and snippets else ""
    hydrated: dict[int, Any] = {}
    if not headline:  # the page's rows ride along with the first scope check
        RIDERS[cur] = (lambda ids: _hit_rows(schema, ids[: offset + limit + 8], ""), hydrated)
    if sort == "relevance" and plan != "like":
        ranked = _relevance(cur, schema, parsed, plan, (expr, match), scope, offset + limit)
    else:
        cjk = plan == "trigram" or _only_cjk(parsed.root)
        walk = _Walk(schema, match, sort != "oldest", cjk)
        ranked = _ordered(cur, schema, plan, (match, walk), scope, offset + limit)
    RIDERS.pop(cur, None)
    page = ranked[offset : offset + limit]
    return _hydrate(cur, schema, parsed, page, (headline, hydrated), snippets), expr


def _relevance(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    plan: str,
    compiled: tuple[str, tuple[str, list[Any]]],
    scope: Scope,
    need: int,
) -> Ranked:
    """Relevance order: bounded candidates, context re-rank, literal text first (see
    :mod:`~memoryport.storage.sessions.postgres.rank`)."""
    expr, match = compiled
    hint = time_hint(parsed.raw, _latest(cur, schema) if has_time_words(parsed.raw) else None)
    weights = rank.weights_for(parsed, plan, hint)
    depth = max(need, CONTEXT_DEPTH) if weights else need
    scores: dict[int, float] = {}
    if plan == "fts":
        ranked = rank.ranked_ids(cur, schema, parsed, expr, scope, depth, scores)
    else:
        ranked = _trigram_ranked(cur, schema, parsed, match, scope, depth, scores, weights)
    if weights:
        ranked = rank.rerank_context(
            cur, schema, ranked, scores, hint, (parsed.raw, scope), weights
        )
    if parsed.literals and plan == "fts":
        ranked = rank.literal_first(cur, schema, parsed.literals, scope, need, ranked)
    return ranked


def _trigram_ranked(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    match: tuple[str, list[Any]],
    scope: Scope,
    need: int,
    scores: dict[int, float],
    weights: ContextWeights | None,
) -> Ranked:
    """Every CJK match by occurrence score (ties: newest first), kept in scope. The
    server orders them; without a re-rank (``weights`` None: no score beyond the page is
    read) only the best few come back, and all only when the scope drops too many."""
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    score, score_params = _occurrence_score(needles)
    query = sql.SQL(
        f"SELECT m.id, {{score}}, m.session_id, m.role FROM {{s}}.{SEARCH_VIEW} m WHERE {{where}}"
        " ORDER BY 2 DESC, 1 DESC LIMIT %s"
    ).format(score=score, s=schema, where=sql.SQL(match[0]))
    cap = None if weights is not None else max(need * 4, 64)
    while True:
        rows = cur.execute(query, [*score_params, *match[1], cap]).fetchall()
        owners = {int(r[0]): (str(r[2]), str(r[3])) for r in rows}
        ordered = [(int(r[0]), float(r[1])) for r in rows]
        scores.update(ordered)
        kept = keep_in_scope(cur, schema, ordered, scope, need, owners)
        if cap is None or len(kept) >= need or len(rows) < cap:
            return kept
        cap = None


_CJK_CHAR = re.compile(CJK_REGEX)


def _only_cjk(node: Node | None) -> bool:
    """Whether every message ``node`` matches has CJK text (``CJK_REGEX``): a term with
    a CJK character, an AND with one such part, an OR of such parts (never a NOT)."""
    if isinstance(node, Term):
        return _CJK_CHAR.search(node.text) is not None
    if isinstance(node, Or):
        return all(_only_cjk(c) for c in node.children)
    if isinstance(node, And):
        return any(_only_cjk(c) for c in node.children)
    return False  # a NOT, or nothing


def _ordered(
    cur: Cursor,
    schema: sql.Identifier,
    plan: str,
    search: tuple[tuple[str, list[Any]], _Walk],
    scope: Scope,
    need: int,
) -> Ranked:
    """Matches in message-time order (ties by id): every match sorted when there are at
    most :data:`SMALL_MATCH` word-index matches, else a walk of ``messages_time``. The
    word's estimate and the walk's first chunk are asked together (one round trip; the
    chunk, 512 rows read in index order, is dropped when the word turns out rare)."""
    (where, params), walk = search
    first: list[Any] | None = None
    if plan == "fts":
        chunk = walk.first(need)
        counted, first = rank.estimates(cur, schema, [params[0]], (walk.query, chunk))
        if counted[0] <= SMALL_MATCH:
            query = sql.SQL(
                f"SELECT m.id, m.timestamp FROM {{s}}.{SEARCH_VIEW} m WHERE {{w}}"
            ).format(s=schema, w=sql.SQL(where))
            rows = [(int(i), float(ts)) for i, ts in cur.execute(query, params)]
            rows.sort(key=lambda r: (r[1], r[0]), reverse=walk.newest)
            return keep_in_scope(cur, schema, [(i, 0.0) for i, _ in rows], scope, need)
    return _walk_by_time(cur, schema, walk, scope, need, first)


class _Walk:
    """The chunk query of a walk of ``messages_time`` (see :func:`_walk_by_time`), or of
    ``messages_cjk_time`` (``cjk``: every match has CJK text, m050)."""

    def __init__(
        self, schema: sql.Identifier, match: tuple[str, list[Any]], newest: bool, cjk: bool
    ) -> None:
        op, direction = ("<", "DESC") if newest else (">", "ASC")
        rows = f"{cjk_rows('m.')} AND " if cjk else ""
        self.query = sql.SQL(
            f"SELECT m.id, m.timestamp, ({{w}}), m.session_id, m.role"
            f" FROM {{s}}.{SEARCH_VIEW} m WHERE {rows}(m.timestamp, m.id) {{op}} (%s, %s)"
            " ORDER BY m.timestamp {d}, m.id {d} LIMIT %s"
        ).format(w=sql.SQL(match[0]), s=schema, op=sql.SQL(op), d=sql.SQL(direction))
        self.params = match[1]
        self.newest = newest
        self.start: tuple[float, int] = (float("inf"), 2**62) if newest else (float("-inf"), -1)

    def first(self, need: int) -> list[Any]:
        """The parameters of the first chunk."""
        return [*self.params, *self.start, max(_CHUNK, need * 4)]


def _walk_by_time(
    cur: Cursor,
    schema: sql.Identifier,
    walk: _Walk,
    scope: Scope,
    need: int,
    first: list[Any] | None = None,
) -> Ranked:
    """Walk messages by (timestamp, id) in growing chunks; keep those the match accepts
    and the scope allows (``first``: the first chunk's rows, already read). The match is
    a selected column, so the walk is always the ``messages_time`` index, never a plan
    chosen from a misjudged match count."""
    bound = walk.start
    chunk = max(_CHUNK, need * 4)
    kept: Ranked = []
    while len(kept) < need:
        rows = (
            first
            if first is not None
            else cur.execute(walk.query, [*walk.params, *bound, chunk]).fetchall()
        )
        first = None
        if not rows:
            break
        matched = [(int(r[0]), 0.0) for r in rows if r[2]]
        owners = {int(r[0]): (str(r[3]), str(r[4])) for r in rows if r[2]}
        kept.extend(keep_in_scope(cur, schema, matched, scope, len(matched), owners))
        bound = (float(rows[-1][1]), int(rows[-1][0]))
        if len(rows) < chunk:
            break
        chunk = min(chunk * 4, 65536)
    return kept


def _hit_rows(
    schema: sql.Identifier, ids: Sequence[int], compiled: str
) -> tuple[sql.Composed, list[Any]]:
    """The query of the hit rows of ``ids`` (with ``ts_headline`` when ``compiled``)."""
    headline = sql.SQL("ts_headline({cfg}, m.content, %s::tsquery, %s)" if compiled else "NULL")
    query = sql.SQL(
        "SELECT {cols}, {headline} FROM {s}.messages m CROSS JOIN LATERAL ({session}) AS s"
        " WHERE m.id = ANY(%s)"
    ).format(
        cols=sql.SQL(HIT_COLUMNS),
        headline=headline.format(cfg=ts_config(schema)),
        s=schema,
        session=session_of(schema),
    )
    params = [compiled, _HEADLINE_OPTIONS] if compiled else []
    return query, [*params, list(ids)]


def _hydrate(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    page: Sequence[tuple[int, float]],
    compiled: tuple[str, dict[int, Any]],
    snippets: bool,
) -> list[SearchHit]:
    """Hits for ``page`` in order; ``ts_headline`` snippets when ``compiled[0]`` is set,
    marked by hand otherwise (``snippets=False``: none). ``compiled[1]``: hit rows
    already read (with the scope check); the page is read only when one is missing."""
    if not page:
        return []
    rows = compiled[1]
    if any(i not in rows for i, _ in page):
        found = cur.execute(*_hit_rows(schema, [i for i, _ in page], compiled[0]))
        rows = {int(r[0]): r for r in found}
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    hits = []
    for message_id, score in page:
        row = rows.get(message_id)
        if row is None:
            continue
        message = message_from_row(row)
        snippet = ""
        if snippets:
            text = decode_text(row[15]) or ""
            snippet = text if ">>>" in text else make_snippet(message.content, needles)
        hits.append(hit_from_row(message, row, snippet, score))
    return hits


def snippets_for(
    cur: Cursor, schema: sql.Identifier, parsed: ParsedQuery, ids: Sequence[int]
) -> dict[int, str]:
    """Snippets of ``ids`` for ``parsed`` (``ts_headline`` for FTS, else marked by hand)."""
    plan = parsed.plan()
    if parsed.root is None or plan == "empty" or not ids:
        return {}
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    compiled = rank.tsquery_text(cur, schema, parsed.root) if plan == "fts" else ""
    query = sql.SQL(
        "SELECT m.id, m.content, ts_headline({cfg}, m.content, CAST(%s AS tsquery), %s)"
        " FROM {s}.messages m WHERE m.id = ANY(%s)"
    ).format(cfg=ts_config(schema), s=schema)
    out = {}
    for message_id, content, headline in cur.execute(
        query,
        (compiled, _HEADLINE_OPTIONS, list(ids)),
        prepare=True,  # see fetch_windows
    ):
        text = decode_text(headline) or "" if compiled else ""
        out[int(message_id)] = (
            text if ">>>" in text else make_snippet(decode_text(content) or "", needles)
        )
    return out


def _latest(cur: Cursor, schema: sql.Identifier) -> float | None:
    """The newest message time in the store (the anchor of relative query periods)."""
    row = cur.execute(sql.SQL("SELECT max(timestamp) FROM {s}.messages").format(s=schema))
    value = row.fetchone()
    return None if value is None or value[0] is None else float(value[0])


def _occurrence_score(needles: Sequence[str]) -> tuple[sql.Composable, list[Any]]:
    """Occurrences of every needle in ``m.content``, damped by the content's length."""
    parts = []
    params: list[Any] = []
    for needle in needles:
        parts.append(
            "(length(m.content) - length(replace(lower(m.content), lower(%s), '')))"
            " / greatest(length(%s), 1)::float8"
        )
        params.extend([needle, needle])
    total = " + ".join(parts) or "0"
    return sql.SQL(f"(({total}) / (1 + ln(1 + length(m.content))))"), params


def fetch_windows(
    cur: Cursor, schema: sql.Identifier, anchors: Sequence[int], *, window: int, bookend: int
) -> dict[int, Any]:
    """Windows for several anchors in one query: each anchor's neighbours and bookends,
    with the counts of its session's messages before and after it on every row."""
    if not anchors:
        return {}
    ids = list(dict.fromkeys(int(a) for a in anchors))
    rows_sql = sql.SQL("""
    WITH a AS MATERIALIZED (SELECT m.id AS anchor, m.session_id AS sid,
      (SELECT count(*) FROM {s}.messages x WHERE x.session_id = m.session_id AND x.id < m.id)
        AS before,
      (SELECT count(*) FROM {s}.messages x WHERE x.session_id = m.session_id AND x.id > m.id)
        AS after
      FROM {s}.messages m WHERE m.id = ANY(%s))
    SELECT a.anchor, a.before, a.after, {cols} FROM a CROSS JOIN LATERAL (
        SELECT a.anchor AS id
        UNION ALL (SELECT id FROM {s}.messages WHERE session_id = a.sid AND id < a.anchor
                   ORDER BY id DESC LIMIT %s)
        UNION ALL (SELECT id FROM {s}.messages WHERE session_id = a.sid AND id > a.anchor
                   ORDER BY id LIMIT %s)
        UNION ALL (SELECT id FROM {s}.messages WHERE session_id = a.sid ORDER BY id LIMIT %s)
        UNION ALL (SELECT id FROM {s}.messages WHERE session_id = a.sid
                   ORDER BY id DESC LIMIT %s)
    ) AS pick JOIN {s}.messages m ON m.id = pick.id
    """).format(s=schema, cols=sql.SQL(MESSAGE_COLUMNS))
    grouped: dict[int, list[MessageRecord]] = {}
    counts: dict[int, tuple[int, int]] = {}
    # prepared: a lookup by ids whose plan no value changes, planned once per connection
    # (0.6-0.7 ms of planning a call; searches are never prepared, see store._configure)
    for row in cur.execute(rows_sql, (ids, window, window, bookend, bookend), prepare=True):
        grouped.setdefault(int(row[0]), []).append(message_from_row(row[3:]))
        counts[int(row[0])] = (int(row[1]), int(row[2]))
    out = {}
    for anchor_id, (before, after) in counts.items():
        rows = grouped[anchor_id]
        anchor = next((r for r in rows if r.id == anchor_id), None)
        if anchor is None:
            continue
        out[anchor_id] = shape_window(
            anchor, rows, count_before=before, count_after=after, window=window, bookend=bookend
        )
    return out
