"""Pydantic AI adapter against the real ``pydantic_ai`` Agent, with its ``FunctionModel``
and ``TestModel`` (no LLM): recall in the request only, the turn stored and synced."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import memoryport
from manager_doubles import Recorder
from memoryport.adapters.pydantic_ai import MemoryportCapability

RECALL = "The user edits code in Helix."
FENCE = "<memory-context>"


def open_memory(tmp_path: Path, recorder: Recorder) -> memoryport.Memory:
    return memoryport.open(tmp_path / "home", providers=[recorder], load_provider=False)


def user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]


def test_recall_in_request_only_turn_stored_and_synced(tmp_path: Path) -> None:
    recorder = Recorder("recall", recall=RECALL)
    memory = open_memory(tmp_path, recorder)
    seen: list[tuple[list[ModelMessage], str | None]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((list(messages), info.instructions))
        if len(seen) == 1:
            args = {"action": "add", "target": "user", "content": "Prefers green tea."}
            return ModelResponse(parts=[ToolCallPart("memory", args, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("You use Helix.")])

    agent = Agent(FunctionModel(model), capabilities=[MemoryportCapability(memory)])
    result = agent.run_sync("What editor do I use?")
    assert result.output == "You use Helix."

    # the fence is in every request of the run, on the user prompt, and nowhere else
    for messages, instructions in seen:
        prompt = user_prompts(messages)[-1]
        assert prompt.startswith("What editor do I use?")
        assert FENCE in prompt and RECALL in prompt
        assert FENCE not in (instructions or "")
    assert FENCE not in repr(result.all_messages())
    assert user_prompts(result.all_messages()) == ["What editor do I use?"]

    # the memory tool ran through memoryport, inside the turn
    returns = [p for m in result.all_messages() if isinstance(m, ModelRequest)
               for p in m.parts if isinstance(p, ToolReturnPart)]
    assert '"success": true' in str(returns[0].content)
    assert memory.curated is not None and memory.curated.store is not None
    assert "Prefers green tea." in memory.curated.store.entries("user")

    # the conversation is the session; stored: user, the memory tool call and result,
    # the answer; no fence; synced once
    assert memory.session_id == result.all_messages()[0].conversation_id
    stored = memory.session_messages(memory.session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[0]["content"] == "What editor do I use?"
    assert stored[1]["tool_calls"][0]["function"]["name"] == "memory"
    assert stored[-1]["content"] == "You use Helix."
    assert FENCE not in repr(stored)
    assert memory.flush(30) == 0  # the sync is queued to the provider's lane
    assert recorder.synced == [("What editor do I use?", "You use Helix.")]

    # a second run: a new turn, the old prompt is clean in the request
    seen.clear()
    agent2 = Agent(FunctionModel(lambda m, i: (seen.append((list(m), i.instructions)),
                                               ModelResponse(parts=[TextPart("Tea.")]))[1]),
                   capabilities=[MemoryportCapability(memory)])
    agent2.run_sync("And my drink?", message_history=result.all_messages())
    prompts = user_prompts(seen[0][0])
    assert prompts[0] == "What editor do I use?"
    assert prompts[-1].startswith("And my drink?") and FENCE in prompts[-1]
    assert len(memory.session_messages(memory.session_id)) == 6
    memory.close()


def test_system_prompt_as_instructions_and_tools_offered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with memoryport.open(home) as setup:
        setup.call_tool("memory", {"action": "add", "target": "memory",
                                   "content": "Project uses Python 3.11."})
    memory = memoryport.open(home)
    model = TestModel(call_tools=[])
    agent = Agent(model, capabilities=[MemoryportCapability(memory)])
    agent.run_sync("hello")
    instructions: list[str | None] = []
    Agent(FunctionModel(lambda m, i: (instructions.append(i.instructions),
                                      ModelResponse(parts=[TextPart("hi")]))[1]),
          capabilities=[MemoryportCapability(memory)]).run_sync("again")
    assert "Project uses Python 3.11." in (instructions[0] or "")
    params = model.last_model_request_parameters
    assert params is not None
    names = {tool.name for tool in params.function_tools}
    assert {"memory", "session_search"} <= names
    stored = memory.session_messages(memory.session_id)
    assert [m["role"] for m in stored] == ["user", "assistant"]  # a new conversation
    memory.close()


def test_failed_run_is_stored_interrupted_not_synced(tmp_path: Path) -> None:
    recorder = Recorder("recall", recall=RECALL)
    memory = open_memory(tmp_path, recorder)

    def broken(messages: list[ModelMessage], info: AgentInfo) -> Any:
        raise RuntimeError("model down")

    agent = Agent(FunctionModel(broken), capabilities=[MemoryportCapability(memory)])
    with pytest.raises(RuntimeError, match="model down"):
        agent.run_sync("Will this be kept?")
    stored = memory.session_messages(memory.session_id)
    assert [m["content"] for m in stored] == ["Will this be kept?"]
    assert memory.flush(30) == 0  # a queued sync would have run by now
    assert recorder.synced == []
    memory.close()


def test_wrong_memory_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"memoryport\.open\(\)"):
        MemoryportCapability("not a memory")


def test_without_pydantic_ai_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['pydantic_ai'] = None; import memoryport.adapters.pydantic_ai"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 1
    assert "pip install 'memoryport[pydantic-ai]'" in proc.stderr
