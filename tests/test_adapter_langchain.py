"""LangChain/LangGraph adapters against the real packages, no LLM: ``create_agent`` with
LangChain's ``GenericFakeChatModel`` and a real checkpointer, the LangGraph ``BaseStore``
driven directly and through ``langmem``'s memory tools."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp
from pydantic import Field

import memoryport
from manager_doubles import Recorder
from memoryport.adapters.langchain import MemoryportMiddleware
from memoryport.adapters.langgraph import MemoryportStore, entry_key

RECALL = "The user edits code in Helix."
FENCE = "<memory-context>"


class FakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, recording each request; tools bind to itself."""

    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def fake(replies: list[AIMessage]) -> FakeModel:
    return FakeModel(messages=iter(replies))


def texts(messages: Sequence[BaseMessage]) -> str:
    return repr([m.content for m in messages])


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[memoryport.Memory]:
    recorder = Recorder("recall", recall=RECALL)
    mem = memoryport.open(tmp_path / "home", providers=[recorder], load_provider=False)
    mem.recorder = recorder  # type: ignore[attr-defined]
    yield mem
    mem.close()


def test_middleware_fences_request_only_and_stores_turn(memory: memoryport.Memory) -> None:
    call = {"name": "memory", "id": "c1",
            "args": {"action": "add", "target": "user", "content": "Prefers green tea."}}
    model = fake([AIMessage(content="", tool_calls=[call]), AIMessage(content="You use Helix."),
                  AIMessage(content="Green tea.")])
    agent = create_agent(model, tools=[], system_prompt="You are terse.",
                         middleware=[MemoryportMiddleware(memory)], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "thread-1"}}
    state = agent.invoke({"messages": [{"role": "user", "content": "What editor do I use?"}]},
                         config)
    assert state["messages"][-1].content == "You use Helix."

    # every request of the turn: agent's system prompt + memory's, fence on the human message
    for request in model.requests:
        assert request[0].type == "system" and request[0].text.startswith("You are terse.")
        human = [m for m in request if m.type == "human"][-1]
        assert FENCE in human.text and RECALL in human.text
    # graph state / checkpoint never hold the fence
    assert FENCE not in texts(state["messages"])
    assert FENCE not in repr(agent.get_state(config).values)

    # the LangGraph thread is the memoryport session; the turn is stored, clean, synced
    assert memory.session_id == "thread-1"
    stored = memory.session_messages("thread-1")
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[-1]["content"] == "You use Helix."
    assert FENCE not in repr(stored)
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert memory.recorder.synced == [  # type: ignore[attr-defined]
        ("What editor do I use?", "You use Helix.")]
    assert memory.curated is not None and memory.curated.store is not None
    assert "Prefers green tea." in memory.curated.store.entries("user")

    # second invocation on the same thread: history from the checkpointer, only the new
    # human message fenced
    model.requests.clear()
    state = agent.invoke({"messages": [{"role": "user", "content": "And my drink?"}]}, config)
    humans = [m for m in model.requests[0] if m.type == "human"]
    assert humans[0].text == "What editor do I use?"
    assert FENCE in humans[-1].text
    assert len(memory.session_messages("thread-1")) == 6


def test_middleware_async_invoke(memory: memoryport.Memory) -> None:
    model = fake([AIMessage(content="Hi.")])
    agent = create_agent(model, middleware=[MemoryportMiddleware(memory)])
    state = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "hello"}]}))
    assert state["messages"][-1].content == "Hi."
    assert FENCE in model.requests[0][-1].text
    stored = memory.session_messages(memory.session_id)
    assert [m["content"] for m in stored] == ["hello", "Hi."]


def test_store_roundtrip_over_curated_memory(memory: memoryport.Memory) -> None:
    store = MemoryportStore(memory)
    store.put(("memories",), "new-key", {"content": "Deploys run on Fridays."})
    store.put(("user", "alice"), "k2", {"content": "Alice likes short answers."})
    store.put(("memories",), "k3", {"kind": "fact", "text": "CI uses GitHub Actions."})
    assert memory.curated is not None and memory.curated.store is not None
    assert memory.curated.store.entries("memory")[0] == "Deploys run on Fridays."
    assert memory.curated.store.entries("user") == ["Alice likes short answers."]

    hits = store.search(("memories",), query="when do deploys run")
    assert hits[0].value == {"content": "Deploys run on Fridays."} and hits[0].score > 0
    assert [h.value for h in store.search(("memories",), filter={"kind": "fact"})] == [
        {"kind": "fact", "text": "CI uses GitHub Actions."}]
    key = entry_key("Deploys run on Fridays.")
    got = store.get(("memories",), key)
    assert got is not None and got.key == key

    store.put(("memories",), key, {"content": "Deploys run on Thursdays."})
    assert "Deploys run on Thursdays." in memory.curated.store.entries("memory")
    assert store.get(("memories",), key) is None
    store.delete(("memories",), entry_key("Deploys run on Thursdays."))
    assert "Deploys run on Thursdays." not in memory.curated.store.entries("memory")
    assert store.list_namespaces() == [("memory",), ("user",)]
    assert store.list_namespaces(prefix=("user",)) == [("user",)]
    assert asyncio.run(store.aget(("user",), entry_key("Alice likes short answers."))) is not None


