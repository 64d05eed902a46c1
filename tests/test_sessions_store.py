"""The SessionStore contract, run against every backend in conftest.BACKENDS."""

from __future__ import annotations

import io
from typing import Any

import pytest

from memoryport.errors import SessionNotFound, StoreError, ToolArgumentError
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.records import MessageInput

PUNCTUATION = {
    "user's": "the user's favourite colour is teal",
    "what?": "so what? nobody asked",
    "a/b": "we ran an a/b test on the banner",
    "#tag": "filed under #tag for the release",
    "@name": "ping @name about the invoice",
    "chat-send": "the chat-send endpoint returns 502",
}


def _session(store: SessionStore, texts: list[str], **kwargs: Any) -> tuple[str, list[int]]:
    session = store.create_session(**kwargs)
    roles = ["user", "assistant"]
    ids = store.append_messages(
        session.id, [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    )
    return session.id, ids


def _ids(store: SessionStore, query: str, **kwargs: Any) -> list[int]:
    return [h.message.id for h in store.search_messages(query, **kwargs).hits]


def test_append_and_read_back(store: SessionStore) -> None:
    session = store.create_session("s1", source="api", model="m", title="T", metadata={"k": 1})
    first = store.append_message("s1", MessageInput(role="user", content="hello", timestamp=10.0))
    ids = store.append_messages(
        "s1",
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}], "x": 2},
            {"role": "tool", "content": "ok", "tool_name": "shell", "tool_call_id": "c1"},
        ],
    )
    assert ids == [first + 1, first + 2]
    messages = store.get_messages("s1")
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls == [{"id": "c1"}] and messages[1].metadata == {"x": 2}
    assert messages[0].timestamp == 10.0
    again = store.get_session("s1")
    assert again.message_count == 3 and again.tool_call_count == 1
    assert again.metadata == {"k": 1} and session.title == "T"
    assert store.get_message(ids[1]).tool_name == "shell"


def test_unknown_session_raises(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound):
        store.get_session("nope")
    with pytest.raises(SessionNotFound):
        store.append_message("nope", {"role": "user", "content": "x"})
    with pytest.raises(ToolArgumentError):
        store.append_message("nope", {"content": "no role"})


def test_update_end_and_title(store: SessionStore) -> None:
    store.create_session("s1")
    store.set_title("s1", "Renamed")
    store.update_session("s1", input_tokens=5, estimated_cost_usd=0.25)
    ended = store.end_session("s1", end_reason="exit", ended_at=99.0)
    assert (ended.title, ended.input_tokens, ended.ended_at) == ("Renamed", 5, 99.0)
    assert ended.estimated_cost_usd == 0.25 and ended.end_reason == "exit"
    with pytest.raises(ToolArgumentError):
        store.update_session("s1", bogus=1)


@pytest.mark.parametrize("query", sorted(PUNCTUATION))
def test_punctuation_queries_find_their_message(store: SessionStore, query: str) -> None:
    _, ids = _session(store, [*PUNCTUATION.values(), "unrelated filler"])
    expected = ids[list(PUNCTUATION).index(query)]
    assert expected in _ids(store, query)


def test_phrase_boolean_prefix_and_stemming(store: SessionStore) -> None:
    _, ids = _session(
        store,
        ["deploying the blue service", "blue whale facts", "the service is deployed", "red alert"],
    )
    assert _ids(store, '"service blue"') == []
    assert _ids(store, '"the blue service"') == [ids[0]]
    assert set(_ids(store, "blue AND service")) == {ids[0]}
    assert set(_ids(store, "blue NOT whale")) == {ids[0]}
    assert set(_ids(store, "whale OR red")) == {ids[1], ids[3]}
    assert set(_ids(store, "deploy*")) == {ids[0], ids[2]}
    assert set(_ids(store, "deploys")) == {ids[0], ids[2]}


