"""The turn index's per-search savings stay exact (real SQLite files): the row cache's
one-statement catch-up, and the one-user check it remembers (a search of a store whose
turns are all in the searched scope ranks by the word index alone and skips the check
while every turn stored since is in that scope), whoever adds turns of another user."""

from __future__ import annotations

import random
from pathlib import Path

from memoryport.storage.turns import TurnHit, TurnIndex, TurnInput
from memoryport.storage.turns.rowcache import CATCH_UP_MAX

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


def _same(warm: TurnIndex, path: Path, rng: random.Random, users: tuple[str | None, ...]
          ) -> None:
    for user in users:
        query = " ".join(rng.sample(WORDS, 3))
        assert _key(warm.search(query, limit=12, user_id=user)) == _cold(path, query, user)


def test_a_second_user_arriving_ends_the_one_user_ranking(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(3)
    warm, other = TurnIndex(path, dense=False), TurnIndex(path, dense=False)
    try:
        warm.add_turns(_turns(rng, 30, None, START))
        _same(warm, path, rng, (None,))
        assert warm._cache.single == ""  # one user: checked once, remembered
        warm.add_turns(_turns(rng, 3, None, START + 100))
        _same(warm, path, rng, (None,))
        assert warm._cache.single == ""
        other.add_turns(_turns(rng, 5, "u2", START + 200))  # another user, another index
        _same(warm, path, rng, (None, "u2"))
        assert warm._cache.single is None
        warm.add_turns(_turns(rng, 4, None, START + 300))
        _same(warm, path, rng, (None, "u2", "u3"))
    finally:
        warm.close()
        other.close()


def test_a_bulk_import_of_another_user_is_not_taken_for_one_user(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    rng = random.Random(4)
    warm, other = TurnIndex(path, dense=False), TurnIndex(path, dense=False)
    try:
        warm.add_turns(_turns(rng, 20, None, START))
        _same(warm, path, rng, (None,))
        assert warm._cache.single == ""
        other.add_turns(_turns(rng, CATCH_UP_MAX + 50, "u2", START + 100))
        assert warm._cache.single == ""
        _same(warm, path, rng, (None, "u2"))
        assert warm._cache.single is None
    finally:
        warm.close()
        other.close()

