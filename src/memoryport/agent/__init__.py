"""The reference agent: a small agent loop over ``memoryport.api`` and any OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama, OpenRouter).

Needs the ``agent`` extra (``pip install 'memoryport[agent]'``, which brings ``openai``)::

    from memoryport.api import open_memory
    from memoryport.agent import Agent, ChatClient

    memory = open_memory(platform="cli")
    agent = Agent(memory, ChatClient("gpt-4o-mini"))
    print(agent.run_turn("Remember that I use Helix.").text)
    agent.close()
"""

from __future__ import annotations

from memoryport.agent.llm import AssistantReply, ChatClient, ToolCallRequest
from memoryport.agent.loop import DEFAULT_SYSTEM_PROMPT, Agent, TurnOutcome

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "Agent",
    "AssistantReply",
    "ChatClient",
    "ToolCallRequest",
    "TurnOutcome",
]
