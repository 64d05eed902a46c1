"""Odd input at the store's boundary: invalid Unicode text and deeply nested queries."""

from __future__ import annotations

import json

import pytest

from memoryport.errors import StoreError
from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.query import MAX_NESTING, QueryError, parse_query
from memoryport.storage.sessions.records import MessageInput
from memoryport.types import valid_text

LONE = "x \ud800 walrus"


def test_valid_text_replaces_lone_surrogates_and_joins_pairs() -> None:
    assert valid_text(LONE) == "x \ufffd walrus"
    assert valid_text("\udc00") == "\ufffd"
    assert valid_text("\ud83d\ude00 ok") == "\U0001f600 ok"
    assert valid_text("plain ünïcödé 東京") == "plain ünïcödé 東京"


def test_lone_surrogates_are_stored_as_replacement_characters(store: SessionStore) -> None:
    session = store.create_session(
        "s\ud800", source="cli", title="t\udfff", model="m\ud800", metadata={"k": "\ud800"}
    )
    assert session.id == "s\ufffd" and session.title == "t\ufffd"
    assert session.model == "m\ufffd" and session.metadata == {"k": "\ufffd"}
    ids = store.append_messages(
        session.id,
        [
            {"role": "user", "content": LONE, "reasoning": "r\ud800", "extra": "\udc01"},
            MessageInput(
                role="assistant",
                content="fine \udc00",
                tool_name="t\ud800",
                tool_calls=[{"id": "c\ud800", "function": {"name": "f", "arguments": "{}"}}],
            ),
        ],
    )
    one = store.append_message("s\ud800", {"role": "user", "content": "single \ud800"})
    messages = store.get_messages(session.id)
    assert [m.id for m in messages] == [*ids, one]
    assert messages[0].content == "x \ufffd walrus" and messages[0].reasoning == "r\ufffd"
    assert messages[0].metadata == {"extra": "\ufffd"}
    assert messages[1].tool_name == "t\ufffd"
    assert messages[1].tool_calls == [
        {"id": "c\ufffd", "function": {"name": "f", "arguments": "{}"}}
    ]
    assert messages[2].content == "single \ufffd"
    assert [h.message.id for h in store.search_messages("walrus").hits] == [ids[0]]
    assert store.set_title(session.id, "new \ud800 title").title == "new \ufffd title"
    assert [s.id for s in store.sessions_titled("new \ud800 title")] == [session.id]
    assert store.get_session("s\ud800").id == session.id


def test_a_query_with_a_lone_surrogate_searches_instead_of_raising(store: SessionStore) -> None:
    sid = store.create_session(source="cli").id
    store.append_message(sid, {"role": "user", "content": "a walrus"})
    assert len(store.search_messages("walrus \ud800").hits) == 1
    assert store.search_messages("\ud800").hits == []


def test_deeply_nested_parentheses_raise_a_query_error_saying_what_to_do() -> None:
    for depth in (MAX_NESTING + 1, 500, 1000):
        with pytest.raises(QueryError, match="remove some parentheses"):
            parse_query("(" * depth + "walrus" + ")" * depth)
    ok = parse_query("(" * MAX_NESTING + "walrus OR seal" + ")" * MAX_NESTING)
    assert ok.plan() == "fts" and len(ok.terms) == 2


def test_nested_query_is_a_store_error_and_a_json_tool_error(store: SessionStore) -> None:
    sid = store.create_session(source="cli").id
    store.append_message(sid, {"role": "user", "content": "a walrus"})
    query = "(" * 500 + "walrus" + ")" * 500
    with pytest.raises(StoreError, match="nests parentheses"):
        store.search_messages(query)
    provider = create_sessions_provider(store)
    provider.initialize("live")
    result = json.loads(provider.handle_tool_call("session_search", {"query": query}))
    assert result["success"] is False and result["error_type"] == "QueryError"
    assert "remove some parentheses" in result["error"]
