"""Time hints in queries (named dates, "when" intent) and the re-rank over BM25 candidates."""

from __future__ import annotations

import time

from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.temporal import (
    REPORT_LAG_DAYS,
    TimeHint,
    has_temporal_expression,
    rerank,
    time_hint,
)

DAY = 86400.0


def _local(year: int, month: int, day: int) -> float:
    return time.mktime((year, month, day, 0, 0, 0, 0, 0, -1))


def test_named_dates_become_windows() -> None:
    ((lo, hi),) = time_hint("What did Andrew do on the Monday before July 24, 2023?").windows
    assert lo == _local(2023, 7, 16)  # the Monday itself (17 July), one day before
    assert hi == _local(2023, 7, 18) + REPORT_LAG_DAYS * DAY
    for query in (
        "what happened on 24 July 2023",
        "notes from 2023-07-24",
        "the 24th of Jul 2023",
    ):
        hint = time_hint(query)
        assert len(hint.windows) == 1, query
        lo, hi = hint.windows[0]
        assert lo == _local(2023, 7, 23)
        assert hi == _local(2023, 7, 25) + REPORT_LAG_DAYS * DAY


def test_month_window_and_no_false_dates() -> None:
    ((lo, hi),) = time_hint("what did we plan in May 2023").windows
    assert lo == _local(2023, 4, 30) and hi == _local(2023, 6, 1) + REPORT_LAG_DAYS * DAY
    assert not time_hint("I may 2023 things").windows  # lower-case "may" is the verb
    assert not time_hint("docker compose 2023 release").windows
    assert not time_hint("2023-13-45").windows


def test_temporal_intent() -> None:
    assert time_hint("When did James meet Samantha?").intent
    assert time_hint("how long has she been painting").intent
    assert not time_hint("what did James adopt").intent
    assert not time_hint("docker compose")
    assert has_temporal_expression("Yesterday I took my dogs to the beach")
    assert has_temporal_expression("see you on 12/05")
    assert not has_temporal_expression("I took my dogs to the beach")


def test_rerank_boosts_window_and_keeps_bm25_order_otherwise() -> None:
    t = _local(2023, 7, 26)
    candidates = [(1, 10.0, t - 90 * DAY, "a"), (2, 9.0, t - 60 * DAY, "b"), (3, 8.0, t, "c")]
    hint = TimeHint(((_local(2023, 7, 23), _local(2023, 8, 8)),), False)
    assert [i for i, _ in rerank(candidates, hint)] == [3, 1, 2]
    assert [i for i, _ in rerank(candidates, TimeHint((), True))] == [1, 2, 3]
    assert rerank([], hint) == []


def test_dated_query_prefers_messages_from_that_time(store: SessionStore) -> None:
    old = store.create_session(started_at=_local(2023, 1, 10))
    new = store.create_session(started_at=_local(2023, 7, 25))
    stale = "we went hiking in the hills, hiking all day"
    fresh = "we went hiking in the hills last weekend"
    filler = store.create_session(started_at=_local(2022, 1, 1))
    store.append_messages(filler.id, [{"role": "user", "content": f"note {i}"} for i in range(8)])
    store.append_messages(old.id, [{"role": "user", "content": stale, "timestamp": old.started_at}])
    store.append_messages(new.id, [{"role": "user", "content": fresh, "timestamp": new.started_at}])
    dated = store.search_messages("hiking on July 22, 2023", limit=5)
    assert [h.message.content for h in dated.hits] == [fresh, stale]
    assert dated.hits[0].score > dated.hits[1].score
    paged = store.search_messages("hiking on July 22, 2023", limit=1, offset=1)
    assert [h.message.content for h in paged.hits] == [stale]


def test_when_question_prefers_messages_with_a_time(store: SessionStore) -> None:
    session = store.create_session()
    texts = [
        "James met Samantha at the park",
        "yesterday James met Samantha at the big park",
        *(f"unrelated note {i}" for i in range(8)),
    ]
    store.append_messages(session.id, [{"role": "user", "content": t} for t in texts])
    when = store.search_messages("When did James meet Samantha?", limit=5)
    assert when.hits[0].message.content == texts[1]
