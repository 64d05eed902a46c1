"""The deterministic fact extractor: the sentences of a message that state a durable fact
(a name, where someone lives or works, a preference, a favourite, a like or dislike,
what someone is, uses or has), each as a :class:`FactInput`.

Only statements the triple reader recognises are kept (never a whole message), each at
most 300 characters, and only when the safety scan finds nothing in it.

Time words in the sentence ("I moved to Berlin last year") are resolved at write time
against the message's own timestamp (:mod:`memoryport.storage.timeexpr`): the fact keeps
the event window, its precision and the words, and a past or present event becomes the
fact's ``valid_from`` (when it became true), so ``as_of`` answers follow the event, not
the day it was mentioned.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from pathlib import Path

from memoryport import safety
from memoryport.storage.facts.records import FactEvent, FactInput, Provenance
from memoryport.storage.facts.triples import read_triple
from memoryport.storage.timeexpr import has_time_words, resolve
from memoryport.types import Message, flatten_content

__all__ = ["event_of", "facts_in_messages", "facts_in_text"]

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_CATEGORY = {"prefers": "user_pref", "favorite": "user_pref", "likes": "user_pref",
             "uses": "tool"}


def facts_in_text(
    text: str,
    *,
    speaker: str,
    provenance: Provenance,
    timestamp: float | None = None,
    home: Path | None = None,
) -> list[FactInput]:
    """The durable facts ``text`` states (``speaker`` is whom "I" means)."""
    found: list[FactInput] = []
    for match in _SENTENCE.finditer(text or ""):
        sentence = match.group(0).strip()
        if len(sentence) < 6 or len(sentence) > 300:
            continue
        triple = read_triple(sentence)
        if triple is None or safety.scan(sentence, home=home):
            continue
        category = _CATEGORY.get(triple.relation, "general")
        event = event_of(sentence, timestamp)
        valid_from = timestamp
        if event is not None and event.start <= (timestamp or time.time()):
            valid_from = event.start
        found.append(FactInput(sentence.rstrip(".!"), category, "", None, valid_from,
                               provenance, speaker, text[:1000], event, timestamp))
    return found


def event_of(sentence: str, timestamp: float | None) -> FactEvent | None:
    """The first time expression of ``sentence`` resolved against ``timestamp`` (the
    message's time; now when unknown), or None when it names no time."""
    if not has_time_words(sentence):
        return None
    try:
        found = resolve(sentence, timestamp if timestamp is not None else time.time())
    except ValueError:
        return None
    if not found:
        return None
    first = found[0]
    return FactEvent(first.start, first.end, first.precision, first.words)


def facts_in_messages(
    messages: Iterable[Message],
    *,
    session_id: str,
    source_kind: str,
    home: Path | None = None,
) -> list[FactInput]:
    """The durable facts the user states in ``messages`` (assistant text is not a source
    of facts about the user; tool output never is)."""
    found: list[FactInput] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        message_id = str(message.get("id") or message.get("message_id") or index)
        provenance = Provenance(session_id, message_id, source_kind, "extractor")
        found.extend(facts_in_text(flatten_content(message.get("content")), speaker="user",
                                   provenance=provenance, home=home))
    return found
