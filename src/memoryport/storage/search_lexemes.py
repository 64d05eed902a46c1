"""Search lexemes built in Python for the PostgreSQL session store (stored and queried).

Since m030 the ``messages.tsv`` column is a plain ``tsvector`` the store writes: each
message's words are folded, split, stemmed and numbered here (:func:`document`) and sent
as a ``tsvector`` literal, and a search's ``tsquery`` is built from the same function
(:func:`tsquery`). Stored and queried lexemes therefore agree by construction, whatever
the text holds (URLs, hyphens, numbers, other scripts): no server parser behaviour needs
emulating, only this one function applied on both sides. The server spent ~30 us per
message in ``to_tsvector`` and ~10 us folding punctuation with ``regexp_replace``; here a
message costs a few us of client time (see docs/postgres.md); short ASCII text, most
messages, is split with one ``bytes.translate`` instead of the regex (~3 us less).

The rules (SQLite's ``porter unicode61`` tokenizer, PostgreSQL's ``english`` stemmer):

* Latin letters with diacritics fold to their base letter (:data:`SEARCH_FOLD`), text is
  lower-cased, and every run of letters and digits is a word (anything else, ASCII
  punctuation and ``_`` included, separates words);
* every word is stemmed with Snowball English (``pystemmer``: the algorithm of
  PostgreSQL's ``english_stem``), no stopword is dropped (``what``, ``to be or not``
  stay searchable, as in ``memoryport_english``);
* positions count words from 1 across ``content``, ``tool_name`` and ``tool_calls``
  (phrases and ``ts_rank_cd`` use them), capped at PostgreSQL's 16,383.

Changing any rule changes stored lexemes: bump :data:`VERSION` and add a migration that
re-stamps every row (:func:`restamp`), as m030 did.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, repeat
from typing import Any, TypeVar

import psycopg
import Stemmer
from psycopg import sql

from memoryport.storage.sessions.query import Node, Not, Or, Term
from memoryport.storage.timeexpr import may_hold

__all__ = [
    "SEARCH_FOLD",
    "VERSION",
    "ascii_words",
    "document",
    "document_of_row",
    "document_of_words",
    "documents_of_rows",
    "fold_text",
    "restamp",
    "stale",
    "text_lexemes",
    "tsquery",
]

VERSION = "1"
"""The lexeme rules' version (recorded in ``meta.search_lexemes`` by m030)."""


def _fold_table() -> tuple[str, str]:
    src: list[str] = []
    dst: list[str] = []
    for code in range(0xC0, 0x250):
        char = chr(code)
        base = "".join(
            c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)
        )
        if len(base) == 1 and base != char and base.isascii() and base.isalpha():
            src.append(char)
            dst.append(base)
    punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\ue000\ue001"
    return "".join(src) + punctuation, "".join(dst) + " " * len(punctuation)


SEARCH_FOLD: tuple[str, str] = _fold_table()
"""``translate()`` arguments: Latin letters with diacritics -> base letter, punctuation -> space."""

_FOLD_MAP = str.maketrans(*SEARCH_FOLD)
_PUNCTUATION = SEARCH_FOLD[1].count(" ")
_DIACRITICS = str.maketrans(SEARCH_FOLD[0][:-_PUNCTUATION], SEARCH_FOLD[1][:-_PUNCTUATION])


def fold_text(text: str) -> str:
    """Apply :data:`SEARCH_FOLD` (diacritics to base letters, punctuation to spaces)."""
    return text.translate(_FOLD_MAP)


_WORD = re.compile(r"[^\W_]+")
_MAX_POSITION = 16383  # PostgreSQL's MAXENTRYPOS - 1
_MAX_LEXEME_BYTES = 2046  # PostgreSQL refuses a lexeme of 2,047 bytes or more
_MAX_VECTOR_BYTES = 1_000_000  # under PostgreSQL's 1 MB of distinct lexeme text
_MAX_POSITIONS = 256  # PostgreSQL's MAXNUMPOS: positions kept per lexeme
_LONG = _MAX_LEXEME_BYTES // 4  # a longer word may exceed the byte limit
_FULL = _MAX_VECTOR_BYTES - 2
_MERGE_ABOVE = _MAX_VECTOR_BYTES // 5
"""Characters of text above which :func:`document` lists each lexeme once (every listed
occurrence counts against the 1 MB limit: a character is at most 4 bytes, lower-cased 5)."""
_POSITIONS = [f":{i}" for i in range(1, _MAX_POSITION + 1)]
_STEMS: dict[str, str] = {}
_ENTRIES: dict[str, str] = {}
_CACHE_LIMIT = 200_000
_W = TypeVar("_W", str, bytes)
_stem_word = Stemmer.Stemmer("english").stemWord


def _cached(words: list[_W], cache: dict[_W, str], make: Callable[[_W], str]) -> list[str]:
    """``make`` of each word through ``cache`` (most words repeat: a dict beats the
    stemmer's own cache)."""
    out: list[Any] = list(map(cache.get, words))
    if None in out:
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        for i, done in enumerate(out):
            if done is None:
                out[i] = cache[words[i]] = make(words[i])
    return out


