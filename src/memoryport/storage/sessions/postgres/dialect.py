"""The PostgreSQL dialect: text encoding, row conversion, filters and query compilation.

PostgreSQL ``text`` cannot hold NUL characters, which Python strings (and SQLite) can.
Free-text columns (``content``, ``reasoning``, ``title``) therefore go through a small
reversible escape (:func:`encode_text` / :func:`decode_text`) using two private-use
characters, so every string round-trips exactly. JSON columns need no escape:
``json.dumps`` already writes NUL as ``\\u0000``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from psycopg import sql

from memoryport.storage.search_lexemes import fold_text
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
    "compile_ilike",
    "compile_tsquery",
    "decode_text",
    "encode_text",
    "escape_like",
    "hit_from_row",
    "message_from_row",
    "message_values",
    "scope_sql",
    "session_from_row",
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
