"""AsyncMemory: the asyncio twin shares Memory's implementation and never blocks the loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_support import RECALL, recorder
from memoryport.aio import AsyncMemory, open_async
from memoryport.config import AgentSettings, Config, MemorySettings
from memoryport.fence import OPEN_TAG


async def _open(home: Path, providers: list[object]) -> AsyncMemory:
    config = Config(memory=MemorySettings(nudge_interval=0), agent=AgentSettings(model="m"))
    return await open_async(
        home, "default", config=config, providers=providers, load_provider=False
    )


def test_async_turn_lifecycle_and_compression(tmp_path: Path) -> None:
    rec = recorder()

    async def scenario() -> tuple[int, list[str], str]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        task = asyncio.create_task(ticker())
        memory = await _open(tmp_path, [rec])
        prompt = await memory.start_session(source="api")
        turn = await memory.begin_turn("Which tea do I like?")
        payload = turn.api_user_message()
        assert isinstance(payload, str) and OPEN_TAG in payload and RECALL in payload
        saved = await memory.handle_tool_call(
            turn, "memory", {"action": "add", "target": "user", "content": "Likes oolong."},
            tool_call_id="c1",
        )
        assert json.loads(saved)["success"] is True
        await memory.end_turn(turn, "Oolong.")
        old_session = memory.session_id

        async def summarize(messages: list[dict[str, object]], notes: list[str]) -> str:
            await asyncio.sleep(0)
            return f"Summary of {len(messages)} messages; notes: {'; '.join(notes)}"

        result = await memory.compress([{"role": "user", "content": "Which tea?"}], summarize)
        assert result.old_session_id == old_session != result.new_session_id
        assert result.summary.startswith("Summary of 1 messages; notes: recorder saw 1")
        child = memory.memory.sessions.get_session(result.new_session_id)
        assert child.parent_session_id == old_session
        await memory.flush(10)
        await memory.close()
        task.cancel()
        return ticks, rec.hooks_called(), prompt

    ticks, hooks, prompt = asyncio.run(scenario())
    assert ticks > 0
    assert OPEN_TAG not in prompt
    assert hooks.index("on_pre_compress") < hooks.index("on_session_end")
    assert hooks.index("on_session_end") < hooks.index("on_session_switch")
    assert hooks[-1] == "shutdown"


def test_async_context_and_session_messages(tmp_path: Path) -> None:
    async def scenario() -> None:
        memory = await _open(tmp_path, [])
        await memory.start_session("s1", source="api")
        turn = await memory.begin_turn("hello")
        await memory.end_turn(turn, "hi")
        assert memory.context.session_id == "s1" and memory.context.platform == "api"
        assert await memory.session_messages("s1") == [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}
        ]
        await memory.close()

    asyncio.run(scenario())
