"""Turns through ``Memory``: valid UTF-8 at the boundary, tool calls recorded so every
stored session replays as a chat-completions request, sessions stored with their first
message, and typed errors for bad turn input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_support import make_agent, make_memory, recorder
from chat_rules import assert_replays, request_problems
from fake_openai import FakeOpenAI, Reply, ToolCall, last_role, mentions
from memoryport.config import AgentSettings
from memoryport.errors import SessionNotFound
from memoryport.turn import NO_RESULT

REPLACED = "\ufffd"


def all_session_ids(memory: object) -> list[str]:
    store = memory.sessions  # type: ignore[attr-defined]
    rows = store.list_sessions(limit=1000, exclude_sources=[])
    return [row.session.id for row in rows]


# --------------------------------------------------------------------------- UTF-8


def test_lone_surrogates_are_replaced_never_dropped(tmp_path: Path) -> None:
    memory = make_memory(tmp_path, [recorder()])
    turn = memory.begin_turn("x \ud800 and a pair \ud83d\ude00")
    add = {"action": "add", "target": "user", "content": "likes \udc80 tea"}
    result = json.loads(turn.handle_tool_call("memory", add, tool_call_id="call_\ud800"))
    assert result["success"] is True, result
    memory.end_turn(turn, "ok \ud800")
    parts = memory.begin_turn([{"type": "text", "text": "part \udfff"}])
    memory.end_turn(parts, "fine")
    stored = memory.sessions.get_messages(memory.session_id)
    contents = [m.content for m in stored]
    assert contents[0] == f"x {REPLACED} and a pair \U0001f600"
    assert contents[-3] == f"ok {REPLACED}" and contents[-2] == f"part {REPLACED}"
    assert f"likes {REPLACED} tea" in json.dumps(stored[1].tool_calls, ensure_ascii=False)
    assert stored[2].tool_call_id == f"call_{REPLACED}"
    assert f"likes {REPLACED} tea" in memory.curated.store.entries("user")  # type: ignore[union-attr]
    assert_replays(memory.sessions, memory.session_id)
    memory.close()


# --------------------------------------------------------------------------- tool calls


def test_readme_snippet_stores_a_replayable_session(tmp_path: Path) -> None:
    memory = make_memory(tmp_path, [recorder()])
    memory.start_session(source="cli")
    turn = memory.begin_turn("What editor do I use?")
    result = turn.handle_tool_call(
        "memory", {"action": "add", "target": "user", "content": "User prefers Helix."},
        tool_call_id="call_1",
    )
    memory.end_turn(turn, "You use Helix.")
    stored = memory.sessions.get_messages(memory.session_id)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    [call] = stored[1].tool_calls or []
    assert call["id"] == "call_1" and call["function"]["name"] == "memory"
    assert json.loads(call["function"]["arguments"])["content"] == "User prefers Helix."
    assert stored[2].tool_call_id == "call_1" and stored[2].content == result
    sent = turn.api_messages(turn.messages)  # the next request, as the README says
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id"} for m in sent)
    assert request_problems([{"role": "system", "content": "s"}, *sent]) == []
    assert_replays(memory.sessions, memory.session_id)
    memory.close()


def test_tool_chains_are_completed_at_end_turn(tmp_path: Path) -> None:
    memory = make_memory(tmp_path, [recorder()])
    turn = memory.begin_turn("search twice")
    calls = [{"id": i, "type": "function",
              "function": {"name": "session_search", "arguments": "{}"}} for i in ("a", "b")]
    turn.add_message({"role": "assistant", "content": "", "tool_calls": calls})
    turn.handle_tool_call("session_search", {"query": "tea"}, tool_call_id="a")
    turn.handle_tool_call("session_search", {"query": "x"}, tool_call_id="c")  # joins a, b
    turn.handle_tool_call("session_search", {"query": "y"})  # no id: one is generated
    assert request_problems(turn.messages) == ["end: tool calls ['b'] have no result"]
    turn.add_message({"role": "tool", "tool_call_id": "orphan", "content": "{}"})
    memory.end_turn(turn, "done")
    stored = memory.sessions.get_messages(memory.session_id)
    by_id = {m.tool_call_id: m.content for m in stored if m.role == "tool"}
    assert by_id["b"] == NO_RESULT  # never answered: an explicit "no result"
    assert {"a", "c", "orphan"} <= set(by_id)
    assert len(by_id) == 5
    assert_replays(memory.sessions, memory.session_id)
    memory.close()


def test_agent_branch_and_compression_sessions_replay(tmp_path: Path) -> None:
    save = ToolCall("memory", {"action": "add", "target": "user", "content": "Likes tea."},
                    id="t1")
    rules = [
        (mentions("You compress conversations"), Reply(content="They like tea.")),
        (last_role("user", mentions("remember")), Reply(tool_calls=[save])),
    ]
    settings = AgentSettings(model="fake-model", compression_threshold_chars=2500)
    with FakeOpenAI(rules=rules, default=Reply(content="Noted.")) as server:
        agent = make_agent(tmp_path, server, [recorder()], agent=settings)
        agent.keep_after_compression = 2
        agent.run_turn("please remember I like tea")
        agent.branch()
        agent.run_turn("remember this too")
        outcomes = [agent.run_turn(f"long {i} " + "tea " * 150) for i in range(4)]
        agent.new_session()
        agent.run_turn("remember again")
        memory = agent.memory
        ids = all_session_ids(memory)
        assert any(o.compressed for o in outcomes)
        assert len(ids) >= 4
        for session_id in ids:
            assert_replays(memory.sessions, session_id)
        agent.close()


# --------------------------------------------------------------------------- lazy sessions


def test_sessions_are_stored_with_their_first_message(tmp_path: Path) -> None:
    memory = make_memory(tmp_path, [recorder()])
    memory.start_session()
    for _ in range(3):
        memory.switch_session(reason="new")
    assert all_session_ids(memory) == []  # /new x3: nothing stored
    result = json.loads(memory.call_tool("session_search", {"query": "tea"}))
    assert result["success"] is True  # search works in a session not stored yet
    memory.end_turn(memory.begin_turn("first message"), "hi")
    first = memory.session_id
    assert all_session_ids(memory) == [first]
    memory.switch_session(reason="branch")
    branch = memory.session_id
    assert memory.sessions.get_session(branch).parent_session_id == first
    memory.switch_session(first, reason="resume")
    memory.switch_session(reason="new")
    memory.set_title("Named")  # an explicit title stores the session
    titled = memory.session_id
    assert memory.sessions.get_session(titled).title == "Named"
    memory.close()
    with make_memory(tmp_path) as again:
        assert sorted(all_session_ids(again)) == sorted([first, branch, titled])
        with pytest.raises(SessionNotFound):
            again.start_session(parent_session_id="no-such-parent")


def test_compression_child_links_to_an_unstored_parent(tmp_path: Path) -> None:
    memory = make_memory(tmp_path, [recorder()])
    memory.start_session()
    result = memory.compress([], lambda messages, notes: "summary")
    store = memory.sessions
    assert store.get_session(result.new_session_id).parent_session_id == result.old_session_id
    assert store.get_session(result.old_session_id).message_count == 0  # kept for lineage
    memory.close()


# --------------------------------------------------------------------------- typed errors


@pytest.mark.parametrize("bad", [123, None, ["text"], [{"type": "text"}, 4], {"a": 1}])
def test_bad_user_content_is_a_type_error_and_changes_nothing(tmp_path: Path, bad: object) -> None:
    memory = make_memory(tmp_path, [recorder()])
    memory.start_session()
    with pytest.raises(TypeError, match="user_message must be a str or a list"):
        memory.begin_turn(bad)  # type: ignore[arg-type]
    turn = memory.begin_turn("fine")
    assert turn.number == 1
    with pytest.raises(TypeError, match="final_response must be a str"):
        memory.end_turn(turn, 42)  # type: ignore[arg-type]
    assert not turn.closed
    memory.end_turn(turn, "ok")
    assert [m.content for m in memory.sessions.get_messages(memory.session_id)] == ["fine", "ok"]
    memory.close()
