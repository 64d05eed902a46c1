"""The write steps of the fact store, each run inside the caller's open transaction:
insert a fact with its entities, retire what it contradicts, append revisions."""

from __future__ import annotations

import json
import time
from typing import Any

from memoryport.storage.facts.connection import Connection
from memoryport.storage.facts.entities import (
    FUNCTION_WORDS,
    Entity,
    entity_key,
    extract_entities,
)
from memoryport.storage.facts.records import FACT_COLUMNS, Fact, FactInput, fact_from_row
from memoryport.storage.facts.text import content_hash, fts_all, fts_query, jaccard, tokens
from memoryport.storage.facts.triples import FIRST_PERSON, Triple, conflicts, read_triple

__all__ = [
    "NEAR_DUPLICATE",
    "entities_for",
    "find_duplicate",
    "insert_fact",
    "link_entities",
    "load_fact",
    "recorded_in_session",
    "retire_conflicting",
    "revision",
    "snapshot",
    "triple_for",
]

NEAR_DUPLICATE = 0.85
"""Token Jaccard at or above which a new fact is the same as a live one (unless their
extracted values or polarity differ)."""


def snapshot(fact: Fact) -> dict[str, Any]:
    """The fields a revision records before and after a change."""
    return {
        "content": fact.content,
        "category": fact.category,
        "tags": fact.tags,
        "trust_score": round(fact.trust_score, 4),
        "valid_from": fact.valid_from,
        "valid_to": fact.valid_to,
        "retired_at": fact.retired_at,
        "retired_reason": fact.retired_reason,
        "superseded_by": fact.superseded_by,
    }


def load_fact(conn: Connection, user_id: str, fact_id: int) -> Fact | None:
    """The fact ``fact_id`` in ``user_id``'s scope (live or retired), or None."""
    row = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM facts WHERE id = ? AND user_id = ?", (fact_id, user_id)
    ).fetchone()
    return fact_from_row(row) if row else None


def revision(
    conn: Connection,
    fact_id: int,
    user_id: str,
    action: str,
    *,
    actor: str,
    session_id: str = "",
    tool_call_id: str = "",
    before: Fact | None = None,
    after: Fact | None = None,
) -> None:
    """Append one revision (inside the open transaction)."""
    conn.execute(
        "INSERT INTO fact_revisions(fact_id, user_id, action, actor, at, session_id,"
        " tool_call_id, before, after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            fact_id, user_id, action, actor, time.time(), session_id, tool_call_id,
            json.dumps(snapshot(before)) if before else None,
            json.dumps(snapshot(after)) if after else None,
        ),
    )


def triple_for(content: str, speaker: str) -> Triple | None:
    """The statement ``content`` makes, first person mapped to ``speaker``."""
    triple = read_triple(content)
    if triple is None:
        return None
    if triple.subject == FIRST_PERSON:
        subject = entity_key(speaker) or "user"
        triple = Triple(subject, triple.relation, triple.value, triple.qualifier, triple.negated)
    return triple


ALL_TERMS_UP_TO = 6
"""Up to this many content words, a near duplicate (Jaccard >= 0.85) must contain all of
them, so its candidates are found with an AND query; longer facts use an OR query."""

_COLUMNS_F = ", ".join("f." + c.strip() for c in FACT_COLUMNS.split(","))


def find_duplicate(
    conn: Connection, user_id: str, content: str, triple: Triple | None, speaker: str
) -> Fact | None:
    """A live fact that says the same: same normalised content, or near-identical words
    (Jaccard >= :data:`NEAR_DUPLICATE`) with the same extracted statement (subject,
    relation, value and polarity; ``speaker`` is already in ``triple``'s subject)."""
    row = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND content_hash = ?"
        " AND retired_at IS NULL",
        (user_id, content_hash(content)),
    ).fetchone()
    if row:
        return fact_from_row(row)
    mine = set(tokens(content))
    if not mine:
        return None
    if triple is not None:
        rows = conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND subject = ?"
            " AND relation = ? AND retired_at IS NULL AND value = ? AND negated = ?",
            (user_id, triple.subject, triple.relation, triple.value, int(triple.negated)),
        ).fetchall()
    else:
        match = fts_all(mine) if len(mine) <= ALL_TERMS_UP_TO else fts_query(content)
        if not match:
            return None
        rows = conn.execute(
            f"SELECT {_COLUMNS_F} FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid"
            " WHERE facts_fts MATCH ? AND f.user_id = ? AND f.retired_at IS NULL"
            " AND f.relation = '' ORDER BY bm25(facts_fts) LIMIT 8",
            (match, user_id),
        ).fetchall()
    for candidate in map(fact_from_row, rows):
        if jaccard(mine, set(tokens(candidate.content))) >= NEAR_DUPLICATE:
            return candidate
    return None


