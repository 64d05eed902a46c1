"""AutoGen adapter against the real ``autogen_core`` ``Memory`` protocol and its model
contexts (no LLM; the agent loop's calls are made as ``AssistantAgent`` makes them):
recall in the request only, turns stored and synced once, curated add/clear."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("autogen_core")

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    UnboundedChatCompletionContext,
)
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage

import memoryport
from manager_doubles import Recorder
from memoryport.adapters.autogen import MemoryportMemory

RECALL = "The user edits code in Helix."
FENCE = "<memory-context>"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[memoryport.Memory]:
    recorder = Recorder("recall", recall=RECALL)
    mem = memoryport.open(tmp_path / "home", providers=[recorder], load_provider=False)
    mem.recorder = recorder  # type: ignore[attr-defined]
    yield mem
    mem.close()


async def fences(context: ChatCompletionContext) -> int:
    return sum(FENCE in str(m.content) for m in await context.get_messages())


def test_update_context_request_only_and_turns_stored(memory: memoryport.Memory) -> None:
    adapter = MemoryportMemory(memory)

    async def run() -> None:
        context = UnboundedChatCompletionContext()
        await context.add_message(SystemMessage(content="You are terse."))
        await context.add_message(UserMessage(content="What editor do I use?", source="user"))
        result = await adapter.update_context(context)
        assert [r.content for r in result.memories.results] == [RECALL]
        sent = await context.get_messages()
        assert isinstance(sent[-1], SystemMessage) and FENCE in sent[-1].content
        assert "Persistent memory" in sent[-1].content  # the frozen memory prompt
        await context.add_message(AssistantMessage(content="You use Helix.", source="a"))

        await context.add_message(UserMessage(content="And my drink?", source="user"))
        await adapter.update_context(context)
        assert await fences(context) == 1  # only the current request's recall
        texts = [str(m.content) for m in await context.get_messages()]
        assert texts[:4] == ["You are terse.", "What editor do I use?", "You use Helix.",
                             "And my drink?"]
        await context.add_message(AssistantMessage(content="Green tea.", source="a"))
        await adapter.close()
        assert await fences(context) == 0

    asyncio.run(run())
    stored = memory.session_messages(memory.session_id)
    assert [m["content"] for m in stored] == [
        "What editor do I use?", "You use Helix.", "And my drink?", "Green tea."]
    assert FENCE not in repr(stored)
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [  # type: ignore[attr-defined]
        ("What editor do I use?", "You use Helix."), ("And my drink?", "Green tea.")]


def test_buffered_context_keeps_older_messages(memory: memoryport.Memory) -> None:
    adapter = MemoryportMemory(memory)

    async def run() -> list[str]:
        context = BufferedChatCompletionContext(buffer_size=2)
        for n in range(3):
            await context.add_message(UserMessage(content=f"q{n}", source="user"))
            await adapter.update_context(context)
            await context.add_message(AssistantMessage(content=f"a{n}", source="a"))
        await adapter.close()
        state = await context.save_state()
        return [str(m["content"]) for m in state["messages"]]

    kept = asyncio.run(run())
    assert kept == ["q0", "a0", "q1", "a1", "q2", "a2"]  # no fence, nothing lost
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert [u for u, _ in memory.recorder.synced] == [  # type: ignore[attr-defined]
        "q0", "q1", "q2"]


def test_query_is_the_turns_recall(memory: memoryport.Memory) -> None:
    adapter = MemoryportMemory(memory)
    first = asyncio.run(adapter.query("What editor do I use?"))
    again = asyncio.run(adapter.query(MemoryContent(content="What editor do I use?",
                                                    mime_type=MemoryMimeType.TEXT)))
    assert [r.content for r in first.results] == [RECALL] == [r.content for r in again.results]
    prefetches = [c for c in memory.recorder.calls  # type: ignore[attr-defined]
                  if c[0] == "prefetch"]
    assert len(prefetches) == 1


def test_add_and_clear_curated_memory(memory: memoryport.Memory) -> None:
    adapter = MemoryportMemory(memory)
    asyncio.run(adapter.add(MemoryContent(content="Deploys run on Fridays.",
                                          mime_type=MemoryMimeType.TEXT)))
    asyncio.run(adapter.add(MemoryContent(content={"likes": "tea"},
                                          mime_type=MemoryMimeType.JSON,
                                          metadata={"target": "user"})))
    store = memory.curated.store  # type: ignore[union-attr]
    assert store is not None
    assert store.entries("memory") == ["Deploys run on Fridays."]
    assert store.entries("user") == ['{"likes": "tea"}']
    with pytest.raises(ValueError, match="refused"):
        asyncio.run(adapter.add(MemoryContent(content="x" * 50_000,
                                              mime_type=MemoryMimeType.TEXT)))
    asyncio.run(adapter.clear())
    assert store.entries("memory") == [] and store.entries("user") == []


def test_wrong_memory_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportMemory({})


def test_accepts_an_async_memory(tmp_path: Path) -> None:
    async def run() -> list[str]:
        amemory = await memoryport.open_async(tmp_path / "home", load_provider=False)
        adapter = MemoryportMemory(amemory)
        await adapter.add(MemoryContent(content="Uses tabs.", mime_type=MemoryMimeType.TEXT))
        entries = adapter.memory.curated.store.entries("memory")  # type: ignore[union-attr]
        await amemory.close()
        return entries

    assert asyncio.run(run()) == ["Uses tabs."]


def test_without_autogen_core_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['autogen_core'] = None; import memoryport.adapters.autogen"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[autogen]'" in proc.stderr
