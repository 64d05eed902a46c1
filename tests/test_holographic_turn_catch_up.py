"""The turn index's catch-up done ahead (``TurnIndex.catch_up``, which the holographic
provider's ``sync_turn`` calls right after storing a turn) leaves searches exact: the same
hits as a fresh index reading the same file, whoever wrote the turns, and the next search
has nothing left to read."""

from __future__ import annotations

import random
from pathlib import Path

from memoryport.providers.holographic import HolographicProvider
from memoryport.storage.turns import TurnHit, TurnIndex, TurnInput

WORDS = ("sqlite", "schema", "tea", "deadline", "pottery", "paris", "museum", "guitar",
         "budget", "lunch", "garden", "concert")
START = 1_700_000_000.0


def _turns(rng: random.Random, n: int, user: str | None, at: float) -> list[TurnInput]:
    return [TurnInput(f"s{rng.randint(1, 3)}", rng.choice(("Alice", "Bob")),
                      " ".join(rng.sample(WORDS, rng.randint(2, 5))), at + i, "", user)
            for i in range(n)]


def _key(hits: list[TurnHit]) -> list[tuple[int, float, str]]:
    return [(h.turn_id, h.score, h.text) for h in hits]


def _cold(path: Path, query: str, user: str | None) -> list[tuple[int, float, str]]:
    with TurnIndex(path, dense=False) as fresh:
        return _key(fresh.search(query, limit=12, user_id=user))


def test_catch_up_ahead_keeps_searches_exact(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(11)
    warm, other = TurnIndex(path, dense=False), TurnIndex(path, dense=False)
    try:
        warm.catch_up()  # nothing stored, nothing searched yet
        warm.add_turns(_turns(rng, 40, None, START))
        for step in range(12):
            query = " ".join(rng.sample(WORDS, 3))
            assert _key(warm.search(query, limit=12)) == _cold(path, query, None)
            writer = other if step % 4 == 3 else warm  # sometimes another index writes
            user = "u2" if step == 7 else None
            writer.add_turns(_turns(rng, rng.randint(1, 3), user, START + 100 * step))
            if step % 3:  # and sometimes the next search catches up itself
                warm.catch_up()
                assert warm._cache.seen == warm._conn.execute(
                    "SELECT max(id) FROM turns").fetchone()[0]
        query = " ".join(rng.sample(WORDS, 3))
        for user in (None, "u2"):
            assert _key(warm.search(query, limit=12, user_id=user)) == _cold(path, query, user)
    finally:
        warm.close()
        other.close()


def test_sync_turn_catches_the_turn_index_up(tmp_path: Path) -> None:
    provider = HolographicProvider()
    provider.initialize("s1", home=tmp_path)
    try:
        turns = provider.turns
        assert turns is not None
        provider.sync_turn("We planned the sqlite schema", "Noted: the sqlite schema")
        provider.prefetch("what about the sqlite schema?")  # a search: the cache is warm
        provider.sync_turn("The sqlite schema has three tables", "Three tables, noted")
        top = turns._conn.execute("SELECT max(id) FROM turns").fetchone()[0]
        assert turns._cache.seen == top  # read by the sync, not left to the next recall
        text = provider.prefetch("how many tables does the sqlite schema have?")
        assert "three tables" in text
    finally:
        provider.shutdown()
