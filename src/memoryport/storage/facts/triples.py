"""The deterministic subject/relation/value reader of the fact store, and the
contradiction rule built on it.

``read_triple(sentence)`` recognises a small set of durable-fact phrasings (names, where
someone lives or works, preferences, favourites, likes and dislikes, what someone is,
uses, has, their age or partner, "X's <attribute> is Y") and returns a :class:`Triple`,
or ``None`` for anything else (questions, pronoun subjects it cannot resolve, chatter).

:func:`conflicts` says whether two triples contradict: same subject, same relation and
qualifier, and either opposite polarity on the same value ("likes tea" / "doesn't like
tea") or, for single-valued relations, different values ("lives in Paris" / "moved to
Berlin"). Values that contain one another ("Paris" / "Paris, France") are compatible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryport.storage.facts.text import normalize, tokens

__all__ = ["FIRST_PERSON", "SINGLE_VALUED", "Triple", "conflicts", "read_triple"]

FIRST_PERSON = "i"
"""The subject of first-person statements ("I", "my"); callers map it to the speaker."""

SINGLE_VALUED = frozenset(
    {"name", "lives_in", "works_at", "prefers", "favorite", "age", "partner", "birthday",
     "attr"}
)
"""Relations with one current value per subject (and qualifier): a new value retires the
old. ``uses`` joins them when it has a qualifier ("uses vim as her editor")."""


@dataclass(frozen=True)
class Triple:
    """One extracted statement: ``subject relation[qualifier] value`` (``negated`` for
    "doesn't", "no longer", "never", "not", "dislikes"...)."""

    subject: str
    relation: str
    value: str
    qualifier: str = ""
    negated: bool = False

    @property
    def single_valued(self) -> bool:
        """True when a different value of this relation replaces this one."""
        return self.relation in SINGLE_VALUED or (self.relation == "uses" and bool(self.qualifier))


_ADV = r"(?:(?:now|currently|still|really|actually|also|usually|always|definitely|mostly)\s+)*"
_SUBJ = (
    r"(?P<subj>I|[Ww]e|[Tt]he\s+(?:project|team|company|app)|"
    r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,2})"
)
_POSS = r"(?P<subj>my|our|[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,2})(?:'s|’s)?"
_NEG = r"(?P<neg>(?:do\s+not|does\s+not|don't|doesn't|don’t|doesn’t|no\s+longer|never|not)\s+)?"
_OWN = r"(?:my|his|her|their|its|our|the)"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("name", re.compile(r"^(?:my\s+name\s+is|call\s+me|i\s+am\s+called|i'm\s+called)\s+"
                        r"(?P<value>.+)$", re.I)),
    ("name", re.compile(r"^" + _POSS + r"\s+name\s+is\s+(?P<value>.+)$")),
    ("favorite", re.compile(r"^" + _POSS + r"\s+(?:favorite|favourite)\s+(?P<qual>[\w\s]+?)\s+"
                            r"(?:is|are)\s+(?P<value>.+)$")),
    ("prefers", re.compile(r"^" + _POSS + r"\s+preferred\s+(?P<qual>[\w\s]+?)\s+is\s+"
                           r"(?P<value>.+)$")),
    ("birthday", re.compile(r"^" + _POSS + r"\s+birthday\s+is\s+(?:on\s+)?(?P<value>.+)$")),
    ("lives_in", re.compile(r"^" + _SUBJ + r"\s+" + _ADV + _NEG +
                            r"(?:lives?|living|is\s+living|am\s+living|resides?|"
                            r"(?:is|am|are)\s+based|(?:has\s+|have\s+)?(?:moved|relocated))\s+"
                            r"(?:in|to)\s+(?P<value>.+)$")),
    ("works_at", re.compile(r"^" + _SUBJ + r"\s+" + _ADV + _NEG +
                            r"(?:works?|working|is\s+working|am\s+working|"
                            r"(?:is|am|are)\s+employed)\s+(?:at|for|by)\s+(?P<value>.+)$")),
    ("partner", re.compile(r"^" + _SUBJ + r"\s+(?:is|am|are|'m)\s+" + _ADV + _NEG +
                           r"(?:married\s+to|engaged\s+to|dating)\s+(?P<value>.+)$")),
    ("prefers", re.compile(r"^" + _SUBJ + r"\s+" + _ADV + _NEG + r"(?:prefers?|would\s+rather"
                           r"\s+use)\s+(?P<value>.+?)(?:\s+(?:as|for)\s+" + _OWN +
                           r"\s+(?P<qual>[\w\s]+?))?(?:\s+over\s+.+)?$")),
    ("uses", re.compile(r"^" + _SUBJ + r"\s+" + _ADV + _NEG + r"(?:uses?|is\s+using|am\s+using|"
                        r"(?:decided|agreed|chose)\s+to\s+use|switched\s+to)\s+(?P<value>.+?)"
                        r"(?:\s+(?:as|for)\s+" + _OWN + r"\s+(?P<qual>[\w\s]+?))?$")),
    ("likes", re.compile(r"^" + _SUBJ + r"\s+" + _ADV + _NEG +
                         r"(?:likes?|loves?|enjoys?|(?:is|am|are)\s+into|(?P<dis>dislikes?|"
                         r"hates?|can't\s+stand|detests?))\s+(?P<value>.+)$")),
    ("age", re.compile(r"^" + _SUBJ + r"\s+(?:is|am|'m)\s+(?P<value>\d{1,3})"
                       r"(?:\s+years?\s+old)?$")),
    ("is", re.compile(r"^" + _SUBJ + r"\s+(?:is|am|'m|are)\s+" + _ADV + _NEG +
                      r"(?:an?\s+)?(?P<value>[a-z][\w\s-]*)$")),
    ("has", re.compile(r"^" + _SUBJ + r"\s+" + _ADV + _NEG + r"(?:has|have|owns?)\s+"
                       r"(?P<value>(?:an?|two|three|\d+)\s+.+)$")),
    ("attr", re.compile(r"^" + _POSS + r"\s+(?P<qual>[a-z][a-z ]{1,24}?)\s+(?:is|are)\s+"
                        r"(?P<value>.+)$")),
]

_CUT = re.compile(
    r"\s*(?:[,;(]|\s-\s|\s(?:because|since|but|although|though|when|which|who|while|so|with|and\s+"
    r"(?:i|he|she|they|we|it))\b).*$", re.I)
_TAIL = re.compile(
    r"\s+(?:now|these\s+days|nowadays|anymore|any\s+more|too|as\s+well|again|instead|"
    r"a\s+lot|very\s+much|so\s+much|lately|today|yesterday|recently|(?:last|this|next)\s+\w+|"
    r"(?:in|since|on)\s+\d{4}|\d+\s+\w+\s+ago|(?:a|one|two|few)\s+\w+\s+ago)$", re.I)
_LEAD = re.compile(r"^(?:the|a|an|some)\s+", re.I)
_OPENERS = re.compile(r"^(?:(?:oh|well|so|yes|yeah|ok|okay|also|actually|btw|by the way|fyi|"
                      r"these days|nowadays|now|lately|recently|currently|honestly|anyway)"
                      r"[,!]?\s+)+", re.I)
_PRONOUNS = frozenset({"he", "she", "they", "it", "this", "that", "there", "you", "who",
                       "what", "which", "these", "those", "everyone", "someone"})
_NEGATIVE_IS = frozenset({"not", "sure", "going", "gonna", "glad", "sorry", "happy", "here",
                          "back", "done", "ready", "excited", "tired", "busy", "fine",
                          "good", "great", "okay", "ok", "thinking", "trying", "looking"})


def _clean_value(raw: str) -> str:
    value = _CUT.sub("", raw.strip())
    value = value.strip().rstrip(".!?").strip()
    while True:
        trimmed = _TAIL.sub("", value).strip()
        if trimmed == value:
            break
        value = trimmed
    return _LEAD.sub("", value).strip()


def _subject(raw: str) -> str | None:
    folded = normalize(raw)
    if folded in ("i", "my", "me"):
        return FIRST_PERSON
    if folded in ("we", "our"):
        return "we"
    if folded in _PRONOUNS:
        return None
    return folded.removesuffix("'s").removesuffix("’s")


def _match(relation: str, found: re.Match[str]) -> Triple | None:
    groups = found.groupdict()
    subject = _subject(groups.get("subj") or "i")
    value = _clean_value(groups.get("value") or "")
    if subject is None or not value or len(value) > 80:
        return None
    if relation == "is" and (value.split()[0] in _NEGATIVE_IS or value.endswith("ing")):
        return None
    qualifier = " ".join(tokens(groups.get("qual") or "", keep_stopwords=True))
    negated = bool(groups.get("neg")) or bool(groups.get("dis"))
    return Triple(subject, relation, normalize(value), qualifier, negated)


def read_triple(sentence: str) -> Triple | None:
    """The statement ``sentence`` makes, or None when it is not one this reader knows."""
    text = _OPENERS.sub("", sentence.strip()).strip()
    if not text or text.endswith("?") or len(text) > 300:
        return None
    text = text.rstrip(".!").strip()
    if text[:2].lower() in ("i'", "i’") and text[:3].lower() in ("i'm", "i’m"):
        text = "I am" + text[3:]
    for relation, pattern in _PATTERNS:
        found = pattern.match(text)
        if found:
            return _match(relation, found)
    return None


def _overlap(a: str, b: str) -> bool:
    """True when one value is (word-wise) contained in the other."""
    if a == b:
        return True
    ta, tb = set(tokens(a)), set(tokens(b))
    if not ta or not tb:
        return a in b or b in a
    return ta <= tb or tb <= ta


def conflicts(old: Triple, new: Triple) -> bool:
    """True when ``new`` contradicts ``old`` (see the module docstring)."""
    if old.subject != new.subject or old.relation != new.relation:
        return False
    if old.qualifier and new.qualifier and old.qualifier != new.qualifier:
        return False
    if old.negated != new.negated:
        return _overlap(old.value, new.value)
    if old.negated:
        return False
    if old.relation == "uses":
        single = bool(old.qualifier) and old.qualifier == new.qualifier
    else:
        single = old.relation in SINGLE_VALUED
    return single and not _overlap(old.value, new.value)