@pytest.mark.parametrize(
    "query", ['"unbalanced', "AND OR", "*", "NEAR(", "content:foo", "foo AND", "(((", "NOT"]
)
def test_malformed_input_never_raises(store: SessionStore, query: str) -> None:
    _session(store, ["foo bar", "and or not near content"])
    result = store.search_messages(query)
    assert result.warnings or result.hits  # rewritten queries say so


def test_malformed_input_still_finds_terms(store: SessionStore) -> None:
    _, ids = _session(store, ["foo bar baz"])
    assert _ids(store, '"foo') == ids
    assert _ids(store, "content:foo") == ids
    assert _ids(store, "foo AND") == ids


def test_empty_query_says_why(store: SessionStore) -> None:
    result = store.search_messages("*")
    assert result.hits == [] and result.plan == "empty" and result.warnings


def test_natural_language_query_ranks_by_bm25(store: SessionStore) -> None:
    _, ids = _session(
        store,
        [
            "Caroline went to the LGBTQ support group yesterday",
            "the weather was nice",
            "a support ticket was filed",
        ],
    )
    hits = _ids(store, "When did Caroline go to the LGBTQ support group?")
    assert hits[0] == ids[0] and ids[2] in hits and ids[1] not in hits


def test_chronological_sorts(store: SessionStore) -> None:
    _, ids = _session(store, [f"alpha note number {i}" for i in range(30)])
    newest = _ids(store, "alpha", sort="newest", limit=5)
    oldest = _ids(store, "alpha", sort="oldest", limit=5)
    assert newest == sorted(ids, reverse=True)[:5]
    assert oldest == ids[:5]
    assert _ids(store, "alpha", sort="newest", limit=5, offset=5) == sorted(ids, reverse=True)[5:10]


def test_chronological_all_terms_falls_back_to_any(store: SessionStore) -> None:
    _, ids = _session(store, ["only apples here", "only pears here"])
    result = store.search_messages("apples pears", sort="newest")
    assert {h.message.id for h in result.hits} == set(ids)
    assert result.warnings


def test_cjk_trigram_and_short_like(store: SessionStore) -> None:
    _, ids = _session(
        store, ["我们明天去东京塔", "東京タワーに行きました", "서울에서 만나요", "tokyo tower"]
    )
    assert _ids(store, "东京塔") == [ids[0]]
    assert store.search_messages("東京タワー").plan == "trigram"
    assert _ids(store, "東京タワー") == [ids[1]]
    short = store.search_messages("東京")
    assert short.plan == "like" and [h.message.id for h in short.hits] == [ids[1]]
    assert ">>>東京<<<" in short.hits[0].snippet
    assert _ids(store, "서울") == [ids[2]]
    assert set(_ids(store, "京")) == {ids[0], ids[1]}


def test_roles_sources_and_hidden_sources(store: SessionStore) -> None:
    _session(store, ["zebra in cli"], source="cli")
    tool_sid, _ = _session(store, ["zebra in tool"], source="tool")
    _session(store, ["zebra in cron"], source="cron")
    default = store.search_messages("zebra").hits
    assert {h.source for h in default} == {"cli", "cron"}
    assert {h.source for h in store.search_messages("zebra", sources=["tool"]).hits} == {"tool"}
    assert len(store.search_messages("zebra", exclude_sources=()).hits) == 3
    assert store.search_messages("zebra", roles=["assistant"]).hits == []
    browse = {s.session.id for s in store.list_sessions()}
    assert tool_sid not in browse and len(browse) == 2


def test_per_user_scoping(make_store: Any) -> None:
    shared = make_store()
    _session(shared, ["secret plan alpha"], user_id="alice")
    bob_sid, _ = _session(shared, ["secret plan beta"], user_id="bob")
    assert {h.message.content for h in shared.search_messages("secret", user_id="alice").hits} == {
        "secret plan alpha"
    }
    assert [s.session.user_id for s in shared.list_sessions(user_id="bob")] == ["bob"]
    with pytest.raises(SessionNotFound):
        shared.get_session(bob_sid, user_id="alice")
    assert len(shared.search_messages("secret").hits) == 2


