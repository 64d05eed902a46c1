"""The session_search tool through the built-in sessions provider."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryport.provider import is_builtin
from memoryport.providers.sessions import SessionSearchProvider, create_sessions_provider
from memoryport.storage.sessions.base import SessionStore
from memoryport.types import SessionContext


def _call(provider: SessionSearchProvider, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(provider.handle_tool_call("session_search", args))
    return result


def _conversation(store: SessionStore, sid: str, texts: list[str], **kw: Any) -> list[int]:
    store.create_session(sid, **kw)
    roles = ["user", "assistant"]
    return store.append_messages(
        sid, [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    )


@pytest.fixture
def provider(store: SessionStore) -> SessionSearchProvider:
    p = create_sessions_provider(store)
    p.initialize("live", user_id="")
    return p


def test_identity_and_schema(provider: SessionSearchProvider) -> None:
    assert provider.name == "sessions" and is_builtin(provider) and provider.is_available()
    [schema] = provider.get_tool_schemas()
    assert schema["name"] == "session_search" and schema["parameters"]["required"] == []


def test_browse_lists_recent_sessions_one_per_lineage(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "old", ["first question about llamas", "answer"], title="Llamas")
    _conversation(store, "old-2", ["continued"], parent_session_id="old")
    _conversation(store, "live", ["the current chat"])
    _conversation(store, "tooly", ["tool noise"], source="tool")
    result = _call(provider)
    assert result["mode"] == "browse" and result["success"]
    assert [r["session_id"] for r in result["results"]] == ["old-2"]
    assert {"title", "source", "started_at", "last_active", "message_count", "preview"} <= set(
        result["results"][0]
    )


def test_discover_shape_dedupes_lineage_and_skips_current(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    ids = _conversation(store, "a", [f"filler {i}" for i in range(10)] + ["pelican talk"] * 2)
    _conversation(store, "a-child", ["more pelican talk"], parent_session_id="a")
    _conversation(store, "b", ["a pelican elsewhere"], model="gpt-x", source="telegram")
    _conversation(store, "live", ["pelican in the live chat"])
    result = _call(provider, query="pelican", limit=5)
    assert result["mode"] == "discover" and result["count"] == 2
    sessions = [r["session_id"] for r in result["results"]]
    assert "live" not in sessions and len({("a" in s) for s in sessions}) == 2
    entry = next(r for r in result["results"] if r["session_id"].startswith("a"))
    keys = {
        "session_id",
        "title",
        "when",
        "source",
        "model",
        "matched_role",
        "match_message_id",
        "snippet",
        "bookend_start",
        "messages",
        "bookend_end",
        "messages_before",
        "messages_after",
    }
    assert keys <= set(entry)
    assert ">>>" in entry["snippet"]
    anchors = [m for m in entry["messages"] if m.get("anchor")]
    assert [m["id"] for m in anchors] == [entry["match_message_id"]]
    if entry["session_id"] == "a":
        assert entry["bookend_start"][0]["id"] == ids[0]
    other = next(r for r in result["results"] if r["session_id"] == "b")
    assert other["model"] == "gpt-x" and other["source"] == "telegram"


def test_discover_punctuation_and_no_results_message(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "x", ["what's the user's #tag? see a/b @name"])
    for query in ["user's", "what?", "a/b", "#tag", "@name"]:
        assert _call(provider, query=query)["count"] == 1, query
    empty = _call(provider, query="nonexistentword")
    assert empty["count"] == 0 and empty["message"]
    star = _call(provider, query="*")
    assert star["success"] and "no searchable words" in star["message"]


def test_discover_cjk_short_and_long(store: SessionStore, provider: SessionSearchProvider) -> None:
    _conversation(store, "jp", ["東京タワーに行きました"])
    assert _call(provider, query="東京タワー")["search_plan"] == "trigram"
    short = _call(provider, query="東京")
    assert short["search_plan"] == "like" and short["count"] == 1


def test_scroll_window_clamped_and_rebinds_to_child(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    ids = _conversation(store, "p", [f"line {i}" for i in range(50)])
    child_ids = _conversation(store, "p-c", [f"child {i}" for i in range(5)], parent_session_id="p")
    result = _call(provider, session_id="p", around_message_id=ids[25], window=100)
    assert result["mode"] == "scroll" and result["window"] == 20
    assert len(result["messages"]) == 41 and result["messages_before"] == 5
    small = _call(provider, session_id="p", around_message_id=ids[25], window=0)
    assert small["window"] == 1 and len(small["messages"]) == 3
    rebound = _call(provider, session_id="p", around_message_id=child_ids[2])
    assert rebound["session_id"] == "p-c" and "warning" in rebound


def test_scroll_refuses_current_lineage(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    ids = _conversation(store, "root", ["earlier context"])
    _conversation(store, "live", ["now"], parent_session_id="root")
    result = _call(provider, session_id="root", around_message_id=ids[0])
    assert result["success"] is False and "current conversation" in result["error"]
    # the live session comes with each call's context (the manager passes it)
    elsewhere = SessionContext(session_id="elsewhere")
    args = {"session_id": "root", "around_message_id": ids[0]}
    assert json.loads(provider.handle_tool_call("session_search", args, context=elsewhere))[
        "success"
    ]


def test_scroll_rejects_a_message_from_an_unrelated_session(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "one", ["x"])
    other = _conversation(store, "two", ["y"])
    result = _call(provider, session_id="one", around_message_id=other[0])
    assert result["success"] is False and "not in session" in result["error"]


def test_read_mode(store: SessionStore, provider: SessionSearchProvider) -> None:
    _conversation(store, "long", [f"m{i}" for i in range(40)])
    result = _call(provider, session_id="long")
    assert result["mode"] == "read" and len(result["messages"]) == 30 and result["truncated"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"session_id": "missing", "around_message_id": 1}, "unknown session"),
        ({"around_message_id": 3}, "needs session_id"),
        ({"query": "x", "sort": "sideways"}, "sort must be"),
        ({"query": "x", "limit": "many"}, "must be an integer"),
        ({"bogus": 1}, "unknown argument"),
    ],
)
def test_errors_come_back_as_json(
    provider: SessionSearchProvider, args: dict[str, Any], fragment: str
) -> None:
    result = _call(provider, **args)
    assert result["success"] is False and fragment in result["error"]


def test_database_unavailable_is_a_formatted_error(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    store.close()
    for args in ({}, {"query": "x"}, {"session_id": "s", "around_message_id": 1}):
        result = _call(provider, **args)
        assert result["success"] is False and "unavailable" in result["error"]


def test_user_scoping_through_initialize(store: SessionStore) -> None:
    _conversation(store, "mine", ["shared topic mine"], user_id="alice")
    _conversation(store, "theirs", ["shared topic theirs"], user_id="bob")
    provider = create_sessions_provider(store)
    provider.initialize("live", user_id="alice")
    found = _call(provider, query="shared topic")
    assert [r["session_id"] for r in found["results"]] == ["mine"]
    assert [r["session_id"] for r in _call(provider)["results"]] == ["mine"]
    blocked = _call(provider, session_id="theirs", around_message_id=1)
    assert blocked["success"] is False


def test_unknown_tool_name(provider: SessionSearchProvider) -> None:
    assert json.loads(provider.handle_tool_call("other", {}))["success"] is False


def test_discover_pages_past_one_busy_session(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "quiet", ["a single heron sighting"])
    _conversation(store, "busy", ["heron again"] * 60)
    result = _call(provider, query="heron", limit=2, sort="newest")
    assert [r["session_id"] for r in result["results"]] == ["busy", "quiet"]
    assert result["messages_scanned"] > 12


def test_live_session_comes_from_the_call_not_a_stale_switch(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    """A search right after a switch (delivered later, in the background) skips the new
    live lineage given with the call, and no longer skips the old one."""
    _conversation(store, "live", ["osprey in the old chat"])
    _conversation(store, "new-live", ["osprey in the new chat"])
    _conversation(store, "past", ["an osprey long ago"])
    raw = provider.handle_tool_call("session_search", {"query": "osprey"}, session_id="new-live")
    found = {r["session_id"] for r in json.loads(raw)["results"]}
    assert found == {"live", "past"}
    fallback = {r["session_id"] for r in _call(provider, query="osprey")["results"]}
    assert fallback == {"new-live", "past"}
    blank = provider.handle_tool_call("session_search", {"query": "osprey"}, session_id="")
    assert {r["session_id"] for r in json.loads(blank)["results"]} == {"new-live", "past"}


def test_discover_ranks_cron_sessions_below_interactive_ones(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "nightly", ["kestrel report kestrel kestrel"], source="cron")
    _conversation(store, "chat", ["we talked about a kestrel once, among many other things"])
    result = _call(provider, query="kestrel", limit=5)
    assert [r["session_id"] for r in result["results"]] == ["chat", "nightly"]
    only_cron = _call(provider, query="report", limit=5)
    assert [r["session_id"] for r in only_cron["results"]] == ["nightly"]


def test_discover_puts_an_exact_title_match_first(
    make_store: Any, store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "t", ["opening line", "reply"], title="Garden Plans", user_id="u1")
    _conversation(store, "m", ["my garden plans are growing"] * 2, user_id="u1")
    _conversation(store, "other-user", ["x"], title="garden plans", user_id="u2")
    _conversation(store, "hidden", ["y"], title="Garden plans", source="subagent", user_id="u1")
    same_db = {"path": store.path} if hasattr(store, "path") else store.reopen_kwargs  # type: ignore[attr-defined]
    scoped = create_sessions_provider(make_store(user_id="u1", **same_db))
    scoped.initialize("live", user_id="u1")
    result = _call(scoped, query="  garden PLANS ", limit=3)
    first = result["results"][0]
    assert first["session_id"] == "t" and first["matched_role"] == "session_title"
    assert first["snippet"] == ">>>Garden Plans<<<" and first["title"] == "Garden Plans"
    assert [m["content"] for m in first["messages"]] == ["opening line", "reply"]
    assert (
        first["messages"][0]["anchor"] and first["match_message_id"] == first["messages"][0]["id"]
    )
    sessions = [r["session_id"] for r in result["results"]]
    assert sessions == ["t", "m"]  # hidden source and another user's session never appear
    assert result["results"][1]["matched_role"] in ("user", "assistant")
    assert ">>>" in result["results"][1]["snippet"]  # snippets computed for returned hits
    assert _call(scoped, query="garden plans", limit=1)["count"] == 1


def test_title_match_skips_the_current_conversation_and_dedupes_lineage(
    store: SessionStore, provider: SessionSearchProvider
) -> None:
    _conversation(store, "live", ["zebra chat"], title="Zebra")
    _conversation(store, "old", ["zebra facts", "more"], title="Zebra")
    _conversation(store, "old-2", ["zebra continued"], parent_session_id="old")
    _conversation(store, "empty", [], title="Okapi")
    result = _call(provider, query="zebra", limit=5)
    assert [(r["session_id"], r["matched_role"]) for r in result["results"]] == [
        ("old", "session_title")
    ]
    empty = _call(provider, query="okapi")["results"]
    assert empty[0]["matched_role"] == "session_title" and empty[0]["messages"] == []
