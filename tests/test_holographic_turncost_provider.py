"""Turn cost (issue 12) at the provider: what a turn's sync leaves for later, and that
nothing is lost (real provider, real SQLite files under a temporary home)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryport.providers.holographic import HolographicProvider
from memoryport.providers.holographic import provider as module


def _provider(home: Path) -> HolographicProvider:
    provider = HolographicProvider()
    provider.initialize("s1", home=str(home))
    return provider


def _count(provider: HolographicProvider, fact_id: int) -> int:
    store = provider.store
    assert store is not None
    fact = store.get(fact_id)
    assert fact is not None
    return fact.retrieval_count


def test_retrieval_counts_wait_for_a_batch_or_a_fact_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn that states no fact leaves the counts of what recall found in memory (no
    write transaction per turn) until RETRIEVALS_BATCH ids wait; a turn that states a
    fact writes them with it; shutdown writes the rest."""
    monkeypatch.setattr(module, "RETRIEVALS_BATCH", 5)
    provider = _provider(tmp_path)
    provider.sync_turn("I live in Lisbon.", "ok", session_id="s1")
    assert provider.store is not None
    fact_id = provider.store.list_facts()[0].id
    for n in range(4):
        assert "Lisbon" in provider.prefetch(f"where do I live ({n})", session_id="s1")
        provider.sync_turn(f"thanks ({n})", "you are welcome", session_id="s1")
    assert _count(provider, fact_id) == 0  # 4 waiting, the batch is 5
    provider.prefetch("where do I live (4)", session_id="s1")
    provider.sync_turn("thanks (4)", "you are welcome", session_id="s1")
    assert _count(provider, fact_id) == 5
    provider.prefetch("where do I live (5)", session_id="s1")
    provider.sync_turn("My cat is called Miso.", "nice", session_id="s1")  # a fact: now
    assert _count(provider, fact_id) == 6
    provider.prefetch("where do I live (6)", session_id="s1")
    provider.shutdown()
    again = _provider(tmp_path)
    try:
        assert _count(again, fact_id) == 7
    finally:
        again.shutdown()


def test_retrieval_counts_do_not_wait_longer_than_their_age(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts older than RETRIEVALS_AGE are written by the next turn, batch or not."""
    monkeypatch.setattr(module, "RETRIEVALS_AGE", 0.0)
    provider = _provider(tmp_path)
    try:
        provider.sync_turn("I live in Lisbon.", "ok", session_id="s1")
        assert provider.store is not None
        fact_id = provider.store.list_facts()[0].id
        provider.prefetch("where do I live", session_id="s1")
        provider.sync_turn("thanks", "you are welcome", session_id="s1")
        assert _count(provider, fact_id) == 1
    finally:
        provider.shutdown()


@pytest.mark.parametrize("kept", [4096, 1], ids=["default", "one-content"])
def test_fact_search_scores_each_fact_on_its_current_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int) -> None:
    """Fact search keeps the word sets of the contents it scored (bounded): a fact
    updated to other words is scored on the new ones, and a cache of one content ranks
    as the default one does."""
    from memoryport.storage.facts import read
    from memoryport.storage.facts.records import FactInput
    from memoryport.storage.facts.store import FactStore

    monkeypatch.setattr(read, "CONTENT_WORDS", kept)
    monkeypatch.setattr(read, "_CONTENT_WORDS", {})
    store = FactStore(tmp_path / "facts.db")
    try:
        tea = store.add(FactInput("Alice drinks green tea every morning")).fact
        store.add(FactInput("Bob drinks black coffee every morning"))
        store.add(FactInput("Alice plays the cello on Sundays"))
        first = [(f.content, round(f.score, 6)) for f in store.search("what does Alice drink")]
        assert first[0][0] == "Alice drinks green tea every morning"
        assert first == [(f.content, round(f.score, 6))
                         for f in store.search("what does Alice drink")]  # from the cache
        store.update(tea.id, content="Alice drinks mint tea after lunch")
        assert store.search("mint tea after lunch")[0].content == (
            "Alice drinks mint tea after lunch")
        again = {f.content: f.score for f in store.search("what does Alice drink every morning")}
        assert "Alice drinks green tea every morning" not in again
        assert again["Bob drinks black coffee every morning"] > again.get(
            "Alice drinks mint tea after lunch", 0.0)
    finally:
        store.close()