def test_store_bound_to_user_never_serves_another(make_store: Any, tmp_path: Any) -> None:
    first = make_store()
    _session(first, ["shared words"], user_id="alice")
    _session(first, ["shared words"], user_id="bob")
    bound = make_store(user_id="alice", **_same_db(first))
    assert {h.message.session_id for h in bound.search_messages("shared").hits} == {
        bound.list_sessions()[0].session.id
    }
    assert all(s.session.user_id == "alice" for s in bound.list_sessions())
    with pytest.raises(StoreError):
        bound.search_messages("shared", user_id="bob")
    child = bound.create_session(source="cli")
    assert child.user_id == "alice"


def _same_db(store: SessionStore) -> dict[str, Any]:
    """Constructor kwargs that reopen the same database (per backend)."""
    path = getattr(store, "path", None)
    if path is not None:
        return {"path": path}
    return dict(getattr(store, "reopen_kwargs", {}))


def test_lineage(store: SessionStore) -> None:
    root = store.create_session("root")
    child = store.create_session("child", parent_session_id=root.id)
    grandchild = store.create_session("grand", parent_session_id=child.id)
    other = store.create_session("other")
    roots = store.lineage_roots(["grand", "child", "other", "missing"])
    assert roots == {"grand": "root", "child": "root", "other": "other"}
    assert store.lineage("child") == ["root", "child", "grand"]
    assert [s.id for s in store.children("root")] == ["child"]
    assert grandchild.parent_session_id == "child" and other.parent_session_id is None
    with pytest.raises(SessionNotFound):
        store.create_session(parent_session_id="missing")


def test_windows_and_bookends(store: SessionStore) -> None:
    _, ids = _session(store, [f"line {i}" for i in range(20)])
    _session(store, ["other session"])
    views = store.windows([ids[10], ids[0], ids[19]], window=2, bookend=3)
    mid = views[ids[10]]
    assert [m.id for m in mid.messages] == ids[8:13]
    assert [m.id for m in mid.bookend_start] == ids[0:3]
    assert [m.id for m in mid.bookend_end] == ids[17:20]
    assert (mid.messages_before, mid.messages_after) == (5, 4)
    start = views[ids[0]]
    assert [m.id for m in start.messages] == ids[0:3] and start.bookend_start == []
    assert [m.id for m in start.bookend_end] == ids[17:20] and start.messages_after == 14
    end = views[ids[19]]
    assert [m.id for m in end.messages] == ids[17:20] and end.bookend_end == []
    assert store.window(ids[5], window=1).messages_before == 4
    with pytest.raises(StoreError):
        store.window(10**9)


def test_forget_message_session_user_leave_no_trace(store: SessionStore) -> None:
    sid, ids = _session(store, ["xylophonist one", "東京タワー xylophonist", "keep this"])
    store.forget_message(ids[0])
    assert _ids(store, "xylophonist") == [ids[1]]
    store.forget_session(sid)
    for query in ("xylophonist", "東京タワー", "東京", "keep"):
        assert _ids(store, query) == []
    _session(store, ["quokka forever", "クオッカ大好きです"], user_id="carol")
    _session(store, ["quokka too"], user_id="dave")
    store.forget_user("carol")
    assert [h.message.content for h in store.search_messages("quokka").hits] == ["quokka too"]
    assert _ids(store, "クオッカ") == [] and _ids(store, "クオッカ大好き") == []
    store.check_index()
    store.rebuild_index()
    store.check_index()
    assert _ids(store, "xylophonist") == []


def test_forget_session_reparents_children(store: SessionStore) -> None:
    store.create_session("a")
    store.create_session("b", parent_session_id="a")
    store.create_session("c", parent_session_id="b")
    store.forget_session("b")
    assert store.get_session("c").parent_session_id == "a"


