"""The PostgreSQL dialect: text encoding, row conversion, filters and query compilation.

PostgreSQL ``text`` cannot hold NUL characters, which Python strings (and SQLite) can.
Free-text columns (``content``, ``reasoning``, ``title``) therefore go through a small
reversible escape (:func:`encode_text` / :func:`decode_text`) using two private-use
characters, so every string round-trips exactly. JSON columns need no escape:
``json.dumps`` already writes NUL as ``\\u0000``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg import sql

from memoryport.storage.sessions import rows
from memoryport.storage.sessions.query import Node, Not, Or, Term
from memoryport.storage.sessions.records import (
    MessageInput,
    MessageRecord,
    SearchHit,
    SearchScope,
    SessionRecord,
    valid_values,
)

__all__ = [
    "RIDERS",
    "Owners",
    "Ranked",
    "Scope",
    "compile_ilike",
    "decode_text",
    "encode_text",
    "escape_like",
    "filter_scope",
    "hit_from_row",
    "keep_in_scope",
    "message_from_row",
    "message_values",
    "scope_sql",
    "session_from_row",
    "session_of",
    "session_values",
]

_ESC = "\ue000"
_NUL_CODE = "\ue001"
_DECODE = re.compile(f"{_ESC}([{_ESC}{_NUL_CODE}])")


def encode_text(value: str | None) -> str | None:
    """Escape NUL (and the escape character itself) so PostgreSQL can store the text."""
    if value is None or (_ESC not in value and "\x00" not in value):
        return value
    return value.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + _NUL_CODE)


def decode_text(value: str | None) -> str | None:
    """Undo :func:`encode_text`."""
    if value is None or _ESC not in value:
        return value
    return _DECODE.sub(lambda m: "\x00" if m.group(1) == _NUL_CODE else _ESC, value)


def message_from_row(row: Sequence[Any]) -> MessageRecord:
    """Build a ``MessageRecord`` from a row selected with ``MESSAGE_COLUMNS``."""
    return rows.message_from_row(row, decode_text)


def session_from_row(row: Sequence[Any]) -> SessionRecord:
    """Build a ``SessionRecord`` from a row selected with ``SESSION_COLUMNS``."""
    return rows.session_from_row(row, decode_text)


def session_values(session: SessionRecord) -> list[Any]:
    """Column values of ``session`` in ``SESSION_COLUMNS`` order, ready to insert (lone
    surrogates replaced, see :func:`~memoryport.types.valid_text`)."""
    return valid_values(rows.session_values(session, encode_text))


def message_values(
    session_id: str, message: MessageInput | MessageRecord, now: float
) -> tuple[Any, ...]:
    """Insert values for ``MESSAGE_COLUMNS`` minus ``id``, NUL-escaped, valid Unicode."""
    return tuple(valid_values(rows.message_values(session_id, message, now, encode_text)))


def hit_from_row(
    message: MessageRecord, row: Sequence[Any], snippet: str, score: float
) -> SearchHit:
    """A ``SearchHit`` from a row selected with ``HIT_COLUMNS`` (title NUL-decoded)."""
    return rows.hit_from_row(message, row, snippet, score, decode_text)


_OPERATORS = {"=": "{} = %s", "in": "{} = ANY(%s)", "not in": "{} <> ALL(%s)"}


def scope_sql(scope: SearchScope) -> tuple[sql.Composable, list[Any]]:
    """``AND ...`` conditions on ``s`` (sessions) and ``m`` (messages) plus parameters."""
    where, params = rows.scope_where(scope, _OPERATORS, list)
    return sql.SQL(where), params


def escape_like(text: str) -> str:
    """A ``%text%`` pattern for ``ILIKE ... ESCAPE '\\'`` matching ``text`` literally."""
    escaped = (encode_text(text) or "").replace("\\", "\\\\").replace("%", "\\%")
    return "%" + escaped.replace("_", "\\_") + "%"


def compile_ilike(node: Node, column: str) -> tuple[str, list[str]]:
    """Compile a tree into a boolean over ``column ILIKE %s`` tests and its parameters."""
    params: list[str] = []

    def walk(n: Node) -> str:
        if isinstance(n, Term):
            params.append(escape_like(n.text))
            return f"{column} ILIKE %s ESCAPE '\\'"
        if isinstance(n, Not):
            return f"NOT ({walk(n.child)})"
        joiner = " OR " if isinstance(n, Or) else " AND "
        return "(" + joiner.join(walk(c) for c in n.children) + ")"

    return walk(node), params


# ---------------------------------------------------------------------------- scope checks

Cursor = psycopg.Cursor[Any]
Scope = tuple[sql.Composable, list[Any]]
"""``AND ...`` conditions on ``s`` (sessions) and ``m`` (messages) and their parameters."""
Ranked = list[tuple[int, float]]
"""Message ids with their scores, in rank order."""
Owners = dict[int, tuple[str, str]]
"""Message id -> its session id and role, as a candidate query read them."""


def session_of(schema: sql.Identifier) -> sql.Composed:
    """A ``LATERAL`` subquery for the session of message ``m``, one primary-key probe per
    message (``LIMIT 1`` keeps the planner from turning it into a join). A plain join let
    the planner, misjudging how many sessions pass the row-level security policy, scan
    ``sessions`` once per message or probe the id list once per session: 90 ms to 5 s
    for 1,500 ids where the probes take 3 ms."""
    return sql.SQL("SELECT * FROM {s}.sessions p WHERE p.id = m.session_id LIMIT 1").format(
        s=schema
    )


def _split_scope(cur: Cursor, scope: Scope) -> tuple[Scope, Scope] | None:
    """``scope``'s conditions on sessions (``s.``) and on messages (``m.``), each with its
    one parameter (the form :func:`~memoryport.storage.sessions.rows.scope_where`
    writes), or None when it has another form."""
    where, params = scope
    parts = where.as_string(cur).split(" AND ")
    if parts[0].strip() or len(parts) - 1 != len(params):
        return None
    split: dict[str, tuple[list[str], list[Any]]] = {"s.": ([], []), "m.": ([], [])}
    for part, param in zip(parts[1:], params, strict=True):
        side = split.get(part[:2])
        if side is None or part.count("%s") != 1:
            return None
        side[0].append(" AND " + part)
        side[1].append(param)
    (on_sessions, session_params), (on_messages, message_params) = split["s."], split["m."]
    return (sql.SQL("".join(on_sessions)), session_params), (
        sql.SQL("".join(on_messages)),
        message_params,
    )


def filter_scope(
    cur: Cursor,
    schema: sql.Identifier,
    ids: list[int],
    scope: Scope,
    owners: Owners | None = None,
) -> set[int]:
    """The subset of ``ids`` inside ``scope`` (every one when the scope is empty). Each
    distinct session of ``ids`` is checked once (the newest 1,500 matches of a common
    word come from a few dozen sessions), the messages' own conditions per message, and
    the two are matched here: a join of the two lists, misjudged under the policies,
    ran as a nested loop (0.3-0.6 s for 1,500 ids). ``owners`` (message id -> session
    and role, as the candidate query read them) spares reading the messages again."""
    where, params = scope
    if not params or not ids:
        return set(ids)
    if owners is not None and all(i in owners for i in ids):
        known = _filter_known(cur, schema, ids, scope, owners)
        if known is not None:
            return known
    split = _split_scope(cur, scope)
    if split is None:
        query = sql.SQL(
            "SELECT m.id FROM {s}.messages m CROSS JOIN LATERAL ({session}) AS s"
            " WHERE m.id = ANY(%s){where}"
        ).format(s=schema, session=session_of(schema), where=where)
        return {int(r[0]) for r in cur.execute(query, [ids, *params])}
    (on_sessions, session_params), (on_messages, message_params) = split
    query = sql.SQL(
        "WITH m AS MATERIALIZED (SELECT id, session_id, role FROM {s}.messages"
        " WHERE id = ANY(%s)) SELECT NULL::bigint, s.id FROM (SELECT DISTINCT session_id"
        " FROM m) AS d CROSS JOIN LATERAL (SELECT * FROM {s}.sessions p"
        " WHERE p.id = d.session_id LIMIT 1) AS s WHERE TRUE{sw}"
        " UNION ALL SELECT m.id, m.session_id FROM m WHERE TRUE{mw}"
    ).format(s=schema, sw=on_sessions, mw=on_messages)
    rows = cur.execute(query, [ids, *session_params, *message_params]).fetchall()
    allowed = {str(r[1]) for r in rows if r[0] is None}
    return {int(r[0]) for r in rows if r[0] is not None and str(r[1]) in allowed}


_IN_PYTHON = {"= %s": False, "= ANY(%s)": False, "<> ALL(%s)": True}
"""The condition templates of :func:`scope_sql` as membership tests (the value: whether
the test is negated); text equality is what ``=`` does on ``text``."""
_OWNER_FIELD = {"m.session_id": 0, "m.role": 1}


def _message_checks(cur: Cursor, scope: Scope) -> list[tuple[int, set[Any], bool]] | None:
    """``scope``'s conditions on a message's session id and role as membership tests of
    its :data:`Owners` entry (field, values, negated), or None when one has another form."""
    where, params = scope
    checks: list[tuple[int, set[Any], bool]] = []
    for part, param in zip(where.as_string(cur).split(" AND ")[1:], params, strict=True):
        column, _, test = part.strip().partition(" ")
        if not column.startswith("m."):
            continue
        field, negated = _OWNER_FIELD.get(column), _IN_PYTHON.get(test)
        if field is None or negated is None:
            return None
        checks.append((field, set(param) if isinstance(param, list) else {param}, negated))
    return checks


_VERDICTS: WeakKeyDictionary[Cursor, dict[tuple[str, str], dict[str, bool]]] = WeakKeyDictionary()
"""Per cursor (one read call: a store opens a cursor per call) and scope: whether each
session already probed passes the scope's session conditions. The ranking, the
re-rank's neighbours (same sessions) and the literal walk ask about the same sessions;
each is probed once per call, never across calls."""


Rider = tuple[Callable[[list[int]], tuple[sql.Composed, list[Any]]], dict[int, Any]]
RIDERS: WeakKeyDictionary[Cursor, Rider] = WeakKeyDictionary()
"""Per cursor (one search call): a query to send with the first scope check (pipeline
mode, one round trip for both) and where its rows go, by their first column. The
search registers its page's hydration: it builds the query for the candidates the
check is asked about (those that passed the messages' own conditions, in rank order),
and most of a page is in scope, so the page needs no query of its own. Used once."""


def _with_rider(cur: Cursor, check: tuple[sql.Composed, list[Any]], ids: list[int]) -> list[Any]:
    """The rows of ``check``; the cursor's rider (:data:`RIDERS`), if any, goes along."""
    rider = RIDERS.pop(cur, None)
    if rider is None:
        return cur.execute(*check).fetchall()
    query, params = rider[0](ids)
    conn = cur.connection
    extra = conn.cursor()
    with conn.pipeline():
        cur.execute(*check)
        extra.execute(query, params)
    rider[1].update((int(r[0]), r) for r in extra.fetchall())
    return cur.fetchall()


def _filter_known(
    cur: Cursor,
    schema: sql.Identifier,
    ids: list[int],
    scope: Scope,
    owners: Owners,
) -> set[int] | None:
    """:func:`filter_scope` of ids whose session and role are known: the messages'
    conditions tested here on the known values (no list of ids, sessions and roles sent
    to the server: for 1,500 candidates that was most of the client's time), then one
    probe of ``sessions`` per distinct session left, when there are session conditions
    (each session once per call: :data:`_VERDICTS`).
    None when the scope has a form this cannot split."""
    split = _split_scope(cur, scope)
    checks = _message_checks(cur, scope)
    if split is None or checks is None:
        return None
    (on_sessions, session_params), _ = split
    kept = ids
    for field, values, negated in checks:
        if negated:
            kept = [i for i in kept if owners[i][field] not in values]
        else:
            kept = [i for i in kept if owners[i][field] in values]
    if not session_params or not kept:
        return set(kept)
    verdicts = _VERDICTS.setdefault(cur, {}).setdefault(
        (on_sessions.as_string(cur), repr(session_params)), {}
    )
    unknown = sorted({owners[i][0] for i in kept} - verdicts.keys())
    if unknown:
        query = sql.SQL(
            "SELECT s.id FROM unnest(%b::text[]) AS d(session_id)"
            " CROSS JOIN LATERAL (SELECT * FROM {s}.sessions p WHERE p.id = d.session_id"
            " LIMIT 1) AS s WHERE TRUE{sw}"
        ).format(s=schema, sw=on_sessions)
        allowed = {str(r[0]) for r in _with_rider(cur, (query, [unknown, *session_params]), kept)}
        verdicts.update((sid, sid in allowed) for sid in unknown)
    return {i for i in kept if verdicts[owners[i][0]]}


def keep_in_scope(
    cur: Cursor,
    schema: sql.Identifier,
    ordered: Ranked,
    scope: Scope,
    need: int,
    owners: Owners | None = None,
    *,
    whole_chunks: bool = False,
) -> Ranked:
    """The first ``need`` of ``ordered`` inside ``scope``, checked in chunks of
    ``max(need * 4, 64)`` in rank order, order kept (``owners``: see
    :func:`filter_scope`). ``whole_chunks``: every in-scope candidate of the chunks read
    (what SQLite's ``_rank`` keeps for its re-rank), not just the first ``need``."""
    chunk = max(need * 4, 64)
    if not scope[1]:
        return list(ordered[: chunk if whole_chunks else need])
    kept: Ranked = []
    for start in range(0, len(ordered), chunk):
        part = ordered[start : start + chunk]
        keep = filter_scope(cur, schema, [r[0] for r in part], scope, owners)
        kept.extend(r for r in part if r[0] in keep)
        if len(kept) >= need:
            return kept if whole_chunks else kept[:need]
    return kept
