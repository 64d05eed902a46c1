"""Entity links an older version wrote and the current extractor would not: found and
removed by a named migration on each backend (SQLite ``m005_function_word_links``,
PostgreSQL ``m005_function_word_links``).

Before the fix of issue 12, a statement whose first word is a function word ("The
staging database is PostgreSQL 16.") stored its subject ("the") as an entity and linked
the fact to it, and a capitalised contraction ("It's raining in Paris", "That's ...")
left the entity "it" or "that"; the search boosted such a fact into every recall whose
question held the word. :func:`~memoryport.storage.facts.write.entities_for` no longer
makes such an entity; existing stores keep the links until this cleanup runs.

What is stale is decided by the current code, not by a second list: a link is a
candidate when its entity's key is one of
:data:`~memoryport.storage.facts.entities.FUNCTION_WORDS` (the words the writer now
rejects), and it is removed when :func:`~.write.entities_for`, run on the fact's stored
content and statement, would not link that key. An entity left with no link is deleted
(as ``forget`` deletes orphans). Every other row is untouched; the deletes move the
fact-search generation (its triggers), so search caches drop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memoryport.storage.facts.entities import FUNCTION_WORDS
from memoryport.storage.facts.triples import Triple
from memoryport.storage.facts.write import entities_for

__all__ = ["CANDIDATES", "DELETE_LINK", "DELETE_ORPHAN", "KEYS", "stale_links"]

KEYS: tuple[str, ...] = tuple(sorted(FUNCTION_WORDS))
"""Entity keys whose links may be stale: the words the writer now never links."""

CANDIDATES = (
    "SELECT f.user_id, fe.fact_id, fe.entity_id, e.key, f.content, f.subject, f.relation,"
    " f.value, f.qualifier, f.negated FROM fact_entities fe"
    " JOIN entities e ON e.id = fe.entity_id JOIN facts f ON f.id = fe.fact_id"
    f" WHERE e.key IN ({','.join('?' * len(KEYS))}) ORDER BY fe.fact_id, fe.entity_id"
)
"""The links to a :data:`KEYS` entity, with what the extractor reads (``?`` marks: the
keys), in a stable order."""

DELETE_LINK = "DELETE FROM fact_entities WHERE fact_id = ? AND entity_id = ?"
"""Removes one link."""

DELETE_ORPHAN = ("DELETE FROM entities WHERE id = ? AND NOT EXISTS"
                 " (SELECT 1 FROM fact_entities WHERE entity_id = ?)")
"""Deletes an entity no fact links any more (parameters: its id twice)."""


def _triple(row: Sequence[Any]) -> Triple | None:
    """The stored statement of a :data:`CANDIDATES` row (None when the fact has none)."""
    subject, relation, value, qualifier, negated = row[5:10]
    if not relation:
        return None
    return Triple(str(subject), str(relation), str(value), str(qualifier), bool(negated))


def stale_links(rows: Iterable[Sequence[Any]]) -> list[tuple[str, int, int]]:
    """(user id, fact id, entity id) of the :data:`CANDIDATES` rows the current writer
    would not link: the fact's own entities (:func:`~.write.entities_for` on its content
    and stored statement) do not include the entity's key."""
    out: list[tuple[str, int, int]] = []
    kept: dict[int, set[str]] = {}
    for row in rows:
        user_id, fact_id, entity_id, key, content = row[:5]
        keys = kept.get(fact_id)
        if keys is None:
            keys = kept[fact_id] = {e.key for e in entities_for(str(content), _triple(row))}
        if key not in keys:
            out.append((str(user_id), int(fact_id), int(entity_id)))
    return out
