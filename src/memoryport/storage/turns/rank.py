"""How the turn index scores a candidate turn for a query (no model, no LLM).

Every signal is computed per candidate, divided by its best value over the candidates of
the query (so each lies in 0..1), multiplied by its weight and summed:

* ``main``: BM25 (FTS5, Porter stemmer) of the query's non-stopword terms over
  ``"Speaker: text"`` of the turn itself;
* ``prev`` / ``next``: the same BM25 of the turn before and after it in its session
  (conversations answer across turns: "Did you go?" / "Yes, to Paris last week");
* ``session``: BM25 of the block of the session holding the turn, the block taken as one
  document (what the whole conversation was about);
* ``speaker``: 1 when the query names the turn's speaker ("What did Caroline ...");
* ``window``: 1 when the turn's timestamp lies in a date window the query names, and
  ``when``: 1 when the query asks "when/how long" and the turn mentions a time — both
  from :mod:`memoryport.storage.sessions.temporal`, shared with the session store;
* ``event``: 1 when an event the turn's own words name ("last Friday", resolved at write
  time against the turn's time) overlaps a period the query names (relative query dates
  resolve against the store's latest turn); its weight is the window's, as the session
  store's fit set its event and window boosts equal;
* ``named``: 1 when the query asks for a name ("where", "which", "who", "name") and the
  turn names something the query does not: a capitalised word inside a sentence that is
  neither a query word nor a word of a candidate's speaker name (:func:`name_stems`,
  :func:`names_other`) —
  the answer type of the question, as ``when`` is for time questions;
* ``dense``: with the ``embeddings`` extra, the query-turn cosine similarity z-scored over
  the candidates and clipped at 0 (:mod:`.vectors`); 0 without it. The query is embedded
  without the speakers' names (:func:`.vectors.query_text`), as turns are embedded
  without their speaker: who said a turn is the ``speaker`` signal's;
* ``expand``: with the model too, how many of the query's expansion terms (the stored
  words nearest the query's vector: "instruments" -> violin, clarinet) the turn holds,
  each by cosine times idf (:mod:`.expand`); the best such turns are candidates too;
* ``listed``: for a question asking for several things (:func:`asks_for_list`: "What books
  has X read?"), the ``expand`` score again, of the turns said by a speaker the question
  names (of every candidate when it names none); 0 for other questions. It re-ranks only
  the places after the first :data:`LIST_KEEP` of the ranking without it
  (:func:`combine_columns`): a list's items lie in several sessions, each sharing no word
  with the question, and the best-supported answers stay first.

The default weights are the midpoint of the weights fitted on each half of the LoCoMo dev
file (conversations 0-3 and 4-6; each fit scored on the other half:
``benchmarks/locomo_retrieval.py --backend holographic --folds``; docs/holographic.md).
With the MiniLM model of the ``embeddings`` extra the index uses :data:`DENSE_WEIGHTS`,
the midpoint of the two halves' fits with the ``dense`` signal present.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

from memoryport.storage.sessions.query import STOPWORDS

__all__ = [
    "DENSE_WEIGHTS", "LIST_KEEP", "MAX_TERMS", "Components", "Weights", "asks_for_list",
    "asks_for_name", "combine", "combine_columns", "fts_query", "fts_terms", "listed_column",
    "name_stems", "names_other", "query_words",
]

MAX_TERMS = 32
"""At most this many distinct query terms are searched (the first ones in the query)."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Weights:
    """The weight of each signal in a turn's score (see the module docstring)."""

    main: float = 1.0
    prev: float = 0.75
    next: float = 0.4
    session: float = 0.5
    speaker: float = 0.75
    window: float = 1.5
    when: float = 0.5
    dense: float = 0.5
    event: float = 0.1
    named: float = 0.5
    expand: float = 0.0
    listed: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 100:
                raise ValueError(f"weight {f.name} must be a number from 0 to 100, got {value!r}")


DENSE_WEIGHTS = Weights(prev=0.75, next=0.45, session=0.875, speaker=1.0, window=1.5,
                        when=0.75, dense=0.75, event=0.4, named=0.75, expand=0.3,
                        listed=0.7)
