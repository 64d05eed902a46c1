"""Text helpers of the fact store: normalisation, content hashes, tokens and FTS5 queries.

Queries are tokenized here, never handed to FTS5 raw: every word becomes a quoted
literal, so no user text can be an FTS5 syntax error (a ``'``, ``?`` or ``/`` in a query
finds what it should instead of raising or silently returning nothing).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Set as AbstractSet
from functools import lru_cache

__all__ = [
    "STOPWORDS",
    "content_hash",
    "fts_all",
    "fts_query",
    "fts_words",
    "jaccard",
    "normalize",
    "tokens",
    "variants",
]

_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")
_SPELLING = {"favourite": "favorite", "colour": "color", "favourites": "favorites"}


def _words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())


STOPWORDS = _words(
    """a an and are as at be but by did do does for from had has have he her hers him his
    how i if in into is it its me my of on or our ours she so than that the their them
    then there these they this those to us was we were what when where which who whom why
    will with would you your yours about can could should shall am been being just also
    any all some s t"""
)
"""Words too common to search on (queries keep every other word)."""


def normalize(text: str) -> str:
    """Case-folded, NFKC, single-spaced text without surrounding punctuation."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", folded).strip().strip(".!;:,").strip()


@lru_cache(maxsize=1024)
def content_hash(text: str) -> str:
    """SHA-256 of the normalised words: the same fact written with other case, spacing or
    trailing punctuation hashes the same (a fact's hash is computed once for its duplicate
    check, its insert and a later mirrored replace or remove: the recent ones are kept)."""
    words = " ".join(_SPELLING.get(w, w) for w in _WORD.findall(normalize(text)))
    return hashlib.sha256(words.encode("utf-8")).hexdigest()


def tokens(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-case word tokens (British spellings of common words folded to American)."""
    words = [_SPELLING.get(w, w) for w in _WORD.findall(normalize(text))]
    if keep_stopwords:
        return words
    return [w for w in words if w not in STOPWORDS]


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Jaccard similarity of two token sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def fts_query(text: str, *, limit: int = 32) -> str:
    """An FTS5 MATCH expression: the distinct content words of ``text``, each quoted,
    OR-joined (``""`` when nothing is left, which callers treat as "no text query")."""
    return fts_words(tokens(text), limit=limit)


def fts_words(words: list[str], *, limit: int = 32) -> str:
    """:func:`fts_query` of text whose :func:`tokens` are ``words``."""
    seen: list[str] = []
    for word in words:
        if len(word) < 2 and not word.isdigit():
            continue
        if word not in seen:
            seen.append(word)
        if len(seen) >= limit:
            break
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in seen)


_VARIANTS: dict[str, tuple[str, ...]] = {}
for _british, _american in _SPELLING.items():
    _VARIANTS.setdefault(_american, (_american,))
    _VARIANTS[_american] = (*_VARIANTS[_american], _british)


def variants(word: str) -> tuple[str, ...]:
    """``word`` and the spellings it stands for (a folded American spelling: also its
    British form), as :func:`fts_all` matches them."""
    return _VARIANTS.get(word, (word,))


def fts_all(words: list[str] | set[str]) -> str:
    """An FTS5 MATCH expression requiring every one of ``words`` (tokens as
    :func:`tokens` returns them; a folded spelling also matches its British form)."""
    groups: list[str] = []
    for word in sorted(words):
        if len(word) < 2 and not word.isdigit():
            continue
        forms = variants(word)
        quoted = " OR ".join('"' + w.replace('"', '""') + '"' for w in forms)
        groups.append(f"({quoted})" if len(forms) > 1 else quoted)
    return " AND ".join(groups)