def test_export_import_round_trip(make_store: Any) -> None:
    source = make_store()
    parent = source.create_session("p", source="telegram", user_id="u1", title="Hi", started_at=5.0)
    source.append_messages(
        parent.id,
        [
            {
                "role": "user",
                "content": "héllo 東京",
                "timestamp": 6.0,
                "metadata": {"dia": "D1:1"},
            },
            {"role": "assistant", "content": "", "tool_calls": [{"f": 1}], "timestamp": 7.0},
        ],
    )
    source.create_session("c", parent_session_id="p", started_at=8.0)
    source.end_session("p", end_reason="compression", ended_at=9.0)
    out = io.StringIO()
    assert source.export_jsonl(out) == 5  # header, 2 sessions, 2 messages
    target = make_store()
    report = target.import_jsonl(out.getvalue().splitlines())
    assert (report.sessions_imported, report.messages_imported) == (2, 2)
    again = io.StringIO()
    target.export_jsonl(again)
    assert again.getvalue() == out.getvalue()
    assert _ids(target, "héllo") and target.search_messages("東京").hits
    skipped = target.import_jsonl(out.getvalue().splitlines())
    assert skipped.sessions_skipped == 2
    with pytest.raises(StoreError):
        target.import_jsonl(out.getvalue().splitlines(), on_conflict="error")
    with pytest.raises(ToolArgumentError):
        target.import_jsonl(["not json"])


def test_meta_and_schema_version(store: SessionStore) -> None:
    assert store.get_meta("k") is None
    store.set_meta("k", "v1")
    store.set_meta("k", "v2")
    assert store.get_meta("k") == "v2"
    assert store.schema_version() == len(store.applied_migrations()) >= 3


def test_closed_store_is_unavailable(store: SessionStore) -> None:
    store.close()
    store.close()
    with pytest.raises(StoreError, match="unavailable"):
        store.search_messages("anything")


def test_sessions_titled_scopes_and_ignores_case_and_blanks(
    store: SessionStore, make_store: Any
) -> None:
    store.create_session("a", title="Trip to Lisbon", user_id="u1", started_at=1)
    store.create_session("b", title="trip to lisbon", user_id="u2", started_at=2)
    store.create_session("c", title="Trip to Lisbon", source="tool", user_id="u1", started_at=3)
    store.create_session("d", title="Trip to Lisbon and Porto", user_id="u1", started_at=4)
    store.create_session("e", title="", user_id="u1", started_at=5)
    assert [s.id for s in store.sessions_titled(" TRIP to lisbon ")] == ["b", "a"]
    assert [s.id for s in store.sessions_titled("trip to lisbon", user_id="u1")] == ["a"]
    assert [s.id for s in store.sessions_titled("trip to lisbon", exclude_sources=())] == [
        "c",
        "b",
        "a",
    ]
    assert store.sessions_titled("") == [] and store.sessions_titled("   ") == []
    bound = make_store(user_id="u2", **_same_db(store))
    assert [s.id for s in bound.sessions_titled("Trip to Lisbon")] == ["b"]


def test_search_without_snippets_then_snippets_for_the_shown_hits(store: SessionStore) -> None:
    store.create_session("s")
    store.append_messages(
        "s",
        [{"role": "user", "content": f"the heron number {i} by the lake"} for i in range(5)]
        + [{"role": "user", "content": "東京タワーに行きました"}],
    )
    for query in ("heron", "東京タワー", "東京", "heron lake", '"heron number"'):
        full = store.search_messages(query, limit=3)
        bare = store.search_messages(query, limit=3, snippets=False)
        assert [h.message.id for h in bare.hits] == [h.message.id for h in full.hits], query
        assert bare.hits and all(h.snippet == "" for h in bare.hits)
        found = store.snippets_for(query, [h.message.id for h in bare.hits])
        assert found == {h.message.id: h.snippet for h in full.hits}, query
    assert store.snippets_for("*", [1]) == {} and store.snippets_for("heron", []) == {}