"""The default weights when turns have MiniLM vectors: the midpoint of the weights fitted
on conversations 0-3 (dense 1.0) and on 4-6 (dense 0.5) with the dense signal; each fit
scored better on the other half than :class:`Weights`' defaults with dense 0.5
(R@5 / R@10 0.744 / 0.810 vs 0.732 / 0.808, and 0.708 / 0.781 vs 0.704 / 0.775).
``expand`` 0.3: the fit on conversations 0-3 (0.2-0.3); on 4-6 it changes R@5 / R@10 by
-0.001 / +0.001 (the fit on 4-6 alone leaves it at 0), multi-hop and open-domain R@10 gain
on both halves (docs/holographic.md). ``listed`` 0.7: with ``expand`` a list question's
expansion weighs 1.0 for the named speaker's turns, as much as its own words (``main``);
on conversations 0-3 0.7-1.5 tie (R@10 0.794 -> 0.803), on 4-6 0.7 gives 0.822 -> 0.825,
R@5 unchanged on both (docs/holographic.md)."""

LIST_KEEP = 5
"""How many places of the ranking without ``listed`` it leaves as they are."""


class Components(NamedTuple):
    """One candidate's raw signals (BM25 values are positive, higher is better).

    A named tuple rather than a frozen dataclass: a search builds one per candidate
    (hundreds), and a tuple is several times cheaper to construct.
    """

    main: float
    prev: float
    next: float
    session: float
    speaker: float
    window: float
    when: float
    dense: float = 0.0
    event: float = 0.0
    named: float = 0.0
    expand: float = 0.0
    listed: float = 0.0


_SIGNALS = Components._fields