def _words(text: str) -> list[str]:
    """Lower-cased, diacritics-folded words of ``text``."""
    text = text.lower()
    if not text.isascii():
        text = text.translate(_DIACRITICS)
    return _WORD.findall(text)


def text_lexemes(text: str) -> list[str]:
    """The lexemes of ``text`` in word order (repeats kept)."""
    return _cached(_words(text), _STEMS, _stem_word)


def _entry(word: str) -> str:
    return f"'{_stem_word(word)}'"


def _ascii_stem(word: bytes) -> str:
    return str(_stem_word(word.decode()))


_ASCII_WORDS = bytes(
    ord(chr(c).lower()) if chr(c).isascii() and chr(c).isalnum() else 32 for c in range(256)
)
"""``bytes.translate`` table: ASCII letters lower-cased, digits kept, every other byte a
space (so ``split()`` gives what ``_WORD`` finds in lower-cased ASCII text: ``_``
separates too)."""
_ASCII_STEMS: dict[bytes, str] = {}
_LITERALS: list[str] = []
"""``_LITERALS[n]``: the ``tsvector`` literal of ``n`` lexemes as a ``%`` template."""


def ascii_words(text: str) -> list[bytes] | None:
    """The lower-cased words of ``text`` as :func:`document` splits them, when the text is
    ASCII and short enough for its fast path (most messages); else None. The ingest path
    reuses them for ``timeexpr.may_hold`` (one split for the lexemes and the time words)."""
    if len(text) <= _LONG and text.isascii():
        return text.encode().translate(_ASCII_WORDS).split()
    return None


def document_of_words(words: list[bytes]) -> str:
    """:func:`document` of the text :func:`ascii_words` split into ``words``: one ``%``
    of a template cached per word count (no string per entry: about half the time of
    joining ``'stem':position`` entries)."""
    stems = _cached(words, _ASCII_STEMS, _ascii_stem)
    count = len(stems)
    if count >= len(_LITERALS):  # at most _LONG // 2 + 1 words: built once each
        _LITERALS.extend(
            " ".join(f"'%s':{i}" for i in range(1, n + 1)) for n in range(len(_LITERALS), count + 1)
        )
    return _LITERALS[count] % tuple(stems)


def _merged(words: list[str]) -> str:
    """The ``tsvector`` literal of a long text, each lexeme once with its positions.

    PostgreSQL's ``tsvector`` input counts every listed lexeme against its 1 MB limit
    before merging repeats, so a text that long lists each once (at most 256 positions,
    as PostgreSQL keeps); past ~1 MB of lexemes and positions the later words are left out
    (``to_tsvector`` refused such a text outright)."""
    positions: dict[str, list[int]] = {}
    size = 0  # as PostgreSQL counts: aligned lexeme, position count, 2 bytes a position
    for i, stem in enumerate(_cached(words, _STEMS, _stem_word), 1):
        found = positions.get(stem)
        if found is None:
            if size + len(stem.encode()) + 5 <= _MAX_VECTOR_BYTES:
                size += len(stem.encode()) + 5
                positions[stem] = [min(i, _MAX_POSITION)]
        elif found[-1] < _MAX_POSITION and len(found) < _MAX_POSITIONS and size < _FULL:
            size += 2
            found.append(min(i, _MAX_POSITION))
    return " ".join(f"'{w}':{','.join(map(str, p))}" for w, p in positions.items())


def document(parts: Iterable[str | None]) -> str:
    """The ``tsvector`` literal of a message's searchable text (``content``,
    ``tool_name``, ``tool_calls``; ``None`` parts skipped).

    Lexemes are listed once per occurrence with its position (PostgreSQL's ``tsvector``
    input sorts them and merges repeats; a text over :data:`_MERGE_ABOVE` characters is
    merged here, see :func:`_merged`). Lexemes hold only letters and digits, so the
    quotes need no escaping; a word over 2,046 bytes is left out, as PostgreSQL does."""
    text = " ".join(p for p in parts if p)
    short = ascii_words(text)
    if short is not None:  # most messages: one C pass, no regex
        return document_of_words(short)
    words = _words(text)
    if len(text) > _LONG and max(map(len, words), default=0) > _LONG:
        words = [w for w in words if len(w.encode()) <= _MAX_LEXEME_BYTES]
    if len(text) > _MERGE_ABOVE:
        return _merged(words)
    entries = _cached(words, _ENTRIES, _entry)  # "'stem'"
    positions = _POSITIONS if len(words) <= _MAX_POSITION else chain(_POSITIONS, repeat(":16383"))
    return " ".join(map(str.__add__, entries, positions))


def document_of_row(row: Sequence[Any]) -> str:
    """:func:`document` of a ``message_values`` row (content, tool_name, tool_calls at
    2, 4 and 5)."""
    if row[4] is None and row[5] is None:
        return document((row[2],))
    return document((row[2], row[4], row[5]))


