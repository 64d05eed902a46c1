"""Recall ranking signals of the holographic provider, through the provider's public
recall path (``sync_turn`` then ``recall_items``) on real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryport.providers.holographic import HolographicProvider
from memoryport.storage.turns.rank import asks_for_name, name_stems, query_words

STAMP = 1683590400.0


@pytest.fixture
def provider(tmp_path: Path) -> HolographicProvider:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("holographic:\n  recall_turns: 10\n")
    made = HolographicProvider()
    made.initialize("s1", home=str(home))
    yield made  # type: ignore[misc]
    made.shutdown()


def _say(provider: HolographicProvider, text: str, source: str, speaker: str = "Jon") -> None:
    """One turn in its own session (so no turn is another's neighbour)."""
    provider.sync_turn(text, "", session_id=f"conv-{source}", speaker=speaker, timestamp=STAMP,
                       source_id=source)


def test_a_name_question_prefers_the_turn_that_names_something(
    provider: HolographicProvider,
) -> None:
    """Two turns with the same words but one: the one naming a place ("Rome") comes first
    for "which city", although it was stored later (the tie otherwise goes to the older)."""
    _say(provider, "The trip was great, we saw lakes and ate pasta.", "D1:1")
    _say(provider, "The trip was great, we saw Rome and ate pasta.", "D1:2")
    _facts, hits = provider.recall_items("Which city did Jon see on the trip?")
    assert [h.source_id for h in hits[:2]] == ["D1:2", "D1:1"]


def test_other_questions_do_not_use_the_name_signal(provider: HolographicProvider) -> None:
    _say(provider, "The trip was great, we saw lakes and ate pasta.", "D1:1")
    _say(provider, "The trip was great, we saw Rome and ate pasta.", "D1:2")
    _facts, hits = provider.recall_items("What did Jon eat on the trip?")
    assert [h.source_id for h in hits[:2]] == ["D1:1", "D1:2"]


def test_speaker_names_are_not_answers(provider: HolographicProvider) -> None:
    """A turn that only names the other speaker does not count as naming something."""
    _say(provider, "How was the trip?", "D1:0", speaker="Gina")
    _say(provider, "The trip was great, we saw lakes, buddy.", "D1:1")
    _say(provider, "The trip was great, we saw lakes, Gina.", "D1:2")
    _facts, hits = provider.recall_items("Which city did Jon see on the trip?")
    order = [h.source_id for h in hits]
    assert order.index("D1:1") < order.index("D1:2")


def test_name_rules() -> None:
    assert asks_for_name(query_words("Where has Melanie camped?"))
    assert asks_for_name(query_words("Who supports Caroline?"))
    assert not asks_for_name(query_words("What did Caroline research?"))
    assert name_stems("We went to see Rome.") == {"rome"}
    assert name_stems("Rome was great. Lovely place!") == set()  # sentence starts
    assert name_stems("Thanks, Gina! I'm glad, I said.") == {"gina"}
    assert name_stems("That is Caroline's painting.") == {"caroline"}  # possessive
    assert name_stems("I read “Becoming Nicole” by Amy Nutt.") == {"nicole", "amy", "nutt"}


def test_search_ranks_exactly_as_candidates_and_combine(tmp_path: Path) -> None:
    """The fast path of ``search`` (signals column by column) ranks as the public
    ``candidates`` + ``combine`` do, on turns where every signal fires somewhere."""
    from memoryport.storage.turns import TurnIndex, TurnInput
    from memoryport.storage.turns.rank import combine

    day = 86400.0
    with TurnIndex(tmp_path / "t.db", dense=False) as index:
        for n in range(40):
            index.add_turns([
                TurnInput(f"s{n % 4}", "Ana" if n % 2 else "Ben",
                          f"We hiked near Lisbon on trip {n} with Carla last Friday"
                          if n % 5 == 0 else f"trip note {n}: nothing about hiking",
                          1_680_000_000.0 + n * day, f"D{n}")])
        for query in ("Where did Ana go hiking?", "When was the trip with Carla?",
                      "what did Ben note about the trip in April 2023"):
            rows, parts = index.candidates(query)
            scores = combine(parts, index.weights)
            expected = sorted(range(len(rows)),
                              key=lambda i: (-scores[i], -parts[i].main, rows[i][0]))[:10]
            hits = index.search(query, limit=10)
            assert [h.turn_id for h in hits] == [rows[i][0] for i in expected]
            assert [h.score for h in hits] == [round(scores[i], 6) for i in expected]