def recorded_in_session(conn: Connection, user_id: str, item: FactInput
                        ) -> Fact | None:
    """The newest fact (live or retired) with ``item``'s normalised content recorded from
    ``item``'s session, or None (None too when the item has no session)."""
    session = item.provenance.session_id
    if not session:
        return None
    row = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND content_hash = ?"
        " AND session_id = ? ORDER BY id DESC LIMIT 1",
        (user_id, content_hash(item.content), session),
    ).fetchone()
    return fact_from_row(row) if row else None


def insert_fact(
    conn: Connection, user_id: str, item: FactInput, triple: Triple | None,
    trust: float,
) -> int:
    """Insert the fact row; return its id."""
    now = time.time()
    p = item.provenance
    t = triple or Triple("", "", "")
    e = item.event
    cursor = conn.execute(
        "INSERT INTO facts(user_id, content, content_hash, category, tags, subject, relation,"
        " qualifier, value, negated, trust_score, valid_from, recorded_at, updated_at,"
        " session_id, message_id, source_kind, actor, speaker, source_text, event_start,"
        " event_end, event_precision, event_words, stated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            user_id, item.content, content_hash(item.content), item.category, item.tags,
            t.subject, t.relation, t.qualifier, t.value, int(t.negated), trust,
            item.valid_from if item.valid_from is not None else now, now, now,
            p.session_id, p.message_id, p.source_kind, p.actor, item.speaker,
            item.source_text[:1000], e.start if e else None, e.end if e else None,
            e.precision if e else "", e.words[:200] if e else "",
            item.stated_at if item.stated_at is not None else (
                item.valid_from if item.valid_from is not None else now),
        ),
    )
    return int(cursor.lastrowid or 0)


def entities_for(content: str, triple: Triple | None) -> list[Entity]:
    """The entities ``content`` names, and its statement's subject and short value; a
    function word (:data:`FUNCTION_WORDS`: one the statement reader took for a subject,
    "The staging database is ..." reads subject "the", or a value) is no entity: it would
    link the fact to every query holding it."""
    found = extract_entities(content)
    if triple is not None:
        subject = Entity(triple.subject, "person")
        if triple.subject not in ("user", "we", "") and subject.key not in FUNCTION_WORDS:
            found.append(subject)
        if 0 < len(triple.value.split()) <= 4:
            found.append(Entity(triple.value, "thing"))
    unique: dict[str, Entity] = {}
    for entity in found:
        unique.setdefault(entity.key, entity)
    return [e for e in unique.values() if e.key and e.key not in FUNCTION_WORDS]


def link_entities(
    conn: Connection, user_id: str, fact_id: int, content: str, triple: Triple | None
) -> None:
    """Upsert the entities ``content`` names and link them to ``fact_id``."""
    now = time.time()
    found = entities_for(content, triple)
    conn.executemany(
        "INSERT INTO entities(user_id, key, name, kind, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(user_id, key) DO NOTHING",
        [(user_id, e.key, e.name, e.kind, now) for e in found],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO fact_entities(fact_id, entity_id)"
        " SELECT ?, id FROM entities WHERE user_id = ? AND key = ?",
        [(fact_id, user_id, e.key) for e in found],
    )


def retire_conflicting(
    conn: Connection, user_id: str, new: Fact, triple: Triple, speaker: str
) -> list[int]:
    """Retire every live fact ``new`` contradicts (superseded by it); return their ids."""
    rows = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND subject = ? AND relation = ?"
        " AND retired_at IS NULL AND id != ?",
        (user_id, triple.subject, triple.relation, new.id),
    ).fetchall()
    retired: list[int] = []
    now = time.time()
    for old in map(fact_from_row, rows):
        old_triple = Triple(old.subject, old.relation, old.value, old.qualifier, old.negated)
        if not conflicts(old_triple, triple):
            continue
        conn.execute(
            "UPDATE facts SET retired_at = ?, retired_reason = 'superseded', superseded_by = ?,"
            " valid_to = COALESCE(valid_to, ?), updated_at = ? WHERE id = ?",
            (now, new.id, new.valid_from or now, now, old.id),
        )
        after = load_fact(conn, user_id, old.id)
        revision(conn, old.id, user_id, "retire", actor=new.actor or "store",
                 session_id=new.session_id, tool_call_id=new.message_id, before=old, after=after)
        retired.append(old.id)
    return retired
