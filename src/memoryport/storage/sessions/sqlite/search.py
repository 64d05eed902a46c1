"""Search and window queries of the SQLite session store.

Design for large stores (1M+ messages):

* Relevance: FTS5 ``ORDER BY rank LIMIT k`` on the index alone (no join), then the
  survivors are filtered by scope in one query; k grows geometrically only when filters
  discard too many. BM25 costs ~7 us per matching row, so queries matching more than
  ``RELEVANCE_WINDOW`` messages rank a bounded subset (see :func:`rank.ranked_ids`).
* Newest/oldest order by message time (ties by id), not insertion order, so imported
  older sessions sort where they belong: a query with few matches sorts them all by
  timestamp; a common word walks the ``messages_time`` index in chunks and keeps the rows
  the FTS index matches, so it never sorts millions of rows.
* Snippets are computed only for the final page, in one ``rowid BETWEEN`` scan when the
  ranking pass showed few matches between its rows (a phrase's scattered top 20).
* Short CJK terms (which the trigram index cannot match) use a newest-first LIKE scan
  that stops at the page size.
"""

from __future__ import annotations

import json
import sqlite3
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from memoryport.storage.sessions.query import (
    ParsedQuery,
    compile_fts5,
    compile_like,
    compile_trigram,
    iter_terms,
    make_snippet,
)
from memoryport.storage.sessions.records import SearchHit, SortOrder
from memoryport.storage.sessions.rows import HIT_COLUMNS, hit_from_row, message_from_row
from memoryport.storage.sessions.sqlite import rank
from memoryport.storage.sessions.temporal import (
    CONTEXT_DEPTH,
    TIME_ONLY,
    WEIGHTS,
    time_hint,
)
from memoryport.storage.timeexpr import has_time_words

__all__ = ["latest_time", "run_search", "snippets_for"]

_CHUNK = 512
_SNIPPET_GAP = 16
_SNIPPET_SCAN = 100
_MATCH_GAP = 256
def run_search(
    conn: sqlite3.Connection,
    parsed: ParsedQuery,
    *,
    scope: tuple[str, list[Any]],
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
    if plan == "like":
        where, params = compile_like(parsed.root, "m.content")
        hits = _like_search(conn, where, params, parsed, scope, sort, limit, offset, snippets)
        return hits, where
    table = "messages_fts" if plan == "fts" else "messages_trigram"
    leaf = compile_fts5 if plan == "fts" else compile_trigram
    expr = leaf(parsed.root)
    known: list[int] = []  # every match of ``expr`` from known[0] on, when ranking read them
    if sort == "relevance":
        hint = time_hint(parsed.raw, latest_time(conn) if has_time_words(parsed.raw) else None)
        weights = WEIGHTS if plan == "fts" and rank.natural(parsed) else TIME_ONLY if hint else None
        need = max(offset + limit, CONTEXT_DEPTH) if weights else offset + limit
        scores: dict[int, float] = {}
        ranked = rank.ranked_ids(conn, table, parsed, leaf, scope, need, known, scores)
        if weights:
            ranked = rank.rerank_context(conn, ranked, scores, hint, (parsed.raw, scope), weights)
        if parsed.literals and plan == "fts":
            ranked = rank.literal_first(conn, parsed.literals, scope, offset + limit, ranked)
    else:
        ranked = _ordered_ids(conn, table, expr, scope, offset + limit, newest=sort == "newest")
    page = ranked[offset : offset + limit]
    return _hydrate(conn, table, expr if snippets else "", page, parsed, known), expr


def snippets_for(conn: sqlite3.Connection, parsed: ParsedQuery, ids: list[int]) -> dict[int, str]:
    """Snippets of ``ids`` for ``parsed`` (FTS5 ``snippet()``, else marked by hand)."""
    plan = parsed.plan()
    if parsed.root is None or plan == "empty" or not ids:
        return {}
    out: dict[int, str] = {}
    if plan != "like":
        table = "messages_fts" if plan == "fts" else "messages_trigram"
        expr = (compile_fts5 if plan == "fts" else compile_trigram)(parsed.root)
        out = _snippets(conn, table, expr, ids)
    missing = [i for i in ids if i not in out]
    if missing:
        needles = [t.text for t in iter_terms(parsed.root, negated=False)]
        sql = "SELECT id, content FROM messages WHERE id IN (SELECT value FROM json_each(?))"
        for message_id, content in conn.execute(sql, (json.dumps(missing),)):
            out[message_id] = make_snippet(content, needles)
    return out


def latest_time(conn: sqlite3.Connection) -> float | None:
    """The newest message time in the store (the anchor of relative query periods)."""
    row = conn.execute("SELECT max(timestamp) FROM messages").fetchone()
    return None if row is None or row[0] is None else float(row[0])


SMALL_MATCH = 1000
"""Chronological search sorts every match by time when a query matches at most this many
messages; more frequent queries walk the ``messages_time`` index instead."""


def _ordered_ids(
    conn: sqlite3.Connection,
    table: str,
    expr: str,
    scope: tuple[str, list[Any]],
    need: int,
    *,
    newest: bool,
) -> list[tuple[int, float]]:
    """Matches in message-time order (ties by id), newest or oldest first.

    Few matches: fetch them all from the index and sort by timestamp. Many matches (a
    common word): walk messages by time in chunks and keep those the index matches.
    """
    if rank.count_upto(conn, table, expr, SMALL_MATCH) > SMALL_MATCH:
        return _walk_by_time(conn, table, expr, scope, need, newest=newest)
    ids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expr,))]
    sql = "SELECT id, timestamp FROM messages WHERE id IN (SELECT value FROM json_each(?))"
    rows = conn.execute(sql, (json.dumps(ids),)).fetchall()
    rows.sort(key=lambda r: (r[1], r[0]), reverse=newest)
    kept: list[tuple[int, float]] = []
    chunk = max(need * 2, 64)
    for start in range(0, len(rows), chunk):
        part = [r[0] for r in rows[start : start + chunk]]
        keep = rank.filter_scope(conn, part, scope)
        kept.extend((i, 0.0) for i in part if i in keep)
        if len(kept) >= need:
            break
    return kept


