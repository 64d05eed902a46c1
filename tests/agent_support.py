"""Helpers for the agent tests: build a Memory + Agent against a FakeOpenAI server."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI
from manager_doubles import Recorder
from memoryport.agent import Agent, ChatClient
from memoryport.api import Memory, open_memory
from memoryport.config import AgentSettings, Config, MemorySettings
from memoryport.fence import OPEN_TAG
from memoryport.manager import ManagerSettings

RECALL = "User drinks oolong tea every morning."


def make_memory(
    home: Path,
    providers: Sequence[Any] = (),
    *,
    memory: MemorySettings | None = None,
    agent: AgentSettings | None = None,
    manager_settings: ManagerSettings | None = None,
) -> Memory:
    """A Memory on ``home`` with the given external providers and settings."""
    config = Config(
        memory=memory or MemorySettings(nudge_interval=0),
        agent=agent or AgentSettings(model="fake-model"),
    )
    return open_memory(
        home, "default", config=config, providers=providers, load_provider=False,
        platform="cli", manager_settings=manager_settings,
    )


def make_agent(
    home: Path,
    server: FakeOpenAI,
    providers: Sequence[Any] = (),
    **settings: Any,
) -> Agent:
    """An Agent over ``make_memory(home, providers, **settings)`` talking to ``server``."""
    memory = make_memory(home, providers, **settings)
    client = ChatClient(memory.config.agent.model, base_url=server.base_url, api_key="test")
    return Agent(memory, client)


def recorder(recall: str = RECALL) -> Recorder:
    """The external recording provider (its recall is fenced into the user message)."""
    return Recorder("recorder", recall=recall)


def with_agent(settings: AgentSettings, **changes: Any) -> AgentSettings:
    """``settings`` with ``changes`` applied."""
    return replace(settings, **changes)


def hook_names(provider: Recorder, hook: str) -> list[tuple[Any, ...]]:
    """The positional args of each call of ``hook`` on ``provider``."""
    with provider.lock:
        return [args for name, args, _ in provider.calls if name == hook]


def fenced(value: Any) -> bool:
    """True when ``value`` (any JSON-able object) contains the fence open tag."""
    return OPEN_TAG in json.dumps(value)


class Collector:
    """An ``on_text`` sink that keeps what the user would have seen."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            self.parts.append(text)

    @property
    def text(self) -> str:
        """Everything shown so far."""
        return "".join(self.parts)
