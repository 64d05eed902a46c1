"""Row conversion, filters and query compilation for the PostgreSQL session store.

PostgreSQL ``text`` cannot hold NUL characters, which Python strings (and SQLite) can.
Free-text columns (``content``, ``reasoning``, ``title``) therefore go through a small
reversible escape (:func:`encode_text` / :func:`decode_text`) using two private-use
characters, so every string round-trips exactly. JSON columns need no escape:
``json.dumps`` already writes NUL as ``\\u0000``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from psycopg import sql

from memoryport.storage.sessions.base import MessageRecord, SessionRecord
from memoryport.storage.sessions.postgres_migrations import fold_text
from memoryport.storage.sessions.query import Node, Not, Or, Term

__all__ = [
    "MESSAGE_COLUMNS",
    "SESSION_COLUMNS",
    "compile_tsquery",
    "decode_text",
    "dump_json",
    "encode_text",
    "escape_like",
    "message_from_row",
    "scope_sql",
    "session_from_row",
]

MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.role, m.content, m.timestamp, m.tool_name, m.tool_calls, "
    "m.tool_call_id, m.reasoning, m.metadata"
)
"""Select list matching :func:`message_from_row` (``messages`` aliased ``m``)."""

SESSION_COLUMNS = (
    "s.id, s.source, s.user_id, s.model, s.title, s.parent_session_id, s.started_at, "
    "s.ended_at, s.end_reason, s.last_active_at, s.message_count, s.tool_call_count, "
    "s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens, "
    "s.reasoning_tokens, s.estimated_cost_usd, s.actual_cost_usd, s.metadata"
)
"""Select list matching :func:`session_from_row` (``sessions`` aliased ``s``)."""

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


def dump_json(value: Any) -> str | None:
    """JSON text for a column, or NULL for an empty value (as the SQLite store does)."""
    if value in (None, {}, []):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message_from_row(row: Sequence[Any]) -> MessageRecord:
    """Build a ``MessageRecord`` from a row selected with ``MESSAGE_COLUMNS``."""
    return MessageRecord(
        id=int(row[0]),
        session_id=row[1],
        role=row[2],
        content=decode_text(row[3]) or "",
        timestamp=row[4],
        tool_name=row[5],
        tool_calls=json.loads(row[6]) if row[6] else None,
        tool_call_id=row[7],
        reasoning=decode_text(row[8]),
        metadata=json.loads(row[9]) if row[9] else {},
    )


def session_from_row(row: Sequence[Any]) -> SessionRecord:
    """Build a ``SessionRecord`` from a row selected with ``SESSION_COLUMNS``."""
    values = list(row)
    values[4] = decode_text(values[4]) or ""
    values[-1] = json.loads(values[-1]) if values[-1] else {}
    return SessionRecord(*values)


def session_values(session: SessionRecord) -> list[Any]:
    """Column values of ``session`` in ``SESSION_COLUMNS`` order, ready to insert."""
    values = list(session.to_dict().values())
    values[4] = encode_text(values[4])
    values[-1] = dump_json(values[-1])
    return values


def scope_sql(
    *,
    user_id: str | None,
    include: Sequence[str] | None,
    exclude: Sequence[str],
    roles: Sequence[str] | None = None,
    session_ids: Sequence[str] | None = None,
) -> tuple[sql.Composable, list[Any]]:
    """``AND ...`` conditions on ``s`` (sessions) and ``m`` (messages) plus parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        parts.append("s.user_id = %s")
        params.append(user_id)
    if include:
        parts.append("s.source = ANY(%s)")
        params.append(list(include))
    if exclude:
        parts.append("s.source <> ALL(%s)")
        params.append(list(exclude))
    if roles:
        parts.append("m.role = ANY(%s)")
        params.append(list(roles))
    if session_ids:
        parts.append("m.session_id = ANY(%s)")
        params.append(list(session_ids))
    return sql.SQL("".join(f" AND {p}" for p in parts)), params


def escape_like(text: str) -> str:
    """A ``%text%`` pattern for ``ILIKE ... ESCAPE '\\'`` matching ``text`` literally."""
    escaped = (encode_text(text) or "").replace("\\", "\\\\").replace("%", "\\%")
    return "%" + escaped.replace("_", "\\_") + "%"


def _lexeme(token: str) -> str:
    # Tokens come from the shared lexer (word characters only), so they hold no quote or
    # backslash; folding matches what the index did to the stored text.
    return "'" + fold_text(token).replace("'", " ").replace("\\", " ").strip() + "'"


def _term(term: Term) -> str:
    lexemes = [_lexeme(t) for t in term.tokens]
    if term.prefix:
        lexemes[-1] += ":*"
    return lexemes[0] if len(lexemes) == 1 else "(" + " <-> ".join(lexemes) + ")"


def compile_tsquery(node: Node) -> str:
    """Compile a parsed tree into ``to_tsquery('english', ...)`` input.

    Every lexeme is quoted, so no user text is read as tsquery syntax; phrases become
    ``<->`` chains, prefixes ``:*``, ``Not`` children ``!``. ``to_tsquery`` then stems
    each lexeme and drops stopwords exactly as the index did.
    """
    if isinstance(node, Term):
        return _term(node)
    if isinstance(node, Not):
        return "!" + compile_tsquery(node.child)
    if isinstance(node, Or):
        return "(" + " | ".join(compile_tsquery(c) for c in node.children) + ")"
    positives = [compile_tsquery(c) for c in node.children if not isinstance(c, Not)]
    negatives = [compile_tsquery(c) for c in node.children if isinstance(c, Not)]
    return "(" + " & ".join(positives + negatives) + ")"


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
