"""Search and window queries of the PostgreSQL session store.

Plans mirror the SQLite store (see :meth:`ParsedQuery.plan`):

* ``fts`` -- ``tsv @@ tsquery`` on the GIN index. The tsquery is compiled from the shared
  parse tree (:func:`compile_tsquery`) and normalised by ``to_tsquery(<store config>, ...)``
  once, up front; a query left with only stopwords or only negations returns nothing
  instead of scanning the table. Relevance is ``ts_rank_cd`` (cover density,
  normalised by document length); newest/oldest order by message time, ties by id.
* ``trigram`` -- ``content ILIKE`` over messages containing CJK text, which the partial
  ``pg_trgm`` GIN index answers when the extension is present (and a scan otherwise).
  Relevance counts occurrences of the terms, damped by length.
* ``like`` -- short CJK terms: the same ``ILIKE`` over all content, newest first.

Snippets (``ts_headline`` or :func:`make_snippet`) are computed only for the final page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from memoryport.storage.sessions.postgres import rank
from memoryport.storage.sessions.postgres.dialect import (
    compile_ilike,
    compile_tsquery,
    decode_text,
    encode_text,
    hit_from_row,
    message_from_row,
)
from memoryport.storage.sessions.postgres.migrations import CJK_REGEX, ts_config
from memoryport.storage.sessions.postgres.rank import Scope
from memoryport.storage.sessions.query import ParsedQuery, iter_terms, make_snippet
from memoryport.storage.sessions.records import MessageRecord, SearchHit, SortOrder
from memoryport.storage.sessions.rows import HIT_COLUMNS, MESSAGE_COLUMNS, shape_window
from memoryport.storage.sessions.temporal import (
    CONTEXT_DEPTH,
    RERANK_DEPTH,
    TimeHint,
    rerank,
    time_hint,
)
from memoryport.storage.timeexpr import has_time_words

__all__ = ["fetch_windows", "run_search", "snippets_for"]

Cursor = psycopg.Cursor[Any]

_HEADLINE_OPTIONS = (
    "StartSel=>>>, StopSel=<<<, MaxWords=24, MinWords=8, ShortWord=0, "
    "MaxFragments=1, FragmentDelimiter=..."
)


def run_search(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    *,
    scope: tuple[sql.Composable, list[Any]],
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
    if plan == "fts" and sort == "relevance":
        return _relevance(cur, schema, parsed, scope, limit, offset, snippets)
    hint = TimeHint((), False)
    if sort == "relevance" and plan != "like":
        hint = time_hint(parsed.raw, _latest(cur, schema) if has_time_words(parsed.raw) else None)
    if hint:  # re-rank the top candidates by time hints, then page (as SQLite does)
        depth = max(offset + limit, RERANK_DEPTH)
        hits, compiled = _search(cur, schema, parsed, plan, scope, sort, depth, 0, snippets)
        return _time_rerank(cur, schema, hits, hint)[offset : offset + limit], compiled
    return _search(cur, schema, parsed, plan, scope, sort, limit, offset, snippets)


def _relevance(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    scope: Scope,
    limit: int,
    offset: int,
    snippets: bool,
) -> tuple[list[SearchHit], str]:
    """Word-index relevance search: bounded candidates, context re-rank, literals first,
    then one query for the page (see :mod:`~memoryport.storage.sessions.postgres.rank`)."""
    assert parsed.root is not None
    compiled = rank.tsquery_text(cur, schema, parsed.root)
    if not compiled:
        return [], compiled
    hint = time_hint(parsed.raw, _latest(cur, schema) if has_time_words(parsed.raw) else None)
    weights = rank.weights_for(parsed, "fts", hint)
    need = max(offset + limit, CONTEXT_DEPTH) if weights else offset + limit
    scores: dict[int, float] = {}
    ranked = rank.ranked_ids(cur, schema, parsed, compiled, scope, need, scores)
    if weights:
        ranked = rank.rerank_context(
            cur, schema, ranked, scores, hint, (parsed.raw, scope), weights
        )
    if parsed.literals:
        ranked = rank.literal_first(cur, schema, parsed.literals, scope, offset + limit, ranked)
    page = ranked[offset : offset + limit]
    return _hydrate(cur, schema, parsed, page, compiled if snippets else ""), compiled


def _hydrate(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    page: Sequence[tuple[int, float]],
    compiled: str,
) -> list[SearchHit]:
    """Hits for ``page`` in order; ``ts_headline`` snippets when ``compiled`` is set."""
    if not page:
        return []
    headline = sql.SQL("ts_headline({cfg}, m.content, %s::tsquery, %s)" if compiled else "NULL")
    query = sql.SQL(
        "SELECT {cols}, {headline} FROM {s}.messages m JOIN {s}.sessions s"
        " ON s.id = m.session_id WHERE m.id = ANY(%s)"
    ).format(cols=sql.SQL(HIT_COLUMNS), headline=headline.format(cfg=ts_config(schema)), s=schema)
    params = [compiled, _HEADLINE_OPTIONS] if compiled else []
    rows = {int(r[0]): r for r in cur.execute(query, [*params, [i for i, _ in page]])}
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    hits = []
    for message_id, score in page:
        row = rows.get(message_id)
        if row is None:
            continue
        message = message_from_row(row)
        snippet = ""
        if compiled:
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
    compiled = _tsquery(cur, schema, parsed) if plan == "fts" else ""
    query = sql.SQL(
        "SELECT m.id, m.content, ts_headline({cfg}, m.content, CAST(%s AS tsquery), %s)"
        " FROM {s}.messages m WHERE m.id = ANY(%s)"
    ).format(cfg=ts_config(schema), s=schema)
    out = {}
    for message_id, content, headline in cur.execute(
        query, (compiled, _HEADLINE_OPTIONS, list(ids))
    ):
        text = decode_text(headline) or "" if compiled else ""
        out[int(message_id)] = (
            text if ">>>" in text else make_snippet(decode_text(content) or "", needles)
        )
    return out


def _tsquery(cur: Cursor, schema: sql.Identifier, parsed: ParsedQuery) -> str:
    """The normalised tsquery text ("" when only stopwords or negations remain)."""
    assert parsed.root is not None
    row = cur.execute(
        sql.SQL("SELECT q::text, querytree(q) FROM to_tsquery({cfg}, %s) AS q").format(
            cfg=ts_config(schema)
        ),
        (compile_tsquery(parsed.root),),
    ).fetchone()
    if row is None or not row[0] or row[1] == "T":
        return ""
    return str(row[0])


def _latest(cur: Cursor, schema: sql.Identifier) -> float | None:
    """The newest message time in the store (the anchor of relative query periods)."""
    row = cur.execute(sql.SQL("SELECT max(timestamp) FROM {s}.messages").format(s=schema))
    value = row.fetchone()
    return None if value is None or value[0] is None else float(value[0])


def _time_rerank(
    cur: Cursor, schema: sql.Identifier, hits: list[SearchHit], hint: TimeHint
) -> list[SearchHit]:
    top = hits[:RERANK_DEPTH]
    by_id = {h.message.id: h for h in top}
    events: dict[int, list[tuple[float, float]]] = {}
    if hint.events and by_id:
        rows = cur.execute(
            sql.SQL(
                "SELECT message_id, start_at, end_at FROM {s}.message_events"
                " WHERE message_id = ANY(%s)"
            ).format(s=schema),
            (list(by_id),),
        )
        for message_id, start, end in rows.fetchall():
            events.setdefault(int(message_id), []).append((float(start), float(end)))
    order = rerank(
        [(h.message.id, h.score, h.message.timestamp, h.message.content) for h in top],
        hint,
        events,
    )
    ranked = [dataclasses.replace(by_id[i], score=score) for i, score in order]
    return ranked + hits[RERANK_DEPTH:]


def _search(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    plan: str,
    scope: tuple[sql.Composable, list[Any]],
    sort: SortOrder,
    limit: int,
    offset: int,
    snippets: bool,
) -> tuple[list[SearchHit], str]:
    assert parsed.root is not None
    if plan == "fts":
        return _fts_search(cur, schema, parsed, scope, sort, limit, offset, snippets)
    where, params = compile_ilike(parsed.root, "m.content")
    if plan == "trigram":
        where = f"m.content ~ {_quote(CJK_REGEX)} AND {where}"
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    score = _occurrence_score(needles) if plan == "trigram" and sort == "relevance" else None
    order = _order(sort, "score" if score is not None else None)
    query = sql.SQL(
        "SELECT {cols}, {score} AS score FROM {s}.messages m JOIN {s}.sessions s"
        " ON s.id = m.session_id WHERE {where}{scope} ORDER BY {order} LIMIT %s OFFSET %s"
    ).format(
        cols=sql.SQL(HIT_COLUMNS),
        score=score[0] if score else sql.SQL("0.0"),
        s=schema,
        where=sql.SQL(where),
        scope=scope[0],
        order=sql.SQL(order),
    )
    score_params = score[1] if score else []
    rows = cur.execute(query, [*score_params, *params, *scope[1], limit, offset]).fetchall()
    hits = []
    for row in rows:
        message = message_from_row(row)
        snippet = make_snippet(message.content, needles) if snippets else ""
        hits.append(hit_from_row(message, row, snippet, float(row[15])))
    return hits, where


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _order(sort: SortOrder, score: str | None) -> str:
    """Chronological sorts order by message time, ties by id (index ``messages_time``)."""
    if sort == "oldest":
        return "m.timestamp ASC, m.id ASC"
    if sort == "newest" or score is None:
        return "m.timestamp DESC, m.id DESC"
    return f"{score} DESC, m.id DESC"


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


def _fts_search(
    cur: Cursor,
    schema: sql.Identifier,
    parsed: ParsedQuery,
    scope: tuple[sql.Composable, list[Any]],
    sort: SortOrder,
    limit: int,
    offset: int,
    snippets: bool,
) -> tuple[list[SearchHit], str]:
    compiled = _tsquery(cur, schema, parsed)
    if not compiled:
        return [], compiled
    order = _order(sort, "score")
    literals = list(parsed.literals) if sort == "relevance" else []
    if literals:  # punctuated text the word index drops: literal matches rank first
        found = " AND ".join(["strpos(lower({c}), lower(%s)) > 0"] * len(literals))
        order = f"({found}) DESC, {order}"
    query = sql.SQL(
        "SELECT page.*, {headline} FROM ("
        " SELECT {cols}, ts_rank_cd(m.tsv, q, 1) AS score"
        " FROM {s}.messages m JOIN {s}.sessions s ON s.id = m.session_id,"
        " CAST(%s AS tsquery) AS q"
        " WHERE m.tsv @@ q{scope} ORDER BY {order} LIMIT %s OFFSET %s) AS page"
        " ORDER BY {outer}"
    ).format(
        cols=sql.SQL(HIT_COLUMNS),
        s=schema,
        scope=scope[0],
        order=sql.SQL(order.replace("{c}", "m.content")),
        cfg=ts_config(schema),
        outer=sql.SQL(order.replace("m.", "page.").replace("{c}", "page.content")),
        headline=sql.SQL(
            "ts_headline({cfg}, page.content, %s::tsquery, %s)" if snippets else "NULL"
        ).format(cfg=ts_config(schema)),
    )
    headline_params = [compiled, _HEADLINE_OPTIONS] if snippets else []
    encoded = [encode_text(lit) for lit in literals]
    params = [*headline_params, compiled, *scope[1], *encoded, limit, offset, *encoded]
    assert parsed.root is not None
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    hits = []
    for found in cur.execute(query, params).fetchall():
        message = message_from_row(found)
        headline = decode_text(found[16]) or ""
        snippet = headline if ">>>" in headline else make_snippet(message.content, needles)
        snippet = snippet if snippets else ""
        score = float(found[15]) if sort == "relevance" else 0.0
        hits.append(hit_from_row(message, found, snippet, score))
    return hits, compiled


def fetch_windows(
    cur: Cursor, schema: sql.Identifier, anchors: Sequence[int], *, window: int, bookend: int
) -> dict[int, Any]:
    """Windows for several anchors in two queries (rows, then counts)."""
    if not anchors:
        return {}
    ids = list(dict.fromkeys(int(a) for a in anchors))
    rows_sql = sql.SQL("""
    WITH a AS (SELECT id AS anchor, session_id AS sid FROM {s}.messages WHERE id = ANY(%s))
    SELECT a.anchor, {cols} FROM a CROSS JOIN LATERAL (
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
    for row in cur.execute(rows_sql, (ids, window, window, bookend, bookend)):
        grouped.setdefault(int(row[0]), []).append(message_from_row(row[1:]))
    counts_sql = sql.SQL("""
    SELECT m.id,
      (SELECT count(*) FROM {s}.messages x WHERE x.session_id = m.session_id AND x.id < m.id),
      (SELECT count(*) FROM {s}.messages x WHERE x.session_id = m.session_id AND x.id > m.id)
    FROM {s}.messages m WHERE m.id = ANY(%s)
    """).format(s=schema)
    out = {}
    for anchor_id, before, after in cur.execute(counts_sql, (ids,)):
        rows = grouped.get(int(anchor_id), [])
        anchor = next((r for r in rows if r.id == anchor_id), None)
        if anchor is None:
            continue
        out[int(anchor_id)] = shape_window(
            anchor, rows, count_before=before, count_after=after, window=window, bookend=bookend
        )
    return out