def documents_of_rows(rows: Iterable[Sequence[Any]]) -> tuple[list[str], list[bool]]:
    """:func:`document_of_row` of each row, and whether its content may hold a time
    expression (False only when ``temporal.event_rows`` of it is ``[]``: the words split
    for the lexemes also answer ``timeexpr.may_hold``, so most messages skip the time
    parser without a second split)."""
    literals: list[str] = []
    timed: list[bool] = []
    for row in rows:
        content = row[2]
        if row[4] is None and row[5] is None:
            text = content or ""
        else:
            text = " ".join(p for p in (content, row[4], row[5]) if p)
        words = ascii_words(text)
        if words is None:
            literals.append(document((text,)))
            timed.append(bool(content))
        else:
            literals.append(document_of_words(words))
            timed.append(bool(content) and may_hold(content, words))
    return literals, timed


# ---------------------------------------------------------------------------- queries


def _term(term: Term) -> str | None:
    lexemes = [f"'{w}'" for token in term.tokens for w in text_lexemes(token)]
    if not lexemes:
        return None
    if term.prefix:
        lexemes[-1] += ":*"
    return lexemes[0] if len(lexemes) == 1 else "(" + " <-> ".join(lexemes) + ")"


def _compile(node: Node) -> str | None:
    """``node`` as tsquery text; None when it holds no lexeme (dropped from its parent,
    as ``to_tsquery`` drops stopwords)."""
    if isinstance(node, Term):
        return _term(node)
    if isinstance(node, Not):
        child = _compile(node.child)
        return None if child is None else "!" + child
    parts = [(isinstance(c, Not), _compile(c)) for c in node.children]
    if isinstance(node, Or):
        kept = [text for _, text in parts if text is not None]
        joiner = " | "
    else:  # positives first, then negations
        kept = [text for negated in (False, True) for n, text in parts if n is negated and text]
        joiner = " & "
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else "(" + joiner.join(kept) + ")"


def _needs_lexeme(node: Node) -> bool:
    """True when every match must contain some lexeme (an index can serve the query);
    ``querytree`` gives ``T`` otherwise."""
    if isinstance(node, Term):
        return _term(node) is not None
    if isinstance(node, Not):
        return False
    checks = [_needs_lexeme(c) for c in node.children if _compile(c) is not None]
    if isinstance(node, Or):
        return bool(checks) and all(checks)
    return any(checks)


def tsquery(node: Node) -> str:
    """The ``tsquery`` text of a parsed query against the stored lexemes, ``""`` when no
    lexeme is left or only negations remain (nothing an index could find).

    Each word goes through :func:`text_lexemes` exactly as stored text does; a word that
    splits into several lexemes (``a/b``) becomes a phrase (``<->``), a prefix stems its
    stem (``photos*`` -> ``'photo':*``, like ``to_tsquery``)."""
    compiled = _compile(node)
    if compiled is None or not _needs_lexeme(node):
        return ""
    return compiled


# ---------------------------------------------------------------------------- stamping

_CHUNK = 5000


def restamp(cur: psycopg.Cursor[Any], schema: sql.Identifier, *, stale_only: bool) -> int:
    """Write :func:`document` into ``tsv`` for every message (``stale_only``: only rows
    whose stored vector differs); return the rows written. Reads and writes in chunks of
    ids, so a million rows never sit in memory at once."""
    select = sql.SQL(
        "SELECT id, content, tool_name, tool_calls FROM {s}.messages"
        " WHERE id > %s ORDER BY id LIMIT %s"
    ).format(s=schema)
    update = sql.SQL(
        "UPDATE {s}.messages m SET tsv = x.v::tsvector FROM unnest(%s::int8[], %s::text[])"
        " AS x(id, v) WHERE m.id = x.id"
        + (" AND m.tsv IS DISTINCT FROM x.v::tsvector" if stale_only else "")
    ).format(s=schema)
    last, written = 0, 0
    while True:
        rows = cur.execute(select, (last, _CHUNK)).fetchall()
        if not rows:
            return written
        ids = [r[0] for r in rows]
        vectors = [document(r[1:]) for r in rows]
        written += cur.execute(update, (ids, vectors)).rowcount
        last = ids[-1]


def stale(cur: psycopg.Cursor[Any], schema: sql.Identifier) -> int:
    """Messages whose stored ``tsv`` differs from :func:`document` of their text."""
    select = sql.SQL(
        "SELECT id, content, tool_name, tool_calls FROM {s}.messages"
        " WHERE id > %s ORDER BY id LIMIT %s"
    ).format(s=schema)
    count = sql.SQL(
        "SELECT count(*) FROM unnest(%s::int8[], %s::text[]) AS x(id, v)"
        " JOIN {s}.messages m ON m.id = x.id WHERE m.tsv IS DISTINCT FROM x.v::tsvector"
    ).format(s=schema)
    last, found = 0, 0
    while True:
        rows = cur.execute(select, (last, _CHUNK)).fetchall()
        if not rows:
            return found
        ids = [r[0] for r in rows]
        row = cur.execute(count, (ids, [document(r[1:]) for r in rows])).fetchone()
        found += int(row[0]) if row else 0
        last = ids[-1]
