"""Reserved tool names: the core reserves its own; the agent reserves ``delegate_task``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agent_support import make_memory
from fake_openai import FakeOpenAI, Reply
from manager_doubles import Recorder
from memoryport.agent import Agent, ChatClient
from memoryport.manager import ManagerSettings, MemoryManager


class Delegator(Recorder):
    """An external provider that offers a tool called ``delegate_task``."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "delegate_task", "parameters": {"type": "object"}}]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return json.dumps({"from": self.name, "tool": tool_name})


def test_core_no_longer_reserves_delegate_task() -> None:
    m = MemoryManager(ManagerSettings(max_external_providers=2))
    try:
        m.add_provider(Delegator("plugin"))
        assert m.reserved_tool_names == frozenset({"memory", "session_search"})
        assert [s["name"] for s in m.get_all_tool_schemas()] == ["delegate_task"]
        assert json.loads(m.handle_tool_call("delegate_task", {}))["from"] == "plugin"
    finally:
        m.shutdown_all()


def test_reserving_a_name_drops_an_external_tool_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = MemoryManager()
    try:
        m.add_provider(Delegator("plugin"))
        assert m.has_tool("delegate_task")  # table built before the name is reserved
        with caplog.at_level(logging.WARNING, logger="memoryport.manager"):
            m.reserve_tool_names("delegate_task")
            assert not m.has_tool("delegate_task")
        assert m.get_all_tool_schemas() == []
        assert "delegate_task" in m.reserved_tool_names
        assert "shadows a reserved tool" in caplog.text
    finally:
        m.shutdown_all()


@pytest.mark.parametrize("bad", ["", "  ", " padded", 7, None])
def test_bad_reserved_name_is_a_clear_error_and_changes_nothing(bad: Any) -> None:
    m = MemoryManager()
    try:
        with pytest.raises(ValueError, match="non-empty string"):
            m.reserve_tool_names("fine_name", bad)
        assert m.reserved_tool_names == frozenset({"memory", "session_search"})
    finally:
        m.shutdown_all()


def test_agent_reserves_delegate_task_through_memory(tmp_path: Path) -> None:
    memory = make_memory(tmp_path, [Delegator("plugin")])
    assert "delegate_task" in [s["name"] for s in memory.tool_schemas()]
    with FakeOpenAI(default=Reply(content="ok")) as server:
        client = ChatClient("fake-model", base_url=server.base_url, api_key="test")
        agent = Agent(memory, client)
        try:
            names = [t["function"]["name"] for t in agent.tools()]
            assert names.count("delegate_task") == 1  # the agent's own, not the plugin's
            assert "delegate_task" not in [s["name"] for s in memory.tool_schemas()]
        finally:
            agent.close()
