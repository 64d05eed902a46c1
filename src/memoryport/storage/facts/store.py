"""``FactStore``: durable facts in SQLite, one user's scope per instance.

Every logical write (a fact with its entities, the facts it retires and the revisions
of all of them) is one ``BEGIN IMMEDIATE`` transaction: a crash leaves either all of it
or none. Nothing is rewritten without a trail: updates, retirements, removals and
feedback append a revision; a contradicted fact is retired (``retired_at``,
``superseded_by``), never deleted. Only :meth:`FactStore.forget` deletes, on purpose
(privacy), and it leaves a ``forget`` revision without content.

The store does not scan content for safety: callers (the provider, admin) do, before
writing, with ``memoryport.safety``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from memoryport.errors import StoreError, ToolArgumentError
from memoryport.storage.facts import migrations, read, write
from memoryport.storage.facts.connection import Connection
from memoryport.storage.facts.records import (
    CATEGORIES,
    FACT_COLUMNS,
    Contradiction,
    Fact,
    FactInput,
    Provenance,
    Revision,
    fact_from_row,
)
from memoryport.storage.facts.searchcache import SearchCache
from memoryport.storage.facts.text import content_hash
from memoryport.storage.facts.triples import Triple
from memoryport.storage.sessions.sqlite.connect import create_private_file
from memoryport.storage.sqlite_wal import enable_wal

__all__ = ["MAX_FACT_CHARS", "AddResult", "FactStore"]

MAX_FACT_CHARS = 2000
"""Longest fact accepted (a fact is a statement, not a document)."""

T = TypeVar("T")


@dataclass(frozen=True)
class AddResult:
    """What :meth:`FactStore.add` did: ``status`` is ``added`` or ``duplicate`` (the
    existing fact is returned); ``superseded`` lists the ids the new fact retired."""

    fact: Fact
    status: str
    superseded: list[int] = field(default_factory=list)


def check_content(content: Any) -> str:
    """``content`` stripped, or ``ToolArgumentError`` saying what is wrong with it."""
    if not isinstance(content, str) or not content.strip():
        raise ToolArgumentError("content must be a non-empty string (the fact to store)")
    text = content.strip()
    if len(text) > MAX_FACT_CHARS:
        raise ToolArgumentError(
            f"content is {len(text)} characters; a fact holds at most {MAX_FACT_CHARS}:"
            " store one statement per fact"
        )
    return text


def check_category(category: Any) -> str:
    """``category`` if it is one of :data:`CATEGORIES`, else ``ToolArgumentError``."""
    if category not in CATEGORIES:
        raise ToolArgumentError(
            f"category {category!r} is not one of {', '.join(CATEGORIES)}"
        )
    return str(category)


class FactStore:
    """Facts of one user (``user_id`` None or '' = the default, no-user scope).

    Args:
        path: the SQLite file (created 0600, WAL); shared with the turn index.
        user_id: the scope every read and write is limited to.
        default_trust: trust of a new fact.
        min_trust: the floor under which facts are hidden from recall (still listed).
    """

    def __init__(
        self,
        path: Path,
        *,
        user_id: str | None = None,
        default_trust: float = 0.5,
        min_trust: float = 0.3,
        busy_timeout: float = 10.0,
    ) -> None:
        self.path = Path(path)
        self.user_id = user_id or ""
        self.default_trust = default_trust
        self.min_trust = min_trust
        self._lock = threading.RLock()
        self._cache = SearchCache()  # search's reads kept per fact generation (under _lock)
        try:
            create_private_file(self.path)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout, isolation_level=None,
                check_same_thread=False,
            )
            enable_wal(self._conn)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA secure_delete=ON")
            migrations.migrate(self._conn)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the fact store {self.path}: {exc}") from exc
        self._closed = False

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with self._lock:
            self._check_open()
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _read(self, fn: Callable[[Connection], T]) -> T:
        with self._lock:
            self._check_open()
            try:
                return fn(self._conn)
            except sqlite3.Error as exc:
                raise StoreError(f"fact store read failed: {exc}") from exc

    def _check_open(self) -> None:
        if getattr(self, "_closed", True):
            raise StoreError("the fact store is closed")

    def _require(self, conn: Connection, fact_id: int) -> Fact:
        fact = write.load_fact(conn, self.user_id, fact_id)
        if fact is None:
            raise ToolArgumentError(
                f"no fact #{fact_id} in this store; list facts to find the id"
            )
        return fact

    # ------------------------------------------------------------------ writes
    def add(self, item: FactInput) -> AddResult:
        """Add a fact with its entities; retire the live facts it contradicts. A fact that
        says what a live one says already returns that one (``status="duplicate"``)."""
        return self.add_many([item])[0]

    def add_many(self, items: Sequence[FactInput], *, once_per_session: bool = False
                 ) -> list[AddResult]:
        """Add several facts (e.g. those of one turn) in one transaction, in order: each
        as :meth:`add` would, later ones seeing the earlier ones (a repeat in the batch is
        a duplicate; a later value retires an earlier one). Every item is checked first:
        an invalid one raises ``ToolArgumentError`` naming it and nothing is written.

        ``once_per_session``: a fact already recorded from the item's session, even one
        retired since, is a duplicate (catch-up extraction at compression or session end
        must not bring back what a later turn of the same session superseded)."""
        prepared: list[tuple[FactInput, Triple | None]] = []
        for index, item in enumerate(items):
            try:
                content = check_content(item.content)
                check_category(item.category)
            except ToolArgumentError as exc:
                where = f"fact {index + 1}: " if len(items) > 1 else ""
                raise ToolArgumentError(f"{where}{exc}") from exc
            speaker = item.speaker or "user"
            if content != item.content or speaker != item.speaker:
                item = replace(item, content=content, speaker=speaker)
            prepared.append((item, write.triple_for(content, speaker)))
        if not prepared:
            return []
        done: list[tuple[Fact, str, list[int]]] = []
        try:
            with self._transaction() as conn:
                for item, triple in prepared:
                    seen = (write.recorded_in_session(conn, self.user_id, item)
                            if once_per_session else None)
                    done.append((seen, "duplicate", []) if seen else
                                self._add_one(conn, item, triple))
                full = read.with_entities(conn, [fact for fact, _, _ in done])
        except sqlite3.Error as exc:
            raise StoreError(f"could not store the fact: {exc}") from exc
        return [AddResult(fact, status, retired)
                for fact, (_, status, retired) in zip(full, done, strict=True)]

    def _add_one(self, conn: Connection, item: FactInput, triple: Triple | None
                 ) -> tuple[Fact, str, list[int]]:
        """One fact of :meth:`add_many`, inside its transaction."""
        same = write.find_duplicate(conn, self.user_id, item.content, triple, item.speaker)
        if same is not None:
            return same, "duplicate", []
        trust = self.default_trust if item.trust is None else item.trust
        fact_id = write.insert_fact(conn, self.user_id, item, triple, min(1.0, max(0.0, trust)))
        write.link_entities(conn, self.user_id, fact_id, item.content, triple)
        fact = self._require(conn, fact_id)
        retired = (write.retire_conflicting(conn, self.user_id, fact, triple, item.speaker)
                   if triple else [])
        p = item.provenance
        write.revision(conn, fact_id, self.user_id, "add", actor=p.actor,
                       session_id=p.session_id, tool_call_id=p.message_id, after=fact)
        return fact, "added", retired

    def update(
        self,
        fact_id: int,
        *,
        content: str | None = None,
        category: str | None = None,
        tags: str | None = None,
        trust_delta: float | None = None,
        provenance: Provenance | None = None,
    ) -> Fact:
        """Change a live fact in place (with a revision); new content re-links entities."""
        p = provenance or Provenance()
        text = check_content(content) if content is not None else None
        if category is not None:
            check_category(category)
        try:
            with self._transaction() as conn:
                before = self._require(conn, fact_id)
                if not before.live:
                    raise ToolArgumentError(f"fact #{fact_id} is retired; add a new fact")
                after = self._apply_update(conn, before, text, category, tags, trust_delta)
                write.revision(conn, fact_id, self.user_id, "update", actor=p.actor,
                               session_id=p.session_id, tool_call_id=p.message_id,
                               before=before, after=after)
                full = read.with_entities(conn, [after])[0]
        except sqlite3.IntegrityError as exc:
            raise ToolArgumentError(
                f"another live fact already says {content!r}; remove one of them instead"
            ) from exc
        except sqlite3.Error as exc:
            raise StoreError(f"could not update fact #{fact_id}: {exc}") from exc
        return full

    def _apply_update(
        self, conn: Connection, before: Fact, text: str | None,
        category: str | None, tags: str | None, trust_delta: float | None,
    ) -> Fact:
        """One ``UPDATE`` of the row, which returns it (the index triggers fire once, and
        only when the content or tags are set); new content also re-links the entities."""
        trust = min(1.0, max(0.0, before.trust_score + (trust_delta or 0.0)))
        sets = "category = ?, trust_score = ?, updated_at = ?"
        values: list[Any] = [category or before.category, trust, time.time()]
        if tags is not None:
            sets += ", tags = ?"
            values.append(tags)
        new_text = text if text is not None and text != before.content else None
        triple = write.triple_for(new_text, "user") if new_text is not None else None
        if new_text is not None:
            t = triple or Triple("", "", "")
            sets += (", content = ?, content_hash = ?, subject = ?, relation = ?,"
                     " qualifier = ?, value = ?, negated = ?")
            values += [new_text, content_hash(new_text), t.subject, t.relation, t.qualifier,
                       t.value, int(t.negated)]
        rows = conn.execute(f"UPDATE facts SET {sets} WHERE id = ? RETURNING {FACT_COLUMNS}",
                            (*values, before.id)).fetchall()
        if new_text is not None:
            conn.execute("DELETE FROM fact_entities WHERE fact_id = ?", (before.id,))
            write.link_entities(conn, self.user_id, before.id, new_text, triple)
        return fact_from_row(rows[0])

    def remove(self, fact_id: int, *, provenance: Provenance | None = None) -> bool:
        """Retire a live fact (reason ``removed``); False when it was already retired."""
        p = provenance or Provenance()
        with self._transaction() as conn:
            before = self._require(conn, fact_id)
            if not before.live:
                return False
            now = time.time()
            rows = conn.execute(
                "UPDATE facts SET retired_at = ?, retired_reason = 'removed',"
                " valid_to = COALESCE(valid_to, ?), updated_at = ? WHERE id = ?"
                f" RETURNING {FACT_COLUMNS}",
                (now, now, now, fact_id),
            ).fetchall()
            write.revision(conn, fact_id, self.user_id, "remove", actor=p.actor,
                           session_id=p.session_id, tool_call_id=p.message_id, before=before,
                           after=fact_from_row(rows[0]))
        return True

    def feedback(
        self, fact_id: int, helpful: bool, *, provenance: Provenance | None = None
    ) -> dict[str, Any]:
        """Helpful: trust +0.05 (and ``helpful_count``); unhelpful: -0.10. Clamped to
        [0, 1]. Returns the reference tool's result plus whether recall now hides it."""
        p = provenance or Provenance()
        with self._transaction() as conn:
            before = self._require(conn, fact_id)
            delta = 0.05 if helpful else -0.10
            column = "helpful_count" if helpful else "unhelpful_count"
            conn.execute(
                f"UPDATE facts SET trust_score = max(0.0, min(1.0, trust_score + ?)),"
                f" {column} = {column} + 1, updated_at = ? WHERE id = ?",
                (delta, time.time(), fact_id),
            )
            after = self._require(conn, fact_id)
            write.revision(conn, fact_id, self.user_id, "feedback", actor=p.actor,
                           session_id=p.session_id, tool_call_id=p.message_id,
                           before=before, after=after)
        return {
            "fact_id": fact_id,
            "old_trust": round(before.trust_score, 4),
            "new_trust": round(after.trust_score, 4),
            "helpful_count": after.helpful_count,
            "unhelpful_count": after.unhelpful_count,
            "hidden_from_recall": after.trust_score < self.min_trust,
        }

    def forget(self, fact_id: int, *, actor: str = "user") -> bool:
        """Delete a fact (live or retired), its entity links, the entities no other fact
        names and its history's content (freed pages are zeroed: ``secure_delete``); a
        ``forget`` revision without content records that it happened."""
        with self._transaction() as conn:
            if write.load_fact(conn, self.user_id, fact_id) is None:
                return False
            linked = [r[0] for r in conn.execute(
                "SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))]
            conn.execute("UPDATE facts SET superseded_by = NULL WHERE superseded_by = ?"
                         " AND user_id = ?", (fact_id, self.user_id))
            conn.execute("DELETE FROM facts WHERE id = ? AND user_id = ?",
                         (fact_id, self.user_id))
            conn.execute("DELETE FROM fact_revisions WHERE fact_id = ? AND user_id = ?",
                         (fact_id, self.user_id))
            conn.executemany(
                "DELETE FROM entities WHERE id = ? AND NOT EXISTS"
                " (SELECT 1 FROM fact_entities WHERE entity_id = ?)",
                [(e, e) for e in linked],
            )
            write.revision(conn, fact_id, self.user_id, "forget", actor=actor)
        return True

    def mark_retrieved(self, fact_ids: Sequence[int]) -> None:
        """Count one retrieval for each fact id (an id named twice counts twice; recall
        and search call this)."""
        counts: dict[int, int] = {}
        for fact_id in fact_ids:
            counts[fact_id] = counts.get(fact_id, 0) + 1
        if not counts:
            return
        by_count: dict[int, list[int]] = {}
        for fact_id, count in counts.items():
            by_count.setdefault(count, []).append(fact_id)
        with self._transaction() as conn:
            for count, ids in by_count.items():
                marks = ",".join("?" * len(ids))
                conn.execute(
                    f"UPDATE facts SET retrieval_count = retrieval_count + ?"
                    f" WHERE user_id = ? AND id IN ({marks})",
                    (count, self.user_id, *ids),
                )

    # ------------------------------------------------------------------ reads
    def get(self, fact_id: int) -> Fact | None:
        """The fact (live or retired) with its entities, or None."""
        def run(conn: Connection) -> Fact | None:
            fact = write.load_fact(conn, self.user_id, fact_id)
            return read.with_entities(conn, [fact])[0] if fact else None
        return self._read(run)

    def find_live(self, content: str) -> Fact | None:
        """The live fact whose normalised content equals ``content``, or None."""
        def run(conn: Connection) -> Fact | None:
            return write.find_duplicate(conn, self.user_id, content, None, "user") if (
                content.strip()) else None
        return self._read(run)

    def search(self, query: str, *, limit: int = 10, min_trust: float | None = None,
               as_of: float | None = None) -> list[Fact]:
        """Ranked live facts for ``query``; with ``as_of`` (epoch seconds) the facts
        believed then, retired since or not (see :func:`memoryport.storage.facts.read.search`)."""
        floor = self.min_trust if min_trust is None else min_trust

        def run(conn: Connection) -> list[Fact]:
            conn.execute("BEGIN")  # one read snapshot: the cache's generation first
            try:
                self._cache.check(conn)
                return read.search(conn, self.user_id, query, limit=limit, min_trust=floor,
                                   as_of=as_of, cache=self._cache)
            finally:
                conn.execute("COMMIT")
        return self._read(run)

    def chain(self, fact_id: int) -> list[Fact]:
        """The supersession chain through ``fact_id``, oldest first; ``ToolArgumentError``
        when there is no such fact."""
        found = self._read(lambda c: read.chain(c, self.user_id, fact_id))
        if not found:
            raise ToolArgumentError(f"no fact #{fact_id} in this store; list facts to find the id")
        return found

    def why(self, fact_id: int) -> dict[str, Any]:
        """Where ``fact_id`` came from: session, message or tool call, source kind, who,
        when (recorded, valid from), the text it was read from, and its first revision."""
        fact = self.get(fact_id)
        if fact is None:
            raise ToolArgumentError(f"no fact #{fact_id} in this store; list facts to find the id")
        history = self.revisions(fact_id)
        return {
            "fact_id": fact.id, "content": fact.content, "live": fact.live,
            "session_id": fact.session_id, "message_id": fact.message_id,
            "source_kind": fact.source_kind, "actor": fact.actor, "speaker": fact.speaker,
            "recorded_at": fact.recorded_at, "valid_from": fact.valid_from,
            "valid_to": fact.valid_to, "retired_at": fact.retired_at,
            "source_text": fact.source_text,
            "added": history[0].to_dict() if history else None,
        }

    def probe(self, entity: str, *, limit: int = 10) -> list[Fact]:
        """Live facts about ``entity`` (entity index)."""
        return self._read(lambda c: read.probe(c, self.user_id, entity, limit=limit,
                                               min_trust=self.min_trust))

    def related(self, entity: str, *, limit: int = 10
                ) -> tuple[list[dict[str, Any]], list[Fact]]:
        """Entities sharing facts with ``entity`` and their facts (one hop)."""
        return self._read(lambda c: read.related(c, self.user_id, entity, limit=limit,
                                                 min_trust=self.min_trust))

    def reason(self, entities: Sequence[str], *, limit: int = 10
               ) -> list[tuple[Fact, list[str]]]:
        """Facts linking the given entities, most covered first."""
        return self._read(lambda c: read.reason(c, self.user_id, entities, limit=limit,
                                                min_trust=self.min_trust))

    def contradictions(self, *, limit: int = 20, fact_id: int | None = None
                       ) -> list[Contradiction]:
        """Superseded facts and the facts that retired them, newest first."""
        return self._read(lambda c: read.contradictions(c, self.user_id, limit=limit,
                                                        fact_id=fact_id))

    def list_facts(self, *, limit: int = 50, offset: int = 0, include_retired: bool = False,
             category: str = "") -> list[Fact]:
        """Facts newest first (those under the trust floor too)."""
        return self._read(lambda c: read.list_facts(
            c, self.user_id, limit=limit, offset=offset, include_retired=include_retired,
            category=category))

    def revisions(self, fact_id: int) -> list[Revision]:
        """The history of ``fact_id``, oldest first."""
        return self._read(lambda c: read.revisions(c, self.user_id, fact_id))

    def count(self, *, include_retired: bool = False) -> int:
        """How many facts this scope holds (live only unless ``include_retired``)."""
        sql = "SELECT count(*) FROM facts WHERE user_id = ?"
        if not include_retired:
            sql += " AND retired_at IS NULL"
        return int(self._read(lambda c: c.execute(sql, (self.user_id,)).fetchone()[0]))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not getattr(self, "_closed", True):
                self._closed = True
                self._conn.close()
