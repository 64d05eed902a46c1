"""The reference agent against a real HTTP server through the real openai client."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from agent_support import RECALL, Collector, fenced, hook_names, make_agent, recorder
from fake_openai import FakeOpenAI, Reply, ToolCall
from manager_doubles import Recorder
from memoryport.fence import OPEN_TAG
from memoryport.manager import ManagerSettings


def user_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "user"]


def test_fence_only_in_the_current_user_message(tmp_path: Path) -> None:
    rec = recorder()
    script = [
        Reply(tool_calls=[ToolCall("recorder_echo", {"text": "hi"}, id="c1")]),
        Reply(content="Noted."),
        Reply(content="Sure."),
    ]
    with FakeOpenAI(script) as server:
        agent = make_agent(tmp_path, server, [rec])
        agent.run_turn("What tea do I like?")
        agent.run_turn("And in the evening?")
        session_id = agent.memory.session_id
        stored = agent.memory.sessions.get_messages(session_id)
        agent.close()
    assert len(server.requests) == 3
    for body in server.requests:
        system, *rest = body["messages"]
        assert system["role"] == "system" and not fenced(system)
        last_user = max(i for i, m in enumerate(rest) if m["role"] == "user")
        assert OPEN_TAG in rest[last_user]["content"]
        assert RECALL in rest[last_user]["content"]
        assert not any(fenced(m) for i, m in enumerate(rest) if i != last_user)
    # Turn 2's request replays turn 1's user message clean.
    assert user_messages(server.requests[2])[0]["content"] == "What tea do I like?"
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "user",
                                        "assistant"]
    assert stored[0].content == "What tea do I like?"
    assert not any(OPEN_TAG in m.content or RECALL in m.content for m in stored)
    assert not fenced(agent.history)


def test_prefetch_once_per_turn_across_tool_iterations(tmp_path: Path) -> None:
    rec = recorder()
    script = [Reply(tool_calls=[ToolCall("recorder_echo", {"n": i})]) for i in range(3)]
    script.append(Reply(content="Done."))
    with FakeOpenAI(script) as server:
        agent = make_agent(tmp_path, server, [rec])
        outcome = agent.run_turn("Run the echo three times.")
        agent.close()
    assert outcome.text == "Done." and outcome.tool_calls == 3
    assert len(server.requests) == 4
    assert len(hook_names(rec, "prefetch")) == 1
    assert len(hook_names(rec, "on_turn_start")) == 1
    assert len(hook_names(rec, "handle_tool_call")) == 3
    # Every iteration still carries the (cached) recall in the current user message.
    assert all(RECALL in user_messages(b)[-1]["content"] for b in server.requests)


def test_interrupted_turn_is_persisted_but_not_synced(tmp_path: Path) -> None:
    rec = recorder()
    long = Reply(content="Partial answer that goes on", chunks=["Partial", " answer", " that",
                                                                " goes on"])
    script = [long, Reply(content="Fine.")]
    seen: list[str] = []

    def interrupting(text: str) -> None:
        if text == " that":
            raise KeyboardInterrupt  # Ctrl+C while the third chunk is being shown
        seen.append(text)

    with FakeOpenAI(script) as server:
        agent = make_agent(tmp_path, server, [rec])
        first = agent.run_turn("Tell me a long story.", on_text=interrupting)
        agent.memory.flush(10)
        assert first.interrupted
        assert hook_names(rec, "sync_turn") == []
        # The only queue_prefetch is the first-turn warm-up, run just before prefetch;
        # nothing is queued after the interrupted turn.
        assert hook_names(rec, "queue_prefetch") == [("Tell me a long story.",)]
        order = [c[0] for c in rec.calls]
        assert order.index("queue_prefetch") < order.index("prefetch")
        second = agent.run_turn("Short version?", on_text=Collector())
        agent.memory.flush(10)
        stored = agent.memory.sessions.get_messages(agent.memory.session_id)
        agent.close()
    assert not second.interrupted
    assert [args[:2] for args in hook_names(rec, "sync_turn")] == [("Short version?", "Fine.")]
    assert stored[0].content == "Tell me a long story."
    assert stored[1].role == "assistant" and stored[1].content == first.text
    assert first.text == "Partial answer" == "".join(seen)


def test_interrupt_during_tool_chain_leaves_valid_history(tmp_path: Path) -> None:
    rec = recorder()
    script = [Reply(tool_calls=[ToolCall("recorder_echo", {}, id="c1")]), Reply(content="x")]
    with FakeOpenAI(script) as server:
        agent = make_agent(tmp_path, server, [rec])
        original = agent._run_tool

        def raising_tool(turn: Any, call: Any) -> None:
            raise KeyboardInterrupt

        agent._run_tool = raising_tool  # type: ignore[method-assign]
        outcome = agent.run_turn("Echo please.", on_text=Collector())
        agent._run_tool = original  # type: ignore[method-assign]
        agent.memory.flush(10)
        agent.close()
    assert outcome.interrupted
    assert hook_names(rec, "sync_turn") == []
    roles = [m["role"] for m in agent.history]
    assert roles == ["user", "assistant", "tool"]
    assert agent.history[2]["tool_call_id"] == "c1"


def test_streamed_fence_in_model_output_never_reaches_the_user(tmp_path: Path) -> None:
    content = "Hello <memory-context>SECRET recall</memory-context>world"
    chunks = ["Hello <mem", "ory-cont", "ext>SEC", "RET recall</memo", "ry-context>wor", "ld"]
    script = [Reply(content=content, chunks=chunks),
              Reply(content="Bye <memory-context>LEAK never closed", chunks=["Bye <", "memory-",
                                                                             "context>LEAK ",
                                                                             "never closed"])]
    shown = Collector()
    with FakeOpenAI(script) as server:
        agent = make_agent(tmp_path, server)
        first = agent.run_turn("Hi", on_text=shown)
        second = agent.run_turn("Bye", on_text=shown)
        stored = agent.memory.sessions.get_messages(agent.memory.session_id)
        agent.close()
    assert first.text == "Hello world"
    assert second.text == "Bye "
    assert shown.text == "Hello worldBye "
    assert not any("SECRET" in m.content or "LEAK" in m.content for m in stored)


def test_non_streaming_answer_is_scrubbed_too(tmp_path: Path) -> None:
    with FakeOpenAI([Reply(content="A<memory-context>x</memory-context>B")]) as server:
        agent = make_agent(tmp_path, server)
        outcome = agent.run_turn("Hi")
        agent.close()
    assert outcome.text == "AB"
    assert server.requests[0].get("stream") in (None, False)


class HangingRecall(Recorder):
    """Prefetch blocks until released; every other hook behaves."""

    def __init__(self) -> None:
        super().__init__("hanging", recall="too late")
        self.release = threading.Event()

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        self.release.wait()
        return "too late"


def test_hanging_provider_does_not_delay_the_turn(tmp_path: Path) -> None:
    slow = HangingRecall()
    settings = ManagerSettings(prefetch_deadline_s=0.2)
    try:
        with FakeOpenAI([Reply(content="On time.")]) as server:
            agent = make_agent(tmp_path, server, [slow], manager_settings=settings)
            agent.start()
            started = time.monotonic()
            outcome = agent.run_turn("Quick question")
            elapsed = time.monotonic() - started
            body = server.requests[0]
            slow.release.set()
            agent.close()
    finally:
        slow.release.set()
    assert outcome.text == "On time."
    assert elapsed < 10.0  # the deadline is 0.2 s; without one this call never returns
    assert "too late" not in json.dumps(body)
