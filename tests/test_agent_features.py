"""Compression, the background memory review and delegation, end to end over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_support import RECALL, make_agent, recorder
from fake_openai import FakeOpenAI, Reply, ToolCall, last_role, mentions
from memoryport.agent.compression import SUMMARY_PREFIX, estimate_chars, split_tail
from memoryport.agent.review import REVIEW_PROMPT, REVIEW_SOURCE
from memoryport.config import AgentSettings, MemorySettings


def offers_tool(name: str) -> Any:
    def match(body: dict[str, Any]) -> bool:
        return any(t["function"]["name"] == name for t in body.get("tools", []))

    return match


def tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools", []))


# --------------------------------------------------------------------------- compression


def test_split_tail_starts_at_a_user_message() -> None:
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": "r"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    assert split_tail(history, 3) == 4
    assert split_tail(history, 5) == 4
    assert split_tail(history, 6) == 0
    assert split_tail(history, 1) == 6  # nothing kept rather than an orphan


def test_estimate_chars_counts_everything() -> None:
    messages = [{"role": "user", "content": "x" * 100}]
    assert estimate_chars("s" * 50, messages, "y" * 10) > 160


def test_compression_hook_order_and_lineage(tmp_path: Path) -> None:
    rec = recorder()
    rules = [(mentions("You compress conversations"), Reply(content="They like oolong."))]
    agent_settings = AgentSettings(model="fake-model", compression_threshold_chars=3000)
    with FakeOpenAI(rules=rules, default=Reply(content="Noted.")) as server:
        agent = make_agent(tmp_path, server, [rec], agent=agent_settings)
        agent.keep_after_compression = 2
        first_session = agent.start()
        outcomes = [agent.run_turn(f"Fact number {i}: " + "tea " * 150) for i in range(5)]
        agent.memory.flush(10)
        store = agent.memory.sessions
        new_session = agent.memory.session_id
        chain = [store.get_session(new_session)]
        while chain[-1].parent_session_id:
            chain.append(store.get_session(chain[-1].parent_session_id))
        new_messages = store.get_messages(new_session)
        agent.close()
    compressions = sum(o.compressed for o in outcomes)
    assert compressions >= 1
    # Lineage: each compression continues in a child of the session it ended.
    assert [r.id for r in chain][-1] == first_session
    assert len(chain) == compressions + 1
    assert all(r.end_reason == "compression" for r in chain[1:])
    assert new_messages[0].content.startswith(SUMMARY_PREFIX)
    assert "They like oolong." in new_messages[0].content
    # Hook order: pre_compress -> session_end -> switch(reason="compression").
    names = [(name, kwargs) for name, _, kwargs in rec.calls]
    pre = next(i for i, (n, _) in enumerate(names) if n == "on_pre_compress")
    end = next(i for i, (n, _) in enumerate(names) if n == "on_session_end" and i > pre)
    switch = next(
        i for i, (n, kw) in enumerate(names)
        if n == "on_session_switch" and kw.get("reason") == "compression"
    )
    assert pre < end < switch
    assert names[switch][1]["parent_session_id"] == first_session
    assert names[switch][0] == "on_session_switch" and names[switch][1]["reset"] is False
    # The summarizer was given the providers' contributions.
    summary_request = server.chat_requests(containing="You compress conversations")[0]
    assert "recorder saw" in json.dumps(summary_request)
    # After compression the model sees the summary, not the dropped turns.
    last = server.requests[-1]["messages"]
    assert last[1]["content"].startswith(SUMMARY_PREFIX)
    assert "Fact number 0" not in json.dumps(last)


# --------------------------------------------------------------------------- review


def test_background_review_writes_memory_without_touching_providers(tmp_path: Path) -> None:
    rec = recorder()
    save = ToolCall("memory", {"action": "add", "target": "user",
                               "content": "User drinks oolong tea."}, id="rv1")
    rules = [
        (last_role("user", mentions(REVIEW_PROMPT)), Reply(tool_calls=[save])),
        (last_role("tool", mentions(REVIEW_PROMPT)), Reply(content="Saved.")),
    ]
    memory_settings = MemorySettings(nudge_interval=2)
    with FakeOpenAI(rules=rules, default=Reply(content="Lovely.")) as server:
        agent = make_agent(tmp_path, server, [rec], memory=memory_settings)
        agent.run_turn("I drink oolong every morning.")
        assert server.chat_requests(containing=REVIEW_PROMPT) == []
        agent.run_turn("Any brewing tips?")
        assert agent.reviewer.wait(30)
        agent.memory.flush(10)
        entries = agent.memory.curated.store.entries("user")  # type: ignore[union-attr]
        stored = agent.memory.sessions.get_messages(agent.memory.session_id)
        agent.close()
    assert agent.reviewer.last_result == "Saved."
    assert "User drinks oolong tea." in entries
    review = server.chat_requests(containing=REVIEW_PROMPT)
    assert len(review) == 2
    # Same system prompt as the user-facing turn (prefix-cache parity); only the memory tool.
    turn_two = [b for b in server.requests if REVIEW_PROMPT not in json.dumps(b)][-1]
    assert review[0]["messages"][0] == turn_two["messages"][0]
    assert tool_names(review[0]) == ["memory"]
    # The replayed conversation is clean (no fenced recall) and the review is not stored.
    assert RECALL not in json.dumps(review[0]["messages"])
    assert not any(REVIEW_PROMPT in m.content for m in stored)
    # External providers: recall and sync ran for the two user turns only.
    for hook in ("prefetch", "on_turn_start", "sync_turn"):
        assert len([c for c in rec.calls if c[0] == hook]) == 2, hook
    # queue_prefetch: the first-turn warm-up plus one after each completed user turn.
    assert len([c for c in rec.calls if c[0] == "queue_prefetch"]) == 3
    assert REVIEW_PROMPT not in json.dumps([c[1] for c in rec.calls], default=str)
    writes = [c for c in rec.calls if c[0] == "on_memory_write"]
    assert [w[1][3]["source"] for w in writes] == [REVIEW_SOURCE]


def test_review_failure_is_logged_not_raised(tmp_path: Path) -> None:
    rules = [(mentions(REVIEW_PROMPT), Reply(tool_calls=[ToolCall("memory", "{not json")]))]
    with FakeOpenAI(rules=rules, default=Reply(content="ok")) as server:
        agent = make_agent(tmp_path, server, memory=MemorySettings(nudge_interval=1))
        outcome = agent.run_turn("hello")
        assert agent.reviewer.wait(30)
        agent.close()
    assert outcome.text == "ok"
    assert agent.reviewer.completed == 1


# --------------------------------------------------------------------------- delegation


def test_delegation_runs_a_child_session_and_reaches_on_delegation(tmp_path: Path) -> None:
    rec = recorder()
    delegate = ToolCall("delegate_task", {"task": "List three Lisbon museums",
                                          "context": "The user likes tiles."}, id="d1")
    rules = [
        (last_role("user", offers_tool("delegate_task")), Reply(tool_calls=[delegate])),
        (lambda b: not offers_tool("delegate_task")(b), Reply(content="MAAT, Gulbenkian, Azulejo")),
        (last_role("tool"), Reply(content="Here you go: MAAT, Gulbenkian, Azulejo.")),
    ]
    with FakeOpenAI(rules=rules) as server:
        agent = make_agent(tmp_path, server, [rec])
        outcome = agent.run_turn("Plan a museum day in Lisbon.")
        agent.memory.flush(10)
        parent_session = agent.memory.session_id
        store = agent.memory.sessions
        children = store.children(parent_session)
        child_messages = store.get_messages(children[0].id)
        agent.close()
    assert outcome.text == "Here you go: MAAT, Gulbenkian, Azulejo."
    assert len(children) == 1 and children[0].source == "subagent"
    assert child_messages[0].content.startswith("List three Lisbon museums")
    assert child_messages[-1].content == "MAAT, Gulbenkian, Azulejo"
    delegations = [c for c in rec.calls if c[0] == "on_delegation"]
    assert len(delegations) == 1
    _, (task, result), kwargs = delegations[0]
    assert task == "List three Lisbon museums" and result == "MAAT, Gulbenkian, Azulejo"
    assert kwargs["child_session_id"] == children[0].id
    child_request = next(b for b in server.requests if not offers_tool("delegate_task")(b))
    assert "memory" not in tool_names(child_request)
    assert "session_search" in tool_names(child_request)
    tool_result = json.loads(agent.history[2]["content"])
    assert tool_result == {"success": True, "result": "MAAT, Gulbenkian, Azulejo",
                           "child_session_id": children[0].id}