def query_words(query: str) -> list[str]:
    """The query's lower-cased words, in order, without duplicates."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        seen.setdefault(word, None)
    return list(seen)


def fts_query(words: list[str]) -> str:
    """An FTS5 MATCH expression ORing the non-stopword ``words`` ('' when none)."""
    terms = [w for w in words if w not in STOPWORDS][:MAX_TERMS]
    return " OR ".join(f'"{t}"' for t in terms)


def fts_terms(match: str) -> list[str]:
    """The terms of an :func:`fts_query` expression, in order."""
    return [term[1:-1] for term in match.split(" OR ")] if match else []


_NAME_QUESTION = frozenset({"where", "which", "who", "whom", "whose", "name", "names"})
_CAPITAL = re.compile(r"(?<![\w'’-])[^\W\d_a-z][\w'’-]*")
_BOUNDARY = frozenset(".!?:;\"“”([")
_NOT_NAMES = frozenset({"i", "ok", "okay", "omg", "lol", "tv"})


def asks_for_name(words: list[str]) -> bool:
    """Whether a query (its :func:`query_words`) asks for a name: a place, a thing by
    name, a person ("where", "which", "who", "whom", "whose", "name")."""
    return not _NAME_QUESTION.isdisjoint(words)


_LIST_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_AUXILIARY = frozenset({"is", "are", "was", "were", "does", "do", "did", "has", "have", "had",
                        "can", "will", "would"})
_NOT_PLURAL = frozenset({"is", "was", "does", "has", "this", "his", "its", "us", "yes",
                         "always", "perhaps", "news", "status", "series", "species"})
_IRREGULAR_PLURALS = frozenset({"children", "people", "kids", "men", "women", "feet", "teeth",
                                "mice", "geese", "friends"})


def _plural(word: str) -> bool:
    """Whether ``word`` (lower case, a possessive's ``'s`` kept) reads as a plural noun."""
    return word in _IRREGULAR_PLURALS or (
        len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "'s", "’s"))
        and word not in _NOT_PLURAL)


def asks_for_list(query: str) -> bool:
    """Whether ``query`` asks for several things, by its shape alone (English, no tagger):
    "both" / "in common", "how many", a wh-question whose first auxiliary is the present
    perfect ("What has X painted?", "Where has X camped?": what accumulated), a plural head
    noun right before the first auxiliary ("What books has X read?", "What European
    countries has X been to?"), or "What are <plural> ..." ("What are X's hobbies?").
    A question about one event ("What did X paint recently?") is not one."""
    words = [w.replace("’", "'") for w in _LIST_WORD.findall(query.lower())]
    if not words:
        return False
    if "both" in words or ("in" in words and "common" in words) or words[:2] == ["how", "many"]:
        return True
    if words[0] not in ("what", "which", "where", "who"):
        return False
    at = next((i for i in range(1, len(words)) if words[i] in _AUXILIARY), 0)
    if not at:
        return False
    if words[at] in ("has", "have") or (at >= 2 and _plural(words[at - 1])):
        return True
    return at == 1 and words[1] == "are" and any(
        _plural(w.rstrip("'")) for w in words[2:6])


def name_stems(text: str) -> frozenset[str]:
    """The lower-cased stems (before any apostrophe) of the capitalised words of ``text``
    that do not start a sentence: the names it mentions, by rule (no tagger). Depends
    on the text alone, so an index may compute it once per turn."""
    stems: set[str] = set()
    for match in _CAPITAL.finditer(text):
        word = match.group(0)
        if not word[0].isupper():
            continue
        at = match.start() - 1
        while at >= 0 and text[at].isspace():
            at -= 1
        if at >= 0 and text[at] not in _BOUNDARY:
            stems.add(word.lower().replace("’", "'").split("'", 1)[0])
    return frozenset(stems - _NOT_NAMES)


def names_other(stems: frozenset[str], known: set[str] | frozenset[str]) -> bool:
    """Whether a turn's :func:`name_stems` hold a name not in ``known`` (the query's words
    and the speakers' names): the ``named`` signal."""
    return not stems <= known


def combine(candidates: list[Components], weights: Weights) -> list[float]:
    """The weighted sum of each candidate's signals, each divided by its best value."""
    if not candidates:
        return []
    return combine_columns([list(c) for c in zip(*candidates, strict=True)], weights)


def combine_columns(columns: Sequence[Sequence[float]], weights: Weights) -> list[float]:
    """:func:`combine` for signals given column by column (one sequence per
    :class:`Components` field, in field order): skips zero weights and all-zero columns.

    ``listed`` is added last and moves only the candidates after the :data:`LIST_KEEP`
    best of the sum without it: those keep their order and are lifted just above every
    other candidate's score (so no other candidate passes them)."""
    if not columns:
        return []
    listed: Sequence[float] = ()
    terms: list[tuple[float, Sequence[float]]] = []
    for name, column in zip(_SIGNALS, columns, strict=False):
        weight = getattr(weights, name)
        best = max(column) if weight else 0.0
        if best <= 0:
            continue
        if name == "listed":
            listed = column
            continue
        terms.append((weight / best, column))
    out = _weighted_sum(terms, len(columns[0]))
    return _keep_first(out, columns[0], listed, weights.listed) if listed else out


def _weighted_sum(terms: list[tuple[float, Sequence[float]]], size: int) -> list[float]:
    """``0.0 + a * x + b * y + ...`` per candidate for ``terms`` ``(a, x), (b, y), ...``,
    added left to right (the same floats as one column at a time), three columns a pass."""
    out = [0.0] * size
    for at in range(0, len(terms), 3):
        chunk = terms[at:at + 3]
        if len(chunk) == 3:
            (a, x), (b, y), (c, z) = chunk
            out = [t + a * u + b * v + c * w for t, u, v, w in zip(out, x, y, z, strict=True)]
        elif len(chunk) == 2:
            (a, x), (b, y) = chunk
            out = [t + a * u + b * v for t, u, v in zip(out, x, y, strict=True)]
        else:
            (a, x), = chunk
            out = [t + a * u for t, u in zip(out, x, strict=True)]
    return out


def _keep_first(base: list[float], main: Sequence[float], listed: Sequence[float],
                weight: float) -> list[float]:
    """``base`` plus ``weight`` times ``listed`` (divided by its best value), except for
    the :data:`LIST_KEEP` best of ``base`` (ties by ``main``, then candidate order), which
    keep their ``base`` order, lifted above every other candidate."""
    scale = weight / max(listed)
    out = [b + scale * value for b, value in zip(base, listed, strict=True)]
    kept = heapq.nlargest(LIST_KEEP, range(len(base)), key=lambda i: (base[i], main[i], -i))
    held = set(kept)
    others = max((v for i, v in enumerate(out) if i not in held), default=None)
    if others is not None:
        lift = max(0.0, others - min(base[i] for i in kept)) + 1e-6
        for i in kept:
            out[i] = base[i] + lift
    return out


def listed_column(query: str, speaker: Sequence[float], expand: Sequence[float]
                  ) -> list[float]:
    """The ``listed`` signal of each candidate: for a query that :func:`asks_for_list`,
    its ``expand`` score where ``speaker`` is set (every candidate's when the query names
    no speaker); all 0 otherwise."""
    if not any(expand) or not asks_for_list(query):
        return [0.0] * len(expand)
    if not any(speaker):
        return list(expand)
    return [e if s else 0.0 for e, s in zip(expand, speaker, strict=True)]