def test_store_refused_write_raises_and_changes_nothing(memory: memoryport.Memory) -> None:
    store = MemoryportStore(memory)
    before = memory.curated.store.entries("memory")  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="refused to add"):
        store.batch([PutOp(("memories",), "k", {"content": "x" * 50_000})])
    assert memory.curated.store.entries("memory") == before  # type: ignore[union-attr]


def test_langmem_tools_over_the_store(memory: memoryport.Memory) -> None:
    langmem = pytest.importorskip("langmem")
    store = MemoryportStore(memory)
    manage = langmem.create_manage_memory_tool(("memories",), store=store)
    search = langmem.create_search_memory_tool(("memories",), store=store)

    manage.invoke({"content": "The staging database is Postgres 16.", "action": "create"})
    found = json.loads(search.invoke({"query": "staging database"}))
    assert found[0]["value"] == {"content": "The staging database is Postgres 16."}
    memory_id = found[0]["key"]

    manage.invoke({"content": "The staging database is Postgres 17.", "action": "update",
                   "id": memory_id})
    entries = memory.curated.store.entries("memory")  # type: ignore[union-attr]
    assert "The staging database is Postgres 17." in entries
    assert "The staging database is Postgres 16." not in entries

    found = asyncio.run(search.ainvoke({"query": "Postgres"}))
    new_id = json.loads(found)[0]["key"]
    asyncio.run(manage.ainvoke({"action": "delete", "id": new_id}))
    assert memory.curated.store.entries("memory") == []  # type: ignore[union-attr]


def test_parallel_memory_tool_calls_are_all_recorded(memory: memoryport.Memory) -> None:
    calls = [{"name": "memory", "id": f"c{n}",
              "args": {"action": "add", "target": "memory", "content": f"Fact number {n}."}}
             for n in range(4)]
    model = fake([AIMessage(content="", tool_calls=calls), AIMessage(content="Saved.")])
    agent = create_agent(model, middleware=[MemoryportMiddleware(memory)])
    agent.invoke({"messages": [{"role": "user", "content": "Remember four facts."}]})
    entries = memory.curated.store.entries("memory")  # type: ignore[union-attr]
    assert sorted(entries) == [f"Fact number {n}." for n in range(4)]
    stored = memory.session_messages(memory.session_id)
    assert [m["role"] for m in stored] == ["user"] + ["assistant", "tool"] * 4 + ["assistant"]
    assert stored[-1]["content"] == "Saved."


def test_wrong_input_is_a_clear_error(memory: memoryport.Memory) -> None:
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportMiddleware(None)
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportStore("home")
    with pytest.raises(TypeError, match="unknown store operation"):
        MemoryportStore(memory).batch([("not", "an op")])  # type: ignore[list-item]


def test_threads_are_sessions(memory: memoryport.Memory) -> None:
    model = fake([AIMessage(content=f"answer {n}") for n in range(3)])
    agent = create_agent(model, middleware=[MemoryportMiddleware(memory)],
                         checkpointer=InMemorySaver())
    for thread, text in (("thread-a", "one"), ("thread-b", "two"), ("thread-a", "three")):
        agent.invoke({"messages": [{"role": "user", "content": text}]},
                     {"configurable": {"thread_id": thread}})
    assert [m["content"] for m in memory.session_messages("thread-a")] == [
        "one", "answer 0", "three", "answer 2"]
    assert [m["content"] for m in memory.session_messages("thread-b")] == ["two", "answer 1"]


def test_without_langchain_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['langchain'] = None; import memoryport.adapters.langchain"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[langchain]'" in proc.stderr


def test_without_langgraph_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['langgraph'] = None; import memoryport.adapters.langgraph"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[langchain]'" in proc.stderr
