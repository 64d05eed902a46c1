"""Punctuated queries rank literal matches first; quoted titles are found; the tool says
how it read the query."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.query import parse_query

FILLER = {  # the same words without the punctuation, denser (so BM25 prefers them)
    "what?": "what what",
    "a/b": "b b a",
    "@name": "name name",
    "C#": "c c",
    "#tag": "tag tag",
    "user's": "user user s",
}


@pytest.mark.parametrize("query", sorted(FILLER))
def test_literal_punctuation_matches_rank_first(store: SessionStore, query: str) -> None:
    sid = store.create_session(source="cli").id
    literal = store.append_message(sid, {"role": "user", "content": f"x {query} y z w"})
    # many newer messages with the same words but not the punctuation
    store.append_messages(sid, [{"role": "user", "content": FILLER[query]}] * 40)
    result = store.search_messages(query, limit=5)
    assert result.hits[0].message.id == literal, [h.message.content for h in result.hits]
    assert query.lower() in result.hits[0].message.content.lower()


def test_queries_without_punctuation_or_with_a_question_mark_rank_as_before() -> None:
    assert parse_query("When did Caroline go to the support group?").literals == ()
    assert parse_query("support group").literals == ()
    assert parse_query("what?").literals == ("what?",)
    assert parse_query("what is C#?").literals == ("c#",)
    assert parse_query("walrus NOT a/b").literals == ()


def _call(store: SessionStore, **args: Any) -> dict[str, Any]:
    provider = create_sessions_provider(store)
    provider.initialize("live")
    result: dict[str, Any] = json.loads(provider.handle_tool_call("session_search", args))
    return result


def test_tool_says_how_it_read_the_query(store: SessionStore) -> None:
    sid = store.create_session(source="cli").id
    store.append_message(sid, {"role": "user", "content": "so what? no idea"})
    result = _call(store, query="what?")
    assert result["success"] and result["count"] == 1
    assert "what" in result["query_read_as"] and "'what?'" in result["query_read_as"]
    assert "literally ranked first" in result["query_read_as"]
    assert _call(store, query="walrus")["query_read_as"] == "words: walrus"


@pytest.mark.parametrize(
    "quoted",
    ["`Garden Plans`", "'Garden Plans'", '"Garden Plans"', "```garden plans```", "“Garden Plans”"],
)
def test_discover_finds_a_session_by_its_quoted_title(store: SessionStore, quoted: str) -> None:
    store.create_session("t", source="cli", title="Garden Plans")
    store.append_message("t", {"role": "user", "content": "opening line"})
    result = _call(store, query=quoted)
    assert result["count"] >= 1
    first = result["results"][0]
    assert first["session_id"] == "t" and first["matched_role"] == "session_title"
