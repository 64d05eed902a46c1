"""Context re-ranking of natural-language relevance searches (SQLite session store).

Each test builds a small real SQLite store where plain BM25 puts one message first and
the context signals (neighbouring messages, the session, the speaker named in the query)
put another first; every hit still matches the query, and one-word and phrase searches
keep exact BM25 order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.storage.sessions.temporal import ContextWeights, TimeHint, context_rerank


@pytest.fixture()
def store(tmp_path: Path) -> SQLiteSessionStore:
    """A fresh store file."""
    opened = SQLiteSessionStore(tmp_path / "state.db")
    yield opened  # type: ignore[misc]
    opened.close()


def _session(store: SQLiteSessionStore, contents: list[str], **meta: str) -> list[int]:
    sid = store.create_session(source="cli").id
    return [
        store.append_message(sid, {"role": "user", "content": text, "metadata": dict(meta)})
        for text in contents
    ]


def _ids(store: SQLiteSessionStore, query: str, **kw: object) -> list[int]:
    return [h.message.id for h in store.search_messages(query, **kw).hits]  # type: ignore[arg-type]


def test_a_message_answering_a_matching_question_ranks_first(store: SQLiteSessionStore) -> None:
    # stored first, so plain BM25 (a tie on "class") would put it first
    (lonely,) = _session(store, ["the class was fun"])[-1:]
    question, answer = _session(store, ["how was the pottery workshop?", "the class was fun"])
    ids = _ids(store, "pottery workshop class")
    assert ids[0] == question
    assert ids.index(answer) < ids.index(lonely)


def test_the_speaker_the_query_names_ranks_first(store: SQLiteSessionStore) -> None:
    (melanie,) = _session(store, ["I painted a sunset by the lake"], speaker="Melanie")
    (caroline,) = _session(store, ["I painted a sunset by the lake"], speaker="Caroline")
    assert _ids(store, "What did Caroline paint at the lake?")[0] == caroline
    assert _ids(store, "What did Melanie paint at the lake?")[0] == melanie


def test_a_session_about_the_topic_lifts_its_messages(store: SQLiteSessionStore) -> None:
    (other,) = _session(store, ["we spoke of hiking and the trail"])[:1]
    topical = _session(
        store,
        ["we spoke of hiking and the trail", "lunch", "a long hiking trip", "more hiking"],
    )
    ids = _ids(store, "hiking trail")
    assert ids.index(topical[0]) < ids.index(other)


def test_every_hit_matches_and_neighbours_out_of_scope_stay_out(
    store: SQLiteSessionStore,
) -> None:
    sid = store.create_session(source="cli").id
    store.append_messages(
        sid,
        [
            {"role": "user", "content": "tell me about the museum trip"},
            {"role": "assistant", "content": "the museum trip was in May"},
            {"role": "user", "content": "and the weather?"},
        ],
    )
    hits = store.search_messages("museum trip weather").hits
    assert {h.message.content for h in hits} == {
        "tell me about the museum trip", "the museum trip was in May", "and the weather?"
    }
    assert all(">>>" in h.snippet for h in hits)
    only_users = store.search_messages("museum trip weather", roles=["user"]).hits
    assert {h.message.role for h in only_users} == {"user"} and len(only_users) == 2


def test_one_word_and_phrase_searches_keep_bm25_order(store: SQLiteSessionStore) -> None:
    (first,) = _session(store, ["class"])
    _session(store, ["pottery class", "pottery pottery"], speaker="Caroline")
    for query in ("class", '"class"'):
        result = store.search_messages(query)
        assert result.hits[0].message.id == first
        assert result.hits[0].score == pytest.approx(
            max(h.score for h in result.hits)
        )


def test_context_rerank_weights_and_ties() -> None:
    rows = [(1, "s", 0.0, "a", None, 2, "user"), (2, "s", 0.0, "b", 1, None, "Ann")]
    scores = {1: 2.0, 2: 1.0}
    plain = ContextWeights(prev=0, next=0, session=0, window=0, event=0, intent=0, speaker=0)
    assert [i for i, _ in context_rerank(rows, scores, TimeHint((), False), query="x",
                                         weights=plain)] == [1, 2]
    named = context_rerank(rows, scores, TimeHint((), False), query="what did ann say")
    assert [i for i, _ in named] == [2, 1]
    with pytest.raises(ValueError, match="weight prev"):
        ContextWeights(prev=-1)
