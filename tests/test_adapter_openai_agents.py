"""OpenAI Agents SDK adapter against the real ``agents`` Runner with the SDK's own
``ScriptedModel`` (no LLM): recall in the model input only, items round-trip through the
memoryport session store, turns stored and synced once, pop/clear."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, Session
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message, function_call

import memoryport
from manager_doubles import Recorder
from memoryport.adapters.openai_agents import MemoryportRunner, MemoryportSession

RECALL = "The user edits code in Helix."
FENCE = "<memory-context>"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[memoryport.Memory]:
    recorder = Recorder("recall", recall=RECALL)
    mem = memoryport.open(tmp_path / "home", providers=[recorder], load_provider=False)
    mem.recorder = recorder  # type: ignore[attr-defined]
    yield mem
    mem.close()


def memory_call(content: str, call_id: str) -> Any:
    args = {"action": "add", "target": "user", "content": content}
    return [function_call("memory", args, call_id=call_id)]


def test_runner_fences_model_input_only_and_stores_turn(memory: memoryport.Memory) -> None:
    model = ScriptedModel([memory_call("Prefers green tea.", "c1"),
                           [assistant_message("You use Helix.")],
                           [assistant_message("Green tea.")]])
    agent = Agent(name="assistant", instructions="Be terse.", model=model)
    runner = MemoryportRunner(memory, session_id="chat-1")
    assert isinstance(runner.session, Session)

    result = asyncio.run(runner.run(agent, "What editor do I use?"))
    assert result.final_output == "You use Helix."
    for call in model.calls:  # every model call of the turn
        users = [i for i in call.input if i.get("role") == "user"]
        assert users[-1]["content"].startswith("What editor do I use?")
        assert FENCE in users[-1]["content"] and RECALL in users[-1]["content"]
        assert call.system_instructions is not None
        assert call.system_instructions.startswith("Be terse.")
        assert "Persistent memory" in call.system_instructions
        assert {"memory", "session_search"} <= {t.name for t in call.tools}

    # the memory tool ran through memoryport
    assert "Prefers green tea." in memory.curated.store.entries("user")  # type: ignore[union-attr]
    # the session's items and the store: clean, the whole turn, synced once
    items = asyncio.run(runner.session.get_items())
    assert FENCE not in json.dumps(items)
    assert [i.get("type", "message") for i in items] == [
        "message", "function_call", "function_call_output", "message"]
    assert items[1]["call_id"] == "c1" and items[0]["content"] == "What editor do I use?"
    stored = memory.session_messages("chat-1")
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1]["tool_calls"][0]["id"] == "c1"
    assert FENCE not in repr(stored)
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [  # type: ignore[attr-defined]
        ("What editor do I use?", "You use Helix.")]

    # next run: history from the store, only the new message fenced
    asyncio.run(runner.run(agent, "And my drink?"))
    users = [i for i in model.calls[-1].input if i.get("role") == "user"]
    assert users[0]["content"] == "What editor do I use?"
    assert FENCE in users[-1]["content"]
    assert len(memory.session_messages("chat-1")) == 6
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert len(memory.recorder.synced) == 2  # type: ignore[attr-defined]


def test_session_alone_with_plain_runner(memory: memoryport.Memory) -> None:
    session = MemoryportSession(memory)
    seen: list[ModelInputData] = []

    def watch(data: CallModelData[Any]) -> ModelInputData:
        seen.append(data.model_data)
        return data.model_data

    model = ScriptedModel([[assistant_message("Hi there.")], [assistant_message("Bye.")]])
    agent = Agent(name="assistant", model=model)
    config = RunConfig(call_model_input_filter=watch)
    asyncio.run(Runner.run(agent, "hello", session=session, run_config=config))
    asyncio.run(Runner.run(agent, "bye", session=session, run_config=config))
    assert [i.get("content") for i in seen[-1].input][:2] == ["hello", "Hi there."]
    stored = memory.session_messages(memory.session_id)
    assert [m["content"] for m in stored] == ["hello", "Hi there.", "bye", "Bye."]
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert [u for u, _ in memory.recorder.synced] == ["hello", "bye"]  # type: ignore[attr-defined]


def test_pop_and_clear(memory: memoryport.Memory) -> None:
    session = MemoryportSession(memory, "chat-2")

    async def run() -> None:
        await session.add_items([{"role": "user", "content": "q1"}])
        await session.add_items([
            {"type": "function_call", "call_id": "a", "name": "session_search",
             "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "session_search",
             "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "x"},
            {"type": "function_call_output", "call_id": "b", "output": "y"}])
        await session.add_items([{"role": "assistant", "content": "done"}])
        assert [i.get("call_id") for i in await session.get_items()] == [
            None, "a", "b", "a", "b", None]
        popped = [await session.pop_item() for _ in range(4)]
        assert [p.get("call_id") if p else None for p in popped] == [None, "b", "a", "b"]
        left = await session.get_items()
        assert [i.get("call_id") for i in left] == [None, "a"]
        assert len(await session.get_items(limit=1)) == 1
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items([{"role": "user", "content": "again"},
                                 {"role": "assistant", "content": "ok"}])

    asyncio.run(run())
    assert [m["content"] for m in memory.session_messages("chat-2")] == ["again", "ok"]


def test_failed_run_is_stored_interrupted(memory: memoryport.Memory) -> None:
    model = ScriptedModel([RuntimeError("model down")])
    runner = MemoryportRunner(memory)
    with pytest.raises(RuntimeError, match="model down"):
        asyncio.run(runner.run(Agent(name="a", model=model), "Kept?"))
    assert [m["content"] for m in memory.session_messages(memory.session_id)] == ["Kept?"]
    assert memory.flush(30) == 0  # a queued sync would have run by now
    assert memory.recorder.synced == []  # type: ignore[attr-defined]


def test_wrong_memory_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportSession("nope")


def test_streamed_run(memory: memoryport.Memory) -> None:
    model = ScriptedModel([[assistant_message("You use Helix.")]])
    runner = MemoryportRunner(memory)

    async def run() -> str:
        result = await runner.run_streamed(Agent(name="a", model=model), "Editor?")
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    assert asyncio.run(run()) == "You use Helix."
    users = [i for i in model.calls[0].input if i.get("role") == "user"]
    assert FENCE in users[-1]["content"]
    stored = memory.session_messages(memory.session_id)
    assert [m["content"] for m in stored] == ["Editor?", "You use Helix."]
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [("Editor?", "You use Helix.")]  # type: ignore[attr-defined]


def test_without_agents_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['agents'] = None; import memoryport.adapters.openai_agents"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[openai-agents]'" in proc.stderr
