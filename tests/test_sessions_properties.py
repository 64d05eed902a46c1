"""Property tests: any tool arguments and any raw query string give a typed error or a
JSON result, never an uncaught exception, and never change the store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryport.errors import StoreError
from memoryport.providers.sessions import SessionSearchProvider, create_sessions_provider
from memoryport.providers.sessions.tool import SESSION_SEARCH_SCHEMA
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

CASES = 300
ARGS = sorted(SESSION_SEARCH_SCHEMA["parameters"]["properties"])
QUERY_ALPHABET = st.characters(codec=None, exclude_categories=())  # surrogates included
SYNTAX = st.sampled_from(
    [
        *['"', "(", ")", "*", " AND ", " OR ", " NOT ", "NEAR(", ":", "^", "-", "#", "@", "/"],
        *["?", "'", "\ud800", "\udfff", "\x00", "\u200b", "東京", "%", "_", "\\"],
    ]
)
NESTED = st.integers(min_value=1, max_value=700).map(lambda n: "(" * n + "walrus" + ")" * n)
QUERIES = st.lists(st.one_of(st.text(QUERY_ALPHABET, max_size=8), SYNTAX), max_size=30).map(
    "".join
) | st.text(QUERY_ALPHABET, max_size=200) | NESTED
JSONISH: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | QUERIES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
TOOL_ARGS = st.dictionaries(
    st.sampled_from([*ARGS, "bogus"]) | st.text(max_size=6), JSONISH, max_size=5
) | st.fixed_dictionaries({"query": QUERIES}, optional={a: JSONISH for a in ARGS if a != "query"})


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteSessionStore]:
    store = SQLiteSessionStore(Path(tmp_path_factory.mktemp("props")) / "state.db")
    texts = ["so what? no idea", "an a/b test", "東京タワーに行きました", "ping @name", "walrus"]
    for n in range(4):
        sid = store.create_session(f"s{n}", source="cli", title=f"Title {n}").id
        store.append_messages(
            sid, [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]
        )
    store.create_session("child", source="cli", parent_session_id="s0")
    yield store
    store.close()


def _snapshot(store: SQLiteSessionStore) -> tuple[Any, ...]:
    conn = store.conn
    return (
        conn.execute("SELECT * FROM sessions ORDER BY id").fetchall(),
        conn.execute("SELECT * FROM messages ORDER BY id").fetchall(),
        conn.execute("SELECT * FROM meta ORDER BY key").fetchall(),
        conn.execute("PRAGMA data_version").fetchone(),
    )


def _provider(store: SQLiteSessionStore) -> SessionSearchProvider:
    provider = create_sessions_provider(store)
    provider.initialize("s1")
    return provider


@settings(max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=TOOL_ARGS)
def test_any_tool_arguments_give_json_and_change_nothing(
    seeded: SQLiteSessionStore, args: dict[str, Any]
) -> None:
    before = _snapshot(seeded)
    raw = _provider(seeded).handle_tool_call("session_search", args)
    result = json.loads(raw)
    assert isinstance(result, dict) and isinstance(result.get("success"), bool)
    if not result["success"]:
        assert result["error"] and result["error_type"] not in ("Exception", "RecursionError")
        assert result["error_type"] in {
            "ToolArgumentError",
            "SessionNotFound",
            "StoreError",
            "QueryError",
        }, result
    assert _snapshot(seeded) == before


@settings(max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=QUERIES,
    sort=st.sampled_from(["relevance", "newest", "oldest"]),
    match=st.sampled_from(["auto", "all", "any"]),
)
def test_any_raw_query_returns_hits_or_a_store_error(
    seeded: SQLiteSessionStore, query: str, sort: Any, match: Any
) -> None:
    before = _snapshot(seeded)
    try:
        result = seeded.search_messages(query, sort=sort, match=match, limit=5)
        seeded.snippets_for(query, [h.message.id for h in result.hits])
    except StoreError as exc:
        assert str(exc)
    assert _snapshot(seeded) == before


@pytest.mark.parametrize(
    "args",
    [
        {"query": "walrus", "limit": float("inf")},
        {"query": "walrus", "window": float("nan")},
        {"session_id": "s0", "around_message_id": 2**70},
        {"session_id": "s0", "around_message_id": -(2**63)},
    ],
)
def test_non_finite_and_huge_integers_are_argument_errors(
    seeded: SQLiteSessionStore, args: dict[str, Any]
) -> None:
    """Found by the property test: ``limit=inf`` raised OverflowError from int()."""
    result = json.loads(_provider(seeded).handle_tool_call("session_search", args))
    assert result["success"] is False and result["error_type"] == "ToolArgumentError"
