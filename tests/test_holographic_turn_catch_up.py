"""The turn index's catch-up done ahead (``TurnIndex.catch_up``, which the holographic
provider's ``sync_turn`` calls right after storing a turn) leaves searches exact: the same
hits as a fresh index reading the same file, whoever wrote the turns, and the next search
has nothing left to read."""

from __future__ import annotations

import random
from pathlib import Path

from memoryport.providers.holographic import HolographicProvider
from memoryport.storage.turns import TurnIndex
from test_holographic_turncost_index import START, WORDS, _cold, _key, _turns


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
