"""LlamaIndex adapter against the real ``llama_index.core`` ``Memory`` and chat engine with
its mock LLMs (no LLM): recall in the request only, turns stored and synced once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import TextBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import InsertMethod, Memory

import memoryport
from manager_doubles import Recorder
from memoryport.adapters.llamaindex import MemoryportBlock

RECALL = "The user edits code in Helix."
FENCE = "<memory-context>"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[memoryport.Memory]:
    recorder = Recorder("recall", recall=RECALL)
    mem = memoryport.open(tmp_path / "home", providers=[recorder], load_provider=False)
    mem.recorder = recorder  # type: ignore[attr-defined]
    yield mem
    mem.close()


class Answers:
    """A scripted reply per request, recording what each request carried."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.requests: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.requests.append(list(messages))
        return ChatMessage(role="assistant", content=self.replies.pop(0))


def chat(engine: SimpleChatEngine, text: str) -> str:
    return str(asyncio.run(engine.achat(text)))


def test_block_recall_in_request_only_turns_stored_once(memory: memoryport.Memory) -> None:
    answers = Answers("You use Helix.", "Green tea.")
    block = MemoryportBlock(memory)
    li_memory = Memory.from_defaults(session_id="chat-1", token_limit=4000,
                                     memory_blocks=[block])
    engine = SimpleChatEngine.from_defaults(
        llm=MockFunctionCallingLLM(response_generator=answers), memory=li_memory)

    assert chat(engine, "What editor do I use?") == "You use Helix."
    system = answers.requests[0][0]
    assert system.role.value == "system"
    assert FENCE in (system.content or "") and RECALL in (system.content or "")
    assert "Persistent memory" in (system.content or "")  # the frozen system prompt
    assert answers.requests[0][-1].content == "What editor do I use?"

    assert chat(engine, "And my drink?") == "Green tea."
    # LlamaIndex's own chat store never holds the fence
    stored_li = asyncio.run(li_memory.aget_all())
    assert FENCE not in repr(stored_li)
    # the first turn was stored and synced when its answer was seen, exactly once
    assert memory.session_id == "chat-1"
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [  # type: ignore[attr-defined]
        ("What editor do I use?", "You use Helix.")]
    asyncio.run(block.acommit(stored_li))
    stored = memory.session_messages("chat-1")
    assert [m["content"] for m in stored] == [
        "What editor do I use?", "You use Helix.", "And my drink?", "Green tea."]
    assert FENCE not in repr(stored)
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert len(memory.recorder.synced) == 2  # type: ignore[attr-defined]
    asyncio.run(block.acommit(stored_li))  # nothing open: nothing stored again
    assert len(memory.session_messages("chat-1")) == 4


def test_function_agent_tool_loop_keeps_recall_and_stores_final_answer(
    memory: memoryport.Memory,
) -> None:
    requests: list[list[ChatMessage]] = []

    def model(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        requests.append(list(messages))
        if len(requests) == 1:  # text plus a tool call: not the answer
            return ChatMessage(role="assistant", blocks=[
                TextBlock(text="Let me check."),
                ToolCallBlock(tool_call_id="t1", tool_name="lookup", tool_kwargs={"q": "x"})])
        return ChatMessage(role="assistant", content="You use Helix.")

    def lookup(q: str) -> str:
        """Look something up."""
        return "helix"

    block = MemoryportBlock(memory)
    li_memory = Memory.from_defaults(session_id="chat-5", token_limit=4000,
                                     memory_blocks=[block])
    agent = FunctionAgent(tools=[lookup], llm=MockFunctionCallingLLM(
        response_generator=model, is_chat_model=True))

    async def run() -> object:
        return await agent.run("What editor do I use?", memory=li_memory)

    answer = asyncio.run(run())
    assert str(answer) == "You use Helix."
    assert len(requests) == 2
    assert all(FENCE in (r[0].content or "") for r in requests)  # recall for the whole loop
    asyncio.run(block.acommit(asyncio.run(li_memory.aget_all())))
    stored = memory.session_messages("chat-5")
    assert [m["content"] for m in stored] == ["What editor do I use?", "You use Helix."]
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [  # type: ignore[attr-defined]
        ("What editor do I use?", "You use Helix.")]


def test_user_insert_method_and_echoing_model_is_scrubbed(memory: memoryport.Memory) -> None:
    block = MemoryportBlock(memory)
    li_memory = Memory.from_defaults(session_id="chat-2", token_limit=4000,
                                     memory_blocks=[block], insert_method=InsertMethod.USER)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=li_memory)  # echoes prompt
    echoed = chat(engine, "What editor do I use?")
    assert FENCE in echoed  # the request carried it (the mock model echoes its prompt)
    asyncio.run(block.acommit(asyncio.run(li_memory.aget_all())))
    stored = memory.session_messages("chat-2")
    assert stored[0]["content"] == "What editor do I use?"
    assert FENCE not in stored[1]["content"] and RECALL not in stored[1]["content"]


def test_unanswered_message_is_stored_interrupted_not_synced(memory: memoryport.Memory) -> None:
    block = MemoryportBlock(memory)

    async def run() -> None:
        await block.aget([ChatMessage(role="user", content="first")], session_id="s3")
        await block.aget([ChatMessage(role="user", content="first"),
                          ChatMessage(role="user", content="second")], session_id="s3")
        await block.aput([ChatMessage(role="user", content="second"),
                          ChatMessage(role="assistant", content="answer")])

    asyncio.run(run())
    stored = memory.session_messages("s3")
    assert [m["content"] for m in stored] == ["first", "second", "answer"]
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [("second", "answer")]  # type: ignore[attr-defined]


def test_same_message_seen_twice_recalls_once(memory: memoryport.Memory) -> None:
    block = MemoryportBlock(memory)
    messages = [ChatMessage(role="user", content="hello")]

    async def run() -> tuple[str, str]:
        return (await block.aget(messages, session_id="s4"),
                await block.aget(messages, session_id="s4"))

    first, second = asyncio.run(run())
    assert first == second and FENCE in first
    prefetches = [c for c in memory.recorder.calls  # type: ignore[attr-defined]
                  if c[0] == "prefetch"]
    assert len(prefetches) == 1


def test_wrong_memory_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportBlock(object())


def test_without_llama_index_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['llama_index'] = None; import memoryport.adapters.llamaindex"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[llamaindex]'" in proc.stderr
