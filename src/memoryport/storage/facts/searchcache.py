"""What the fact search reads besides its word match, kept in memory between searches
while the fact tables are unchanged (recall runs it every turn; the SQLite store, and the
PostgreSQL store through :mod:`.postgres_search` with its user's counter).

A search (:func:`memoryport.storage.facts.read.search`) asks, besides the FTS5 match of
its words: which facts link to an entity its words name, the best of those facts (its
entity candidates), the entity names of the facts it returns and the user's latest fact
time. None of that
depends on more than the query's words and the fact tables, which change seldom (a turn
stating a fact, a tool call, a retrieval count) while the turn index, in the same file,
changes every turn. So :class:`SearchCache` keeps those answers by key, fact id and user,
and drops all of them when the fact tables' generation moves: ``fact_generation.n``,
which triggers on ``facts``, ``entities`` and ``fact_entities`` bump in the writing
transaction itself (migration ``m004_fact_generation``), whatever process writes.

It also knows, per FTS5 phrase the search's words make, whether any fact holds it
(:meth:`SearchCache.may_match`, SQLite): a query none of whose words a fact holds
skips the FTS5 query (most turns' messages share no word with a small fact store).

The cache is exact: every answer is what the query it replaces returns in the same read
snapshot (the store runs a cached search in one read transaction, the generation read
first; the entity candidates are the query's own earlier answer for the same ids, scope
and limit). Bounded: cleared past :data:`CACHE_ENTRIES` entries.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence

from memoryport.storage.facts.connection import Connection
from memoryport.storage.facts.records import Fact

__all__ = ["CACHE_ENTRIES", "LINKS_ALL", "SearchCache"]

CACHE_ENTRIES = 4096
"""The most keys, candidate lists or name lists a cache holds (each cleared when full)."""
LINKS_ALL = 2048
"""A user with at most this many entity links has them all read at the second search of
a generation (one query); a larger store reads the keys each query names, once each."""


def _marks(count: int) -> str:
    return ",".join("?" * count)


class SearchCache:
    """The fact search's entity-index lookups, entity candidates and entity names of one
    fact store, valid for one generation of its tables (not thread-safe: the store calls it
    under its lock)."""

    def __init__(self) -> None:
        self.generation: int | None = None
        """The ``fact_generation.n`` the entries were read at (None: nothing read)."""
        self._keys: dict[tuple[str, str], frozenset[int]] = {}  # (user, key) -> fact ids
        self._candidates: dict[Hashable, list[Fact]] = {}  # entity candidates by query
        self._names: dict[int, tuple[str, ...]] = {}  # fact id -> entity names by id
        self._latest: dict[str, float | None] = {}  # user -> latest time a fact was stated
        self._complete: dict[str, bool] = {}  # user -> all their links are in _keys
        self._searches = 0  # searches since the generation was read
        self._phrases: dict[str, bool] = {}  # FTS5 phrase -> some fact (any user) holds it

    def clear(self) -> None:
        """Forget every entry."""
        self._phrases.clear()
        self._keys.clear()
        self._candidates.clear()
        self._names.clear()
        self._latest.clear()
        self._complete.clear()
        self._searches = 0

    def check(self, conn: Connection) -> None:
        """Read the tables' generation (first, inside the search's read transaction);
        forget everything when it moved."""
        row = conn.execute("SELECT n FROM fact_generation WHERE id = 1").fetchone()
        self.seen(int(row[0]) if row else None)

    def may_match(self, conn: Connection, phrases: Sequence[str]) -> bool:
        """Whether the FTS5 query ORing ``phrases`` (quoted, as the search's MATCH joins
        them) can match a fact: False only when no row of ``facts_fts`` (any user, live
        or not) holds any of them, each phrase looked up once per generation (the table
        changes only with ``facts``, whose triggers bump the generation). SQLite only."""
        known = self._phrases
        unknown = []
        for phrase in phrases:
            held = known.get(phrase)
            if held:
                return True
            if held is None:
                unknown.append(phrase)
        for phrase in unknown:
            if len(known) >= CACHE_ENTRIES:
                known.clear()
            held = known[phrase] = conn.execute(
                "SELECT 1 FROM facts_fts WHERE facts_fts MATCH ? LIMIT 1", (phrase,)
            ).fetchone() is not None
            if held:
                return True
        return False

    def seen(self, generation: int | None) -> None:
        """The generation a search read (PostgreSQL: its user's counter, read with the
        search's first statements); forget everything when it moved (None: unknown, so
        nothing is kept)."""
        if generation is None or generation != self.generation:
            self.clear()
        self.generation = generation
        self._searches += 1

    def missing(self, user_id: str, keys: Iterable[str]) -> list[str]:
        """The ``keys`` whose links :meth:`linked` would read (none when the user's links
        are all held), sorted; as of the generation last seen."""
        if self._complete.get(user_id, False):
            return []
        return sorted(k for k in set(keys) if (user_id, k) not in self._keys)

    def put_links(self, user_id: str, keys: Sequence[str],
                  rows: Iterable[tuple[str, int]]) -> None:
        """Keep what the query of :meth:`linked` returned for ``keys`` ((key, fact id)
        rows) in the generation last seen (read in the same snapshot as it)."""
        found: dict[str, set[int]] = {k: set() for k in keys}
        for key, fact_id in rows:
            found[key].add(int(fact_id))
        if len(self._keys) + len(found) > CACHE_ENTRIES:
            self._keys.clear()
            self._complete = {u: False for u in self._complete}
        self._keys.update(((user_id, k), frozenset(v)) for k, v in found.items())

    def has_latest(self, user_id: str) -> bool:
        """True when the user's latest fact time is held."""
        return user_id in self._latest

    def put_latest(self, user_id: str, latest: float | None) -> None:
        """Keep the user's latest fact time (read in the generation last seen)."""
        self._latest[user_id] = latest

    def linked(self, conn: Connection, user_id: str, keys: Iterable[str]) -> set[int]:
        """Ids of the facts linked to an entity of ``user_id`` whose key is one of
        ``keys`` (what ``read._entity_boost`` selects). From the second search of a
        generation on, a user with at most :data:`LINKS_ALL` links has them all read at
        once (a query's words are mostly not entity keys: no query for those; a store
        whose facts change every turn keeps reading only the keys each query names)."""
        if user_id not in self._complete and self._searches > 1:
            self._read_all(conn, user_id)  # a second search in this generation: worth it
        complete = self._complete.get(user_id, False)
        out: set[int] = set()
        missing = []
        for key in set(keys):
            hit = self._keys.get((user_id, key))
            if hit is not None:
                out |= hit
            elif not complete:
                missing.append(key)
        if missing:
            rows = [(str(k), int(i)) for k, i in conn.execute(
                "SELECT e.key, fe.fact_id FROM entities e JOIN fact_entities fe ON"
                f" fe.entity_id = e.id WHERE e.user_id = ? AND e.key IN ({_marks(len(missing))})",
                [user_id, *missing],
            )]
            out.update(i for _, i in rows)
            self.put_links(user_id, missing, rows)
        return out

    def _read_all(self, conn: Connection, user_id: str) -> None:
        """Every (key, fact id) link of the user when there are at most :data:`LINKS_ALL`
        (then complete: a key not held links nothing); else nothing (keys read one by
        one)."""
        rows = conn.execute(
            "SELECT e.key, fe.fact_id FROM entities e JOIN fact_entities fe"
            " ON fe.entity_id = e.id WHERE e.user_id = ? LIMIT ?", (user_id, LINKS_ALL + 1),
        ).fetchall()
        complete = len(rows) <= LINKS_ALL and len(self._keys) + len(rows) <= CACHE_ENTRIES
        if complete:
            found: dict[str, set[int]] = {}
            for key, fact_id in rows:
                found.setdefault(key, set()).add(fact_id)
            self._keys.update(((user_id, k), frozenset(v)) for k, v in found.items())
        self._complete[user_id] = complete

    def candidates(self, key: Hashable, read: Callable[[], list[Fact]]) -> list[Fact]:
        """What ``read`` (``read.entity_candidates`` for one set of ids, scope and limit,
        named by ``key``) returned earlier in this generation, else its answer now."""
        found = self._candidates.get(key)
        if found is None:
            if len(self._candidates) >= CACHE_ENTRIES:
                self._candidates.clear()
            found = self._candidates[key] = read()
        return list(found)

    def names(self, conn: Connection, ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        """The entity names of the facts ``ids``, each fact's in entity id order (what
        ``read.with_entities`` selects)."""
        out: dict[int, tuple[str, ...]] = {}
        missing = []
        for fact_id in dict.fromkeys(ids):
            hit = self._names.get(fact_id)
            if hit is None:
                missing.append(fact_id)
            else:
                out[fact_id] = hit
        if missing:
            found: dict[int, list[str]] = {i: [] for i in missing}
            for fact_id, name in conn.execute(
                "SELECT fe.fact_id, e.name FROM fact_entities fe JOIN entities e"
                f" ON e.id = fe.entity_id WHERE fe.fact_id IN ({_marks(len(missing))})"
                " ORDER BY e.id", missing,
            ):
                found[fact_id].append(name)
            if len(self._names) + len(found) > CACHE_ENTRIES:
                self._names.clear()
            got = {i: tuple(v) for i, v in found.items()}
            self._names.update(got)
            out.update(got)
        return out

    def latest(self, conn: Connection, user_id: str, sql: str) -> float | None:
        """The user's latest fact time (``sql`` selects it for one user id)."""
        if user_id not in self._latest:
            row = conn.execute(sql, (user_id,)).fetchone()
            self._latest[user_id] = (float(row[0]) if row and row[0] is not None
                                     else None)
        return self._latest[user_id]