def _walk_by_time(
    conn: sqlite3.Connection,
    table: str,
    expr: str,
    scope: tuple[str, list[Any]],
    need: int,
    *,
    newest: bool,
) -> list[tuple[int, float]]:
    """Walk messages by (timestamp, id) in chunks; keep those the index matches and the
    scope allows. Without a session filter the walk reads only the ``messages_time``
    index (it covers the id), and scope is checked for the matched rows alone."""
    op, direction = ("<", "DESC") if newest else (">", "ASC")
    where, params = scope
    session_scoped = "m.session_id IN" in where
    if session_scoped:  # a session filter is served by its own index
        sql = (
            "SELECT m.id, m.timestamp FROM messages m JOIN sessions s ON s.id = m.session_id"
            f" WHERE (m.timestamp, m.id) {op} (?, ?){where}"
            f" ORDER BY m.timestamp {direction}, m.id {direction} LIMIT ?"
        )
    else:
        sql = (
            "SELECT id, timestamp FROM messages INDEXED BY messages_time"
            f" WHERE (timestamp, id) {op} (?, ?)"
            f" ORDER BY timestamp {direction}, id {direction} LIMIT ?"
        )
        params = []
    bound = (float("inf"), 2**62) if newest else (float("-inf"), -1)
    chunk = max(_CHUNK, need * 4)  # time rows include non-matches: read ahead more
    kept: list[tuple[int, float]] = []
    while len(kept) < need:
        rows = conn.execute(sql, [*bound, *params, chunk]).fetchall()
        if not rows:
            break
        matched = _matching(conn, table, expr, [r[0] for r in rows])
        ordered = [r[0] for r in rows if r[0] in matched]
        keep = (set(ordered) if session_scoped or not ordered
                else rank.filter_scope(conn, ordered, scope))
        kept.extend((i, 0.0) for i in ordered if i in keep)
        bound = (rows[-1][1], rows[-1][0])
        if len(rows) < chunk:
            break
        chunk = min(chunk * 4, 65536)
    return kept


def _matching(conn: sqlite3.Connection, table: str, expr: str, ids: list[int]) -> set[int]:
    """The subset of ``ids`` the index matches: one ``rowid BETWEEN`` scan per cluster of
    nearby ids (a time-ordered chunk is usually one contiguous id range)."""
    clusters: list[list[int]] = []
    for message_id in sorted(ids):
        if clusters and message_id - clusters[-1][-1] <= _MATCH_GAP:
            clusters[-1].append(message_id)
        else:
            clusters.append([message_id])
    wanted = set(ids)
    found: set[int] = set()
    sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?"
    for cluster in clusters:
        found.update(r[0] for r in conn.execute(sql, (expr, cluster[0], cluster[-1])))
    return found & wanted


