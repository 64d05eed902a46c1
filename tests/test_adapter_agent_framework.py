"""Microsoft Agent Framework adapter against the real ``agent_framework`` ``Agent`` with a
scripted chat client built from its own ``BaseChatClient`` + ``FunctionInvocationLayer``
(no LLM): recall in the request only, memory tools run, the turn stored and synced."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agent_framework")

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
)

import memoryport
from manager_doubles import Recorder
from memoryport.adapters.agent_framework import MemoryportContextProvider

RECALL = "The user edits code in Helix."
FENCE = "<memory-context>"


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client answering from a script and recording every request."""

    def __init__(self, replies: list[Message]) -> None:
        super().__init__()
        self.replies = replies
        self.requests: list[tuple[list[Message], dict[str, Any]]] = []

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any],
        **kwargs: Any,
    ) -> ChatResponse:
        self.requests.append((list(messages), dict(options)))
        return ChatResponse(messages=[self.replies.pop(0)])


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[memoryport.Memory]:
    recorder = Recorder("recall", recall=RECALL)
    mem = memoryport.open(tmp_path / "home", providers=[recorder], load_provider=False)
    mem.recorder = recorder  # type: ignore[attr-defined]
    yield mem
    mem.close()


def test_context_provider_recall_tools_and_sync(memory: memoryport.Memory) -> None:
    call = Content.from_function_call(
        call_id="c1", name="memory",
        arguments={"action": "add", "target": "user", "content": "Prefers green tea."})
    client = ScriptedClient([Message(role="assistant", contents=[call]),
                             Message(role="assistant", contents=["You use Helix."]),
                             Message(role="assistant", contents=["Green tea."])])
    agent = Agent(client, instructions="Be terse.",
                  context_providers=[MemoryportContextProvider(memory)])
    session = agent.create_session()
    response = asyncio.run(agent.run("What editor do I use?", session=session))
    assert response.text == "You use Helix."

    for messages, options in client.requests:
        assert FENCE in messages[0].text and RECALL in messages[0].text
        assert messages[1].text == "What editor do I use?"
        assert "Be terse." in str(options["instructions"])
        assert "Persistent memory" in str(options["instructions"])
        assert {"memory", "session_search"} <= {t.name for t in options["tools"]}

    # the agent session's history (its history provider) never holds the fence
    assert FENCE not in repr([m.text for m in session.state["in_memory"]["messages"]])
    # the agent session is the memoryport session: stored clean, synced once
    assert memory.session_id == session.session_id
    stored = memory.session_messages(session.session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert FENCE not in repr(stored)
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [  # type: ignore[attr-defined]
        ("What editor do I use?", "You use Helix.")]
    assert "Prefers green tea." in memory.curated.store.entries("user")  # type: ignore[union-attr]

    client.requests.clear()
    asyncio.run(agent.run("And my drink?", session=session))
    texts = [m.text for m in client.requests[0][0]]
    assert texts.count("What editor do I use?") == 1  # history from the session
    assert sum(FENCE in t for t in texts) == 1  # only this run's recall
    assert len(memory.session_messages(session.session_id)) == 6


def test_failed_run_is_stored_interrupted(memory: memoryport.Memory) -> None:
    client = ScriptedClient([])  # no reply: the client raises
    agent = Agent(client, context_providers=[MemoryportContextProvider(memory)])
    session = agent.create_session()
    with pytest.raises(Exception):  # noqa: B017 - whatever the framework wraps it in
        asyncio.run(agent.run("Lost?", session=session))
    client.replies.append(Message(role="assistant", contents=["Found."]))
    asyncio.run(agent.run("Again?", session=session))
    stored = memory.session_messages(session.session_id)
    assert [m["content"] for m in stored] == ["Lost?", "Again?", "Found."]
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [("Again?", "Found.")]  # type: ignore[attr-defined]


def test_wrong_memory_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportContextProvider(None)


def test_without_agent_framework_the_import_error_names_the_extra() -> None:
    code = ("import sys; sys.modules['agent_framework'] = None; "
            "import memoryport.adapters.agent_framework")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[agent-framework]'" in proc.stderr
