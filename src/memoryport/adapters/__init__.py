"""Framework adapters: memoryport inside other agent frameworks, translation only.

One module per framework, each behind its own extra, each a thin shell over the public
API (``memoryport.Memory`` / ``memoryport.aio.AsyncMemory``)::

    memoryport.adapters.openai_agents    pip install 'memoryport[openai-agents]'
    memoryport.adapters.langchain        pip install 'memoryport[langchain]'
    memoryport.adapters.llamaindex       pip install 'memoryport[llamaindex]'
    memoryport.adapters.pydantic_ai      pip install 'memoryport[pydantic-ai]'
    memoryport.adapters.agent_framework  pip install 'memoryport[agent-framework]'
    memoryport.adapters.autogen          pip install 'memoryport[autogen]'

Every adapter keeps the memoryport rules: recall runs once per user turn, the fenced
``<memory-context>`` block goes into the current request to the model only (never into
the framework's history nor memoryport's session store), and a completed turn is stored
in the session store and synced to providers. See docs/adapters.md.
"""

from __future__ import annotations

__all__: list[str] = []