def _like_search(
    conn: sqlite3.Connection,
    where: str,
    params: list[str],
    parsed: ParsedQuery,
    scope: tuple[str, list[Any]],
    sort: SortOrder,
    limit: int,
    offset: int,
    snippets: bool,
) -> list[SearchHit]:
    scope_where, scope_params = scope
    direction = "ASC" if sort == "oldest" else "DESC"
    sql = (
        f"SELECT {HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id "
        f"WHERE {where}{scope_where} ORDER BY m.timestamp {direction}, m.id {direction}"
        " LIMIT ? OFFSET ?"
    )
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    hits = []
    for row in conn.execute(sql, [*params, *scope_params, limit, offset]):
        message = message_from_row(row)
        snippet = make_snippet(message.content, needles) if snippets else ""
        hits.append(hit_from_row(message, row, snippet, 0.0))
    return hits


def _hydrate(
    conn: sqlite3.Connection,
    table: str,
    expr: str,
    page: list[tuple[int, float]],
    parsed: ParsedQuery,
    known: Sequence[int] = (),
) -> list[SearchHit]:
    """Hits for ``page`` in order; snippets only when ``expr`` (the FTS expression) is set
    (``known``: the match ids ranking read, see :func:`_snippets`)."""
    if not page:
        return []
    ids = [i for i, _ in page]
    sql = (
        f"SELECT {HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id "
        "WHERE m.id IN (SELECT value FROM json_each(?))"
    )
    rows = {row[0]: row for row in conn.execute(sql, [json.dumps(ids)])}
    needles = [t.text for t in iter_terms(parsed.root, negated=False)]
    snippets = _snippets(conn, table, expr, ids, known) if expr else {}
    hits = []
    for message_id, score in page:
        row = rows.get(message_id)
        if row is None:
            continue
        message = message_from_row(row)
        snippet = snippets.get(message_id, "")
        if expr and not snippet:
            snippet = make_snippet(message.content, needles)
        hits.append(hit_from_row(message, row, snippet, score))
    return hits


def _clusters(ids: list[int], known: Sequence[int]) -> list[list[int]]:
    """``ids`` ascending, grouped into runs that one ``rowid BETWEEN`` scan serves.

    With ``known`` (every match from ``known[0]`` on, ascending) two ids share a scan when
    at most ``_SNIPPET_SCAN`` matches lie between them (a skipped match costs ~1 us, a
    seek ~0.1 ms): a relevance page of a phrase takes one scan instead of 20 seeks.
    Without it, ids at most ``_SNIPPET_GAP`` apart share one.
    """
    ordered = sorted(set(ids))
    dense = bool(known) and bool(ordered) and ordered[0] >= known[0]
    clusters: list[list[int]] = []
    for message_id in ordered:
        if clusters:
            prev = clusters[-1][-1]
            if dense:
                near = bisect_left(known, message_id) - bisect_right(known, prev) <= _SNIPPET_SCAN
            else:
                near = message_id - prev <= _SNIPPET_GAP
            if near:
                clusters[-1].append(message_id)
                continue
        clusters.append([message_id])
    return clusters


def _snippets(
    conn: sqlite3.Connection, table: str, expr: str, ids: list[int], known: Sequence[int] = ()
) -> dict[int, str]:
    """FTS snippets for ``ids`` in few statements.

    Seeking one row of a term's doclist costs ~0.1 ms, scanning a match ~1 us, so ids
    close together (see :func:`_clusters`) share one ``rowid BETWEEN`` scan that computes
    the snippet only for the wanted rows; the snippets are the same either way.
    """
    clusters = _clusters(ids, known)
    snippet = f"snippet({table}, -1, '>>>', '<<<', '...', 24)"
    out: dict[int, str] = {}
    for cluster in clusters:
        if len(cluster) == 1:
            sql = f"SELECT rowid, {snippet} FROM {table} WHERE {table} MATCH ? AND rowid = ?"
            params: tuple[Any, ...] = (expr, cluster[0])
        else:
            sql = (
                f"SELECT rowid, CASE WHEN rowid IN (SELECT value FROM json_each(?)) THEN"
                f" {snippet} END FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?"
            )
            params = (json.dumps(cluster), expr, cluster[0], cluster[-1])
        out.update((r[0], r[1]) for r in conn.execute(sql, params) if r[1])
    return out
