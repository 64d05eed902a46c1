"""Property tests over ``Memory`` turn inputs (hypothesis).

Any user content (strings with lone surrogates, lists of any JSON-ish parts, and shapes
that are not content at all), any tool calls (names, JSON-ish arguments, ids) and any final
answer: the only exception is the documented ``TypeError`` for content that is neither a
string nor a list of part dicts (and then nothing is counted or stored); otherwise the turn
is stored whole, as valid UTF-8, and replays as a valid chat-completions request.
Run with ``--hypothesis-show-statistics`` to see how many cases ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_support import make_memory, recorder
from chat_rules import request_problems
from memoryport.api import Memory

TEXT = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=40)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
PART = st.dictionaries(TEXT, JSONISH, max_size=3) | st.fixed_dictionaries(
    {"type": st.just("text"), "text": TEXT}
)
USER_CONTENT = st.one_of(TEXT, st.lists(PART, max_size=3), JSONISH)
MEMORY_ARGS = st.fixed_dictionaries(
    {"action": st.sampled_from(["add", "replace", "remove", "list", "bogus"]),
     "target": st.sampled_from(["memory", "user", "nope"])},
    optional={"content": TEXT, "old_text": TEXT},
)
TOOL_CALL = st.tuples(
    st.sampled_from(["memory", "session_search", "no_such_tool"]) | TEXT,
    JSONISH | MEMORY_ARGS | st.fixed_dictionaries({"query": TEXT}),
    st.none() | TEXT,
)
SETTINGS = settings(
    max_examples=400, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    memory = make_memory(tmp_path, [recorder()])
    memory.start_session()
    yield memory
    memory.close()


def is_content(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(p, dict) for p in value)
    )


def stored_count(memory: Memory) -> int:
    try:
        return len(memory.sessions.get_messages(memory.session_id))
    except Exception:  # the session is not stored before its first message
        return 0


def utf8_ok(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@SETTINGS
@given(
    content=USER_CONTENT,
    calls=st.lists(TOOL_CALL, max_size=3),
    final=st.none() | TEXT,
    interrupted=st.booleans(),
)
def test_any_turn_is_stored_whole_or_refused_with_a_type_error(
    memory: Memory, content: Any, calls: list[tuple[Any, Any, Any]], final: str | None,
    interrupted: bool,
) -> None:
    before, number = stored_count(memory), memory._turn_number
    if not is_content(content):
        with pytest.raises(TypeError):
            memory.begin_turn(content)
        assert stored_count(memory) == before and memory._turn_number == number
        return
    turn = memory.begin_turn(content)
    for name, args, call_id in calls:
        result = turn.handle_tool_call(name, args, tool_call_id=call_id or "")
        assert isinstance(result, str) and isinstance(json.loads(result), dict)
    memory.end_turn(turn, final, interrupted=interrupted)
    assert turn.closed and utf8_ok(turn.messages)
    stored = memory.sessions.get_messages(memory.session_id)
    assert len(stored) == before + len(turn.messages)  # the whole turn, nothing else
    mine = stored[before:]
    assert [m.role for m in mine] == [m["role"] for m in turn.messages]
    replay = [{"role": "user", "content": "start"}]
    for record in mine:
        message: dict[str, Any] = {"role": record.role, "content": record.content}
        if record.tool_calls:
            message["tool_calls"] = record.tool_calls
        if record.tool_call_id:
            message["tool_call_id"] = record.tool_call_id
        replay.append(message)
    assert request_problems(replay) == []


@SETTINGS
@given(args=JSONISH | MEMORY_ARGS, name=TEXT | st.just("memory"))
def test_call_tool_outside_a_turn_always_answers_json(
    memory: Memory, args: Any, name: str
) -> None:
    before = stored_count(memory)
    result = memory.call_tool(name, args)
    assert isinstance(json.loads(result), dict)
    assert stored_count(memory) == before  # a tool call outside a turn stores no message
