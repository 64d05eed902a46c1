"""Rule-based entity extraction (no model, no download): people, places, organisations,
projects, dates and numbers named in a fact or a turn.

The rules, in order: dates (ISO dates, "May 7, 2023", "7 May 2023", month-year, weekdays,
years), numbers (with common units and currency), quoted or backticked names and
"project X" / "X project" (projects), capitalised phrases (an organisation suffix or a
work verb before it makes an organisation, a place preposition before it a place,
otherwise a person or a name), skipping sentence-initial function words. Possessive
``'s`` is dropped, so "Bob's cat" names ``Bob``, never ``t like Bob``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from memoryport.storage.facts.text import normalize

__all__ = ["FUNCTION_WORDS", "KINDS", "Entity", "entity_key", "extract_entities"]

KINDS = ("person", "place", "org", "project", "date", "number", "thing")
"""Entity kinds, as stored."""


@dataclass(frozen=True)
class Entity:
    """One entity mention: its surface ``name`` and ``kind`` (one of :data:`KINDS`)."""

    name: str
    kind: str

    @cached_property
    def key(self) -> str:
        """The lookup key (see :func:`entity_key`; computed once per entity)."""
        return entity_key(self.name)


def entity_key(name: str) -> str:
    """How entity names are matched: case-folded, without a leading "the" or a trailing
    possessive (an exact key match, never a ``LIKE`` pattern)."""
    key = normalize(name).removesuffix("'s").removesuffix("’s")
    return key[4:] if key.startswith("the ") else key


_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|"
           r"Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_DAYS = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|" + _MONTHS + r"\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTHS + r"(?:,?\s+\d{4})?|" + _MONTHS +
    r"\s+\d{4}|" + _DAYS + r"|(?:19|20)\d{2})\b"
)
_NUMBER = re.compile(
    r"(?:[$€£]\s?)?\b\d+(?:[.,]\d+)*(?:\s?(?:%|percent|km|miles?|kg|lbs?|years?|months?|"
    r"weeks?|days?|hours?|dollars|euros|k|m)\b)?"
)
_QUOTED = re.compile(r"[\"“`]([^\"”`\n]{2,60})[\"”`]")
_PROJECT = re.compile(
    r"\b(?:project|repo|repository|app|library)\s+([A-Z][\w.-]+|[\w.-]+-[\w.-]+)|"
    r"\b([A-Z][\w.-]+)\s+(?:project|repo|app|library)\b"
)
_POSSESSIVE = re.compile(r"(?:'s|’s)$")
_CAPS = re.compile(r"\b[A-Z][\w’'-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w’'-]*)*")


def _words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())


_ORG_SUFFIX = _words(
    "inc corp corporation ltd llc gmbh university college company co labs lab bank group "
    "foundation institute school hospital club agency studio studios airlines church"
)
_ORG_CUE = re.compile(r"(?:works?|working|worked|employed|job|intern(?:ing)?|joined)\s+"
                      r"(?:at|for|by|with)?\s*$", re.I)
_PLACE_CUE = re.compile(r"(?:\bin|\bto|\bfrom|\bnear|\bvisit(?:ed|ing)?|\baround|"
                        r"\blives?|\bmoved)\s+(?:the\s+)?$", re.I)
_SKIP = _words(
    """i i'm i've i'd i'll me my we our you your he she it they them their this that these
    those the a an and but or so if when what who where why how yes no ok okay oh hi hey
    hello thanks thank please sure well also just maybe today tomorrow yesterday there
    here not do does did is are was were have has had can could would should will
    congrats wow great nice cool anyway by as at in on for of to from with
    """
)
FUNCTION_WORDS = _SKIP
"""Words that are never an entity on their own (pronouns, articles, greetings, ...)."""


def _spans_taken(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in taken)


def _cap_kind(text: str, start: int, name: str) -> str:
    if any(word.casefold().strip(".,") in _ORG_SUFFIX for word in name.split()):
        return "org"
    before = text[max(0, start - 40):start]
    if _ORG_CUE.search(before):
        return "org"
    if _PLACE_CUE.search(before):
        return "place"
    return "person"


def _capitalised(text: str, taken: list[tuple[int, int]]) -> list[Entity]:
    found: list[Entity] = []
    for m in _CAPS.finditer(text):
        words = m.group(0).split()
        start = m.start()
        while words and words[0].casefold().strip("’'") in _SKIP:
            start = text.index(words[0], start) + len(words[0])
            words = words[1:]
        if not words:
            continue
        name = " ".join(words)
        name = _POSSESSIVE.sub("", name).strip("-’'")
        end = start + len(name) + 1
        if len(name) < 2 or _spans_taken(taken, start, end):
            continue
        found.append(Entity(name, _cap_kind(text, start, name)))
    return found


def extract_entities(text: str) -> list[Entity]:
    """Entities named in ``text``, in order of first mention, one per key; never a
    :data:`FUNCTION_WORDS` key (it would link the text to every query holding the word)."""
    found: list[Entity] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in ((_DATE, "date"), (_QUOTED, "project"), (_PROJECT, "project")):
        for m in pattern.finditer(text):
            name = next((g for g in m.groups() if g), m.group(0)) if m.groups() else m.group(0)
            found.append(Entity(name.strip(), kind))
            taken.append(m.span())
    for m in _NUMBER.finditer(text):
        if not _spans_taken(taken, *m.span()):
            found.append(Entity(m.group(0).strip(), "number"))
            taken.append(m.span())
    found.extend(_capitalised(text, taken))
    unique: dict[str, Entity] = {}
    for entity in found:  # "It's", "That's", "What's" leave a function word: no entity
        if entity.key and entity.key not in _SKIP and entity.key not in unique:
            unique[entity.key] = entity
    return list(unique.values())
