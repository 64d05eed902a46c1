"""Providers with scripted misbehaviour, for the manager's fault-injection tests."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from memoryport.provider import MemoryProvider


class Recorder(MemoryProvider):
    """A healthy provider that records every hook call."""

    def __init__(self, name: str = "recorder", recall: str = "") -> None:
        self._name = name
        self.recall = recall
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.synced: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def _log(self, hook: str, *args: Any, **kwargs: Any) -> None:
        with self.lock:
            self.calls.append((hook, args, kwargs))

    def hooks_called(self) -> list[str]:
        with self.lock:
            return [c[0] for c in self.calls]

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self._log("initialize", session_id, **kwargs)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "name": f"{self._name}_echo",
                "description": "Echo the arguments.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
            }
        ]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        self._log("handle_tool_call", tool_name, args, **kwargs)
        return json.dumps({"echo": args})

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        self._log("prefetch", query, session_id=session_id)
        return self.recall or f"{self._name} recalls: {query}"

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        self._log("queue_prefetch", query, session_id=session_id)

    def sync_turn(
        self, user_content: str, assistant_content: str, *, session_id: str = "", **kwargs: Any
    ) -> None:
        self._log("sync_turn", user_content, assistant_content, session_id=session_id)
        with self.lock:
            self.synced.append((user_content, assistant_content))

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        self._log("on_turn_start", turn_number, message)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        self._log("on_session_end", messages)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        self._log("on_session_switch", new_session_id, **kwargs)

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        self._log("on_pre_compress", messages)
        return f"{self._name} saw {len(messages)} messages"

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        self._log("on_memory_write", action, target, content, metadata)

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        self._log("on_delegation", task, result, child_session_id=child_session_id)

    def shutdown(self) -> None:
        self._log("shutdown")


class Hangs(Recorder):
    """Every blocking hook waits forever (until ``release`` is set)."""

    def __init__(self, name: str = "hangs") -> None:
        super().__init__(name)
        self.release = threading.Event()

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        self.release.wait()
        return "too late"

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        self.release.wait()
        return "too late"

    def system_prompt_block(self) -> str:
        self.release.wait()
        return "too late"


class Sleeps(Recorder):
    """Prefetch sleeps ``delay`` seconds (set it to 0 to recover)."""

    def __init__(self, name: str = "sleeps", delay: float = 1.0) -> None:
        super().__init__(name)
        self.delay = delay

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        time.sleep(self.delay)
        return f"{self.name} slept"


class Raises(MemoryProvider):
    """Raises in every hook it can."""

    name = "raises"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        return None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "raises_tool", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        raise RuntimeError("tool exploded")

    def system_prompt_block(self) -> str:
        raise RuntimeError("prompt exploded")

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        raise RuntimeError("prefetch exploded")

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        raise RuntimeError("queue_prefetch exploded")

    def sync_turn(self, user_content: str, assistant_content: str, **kwargs: Any) -> None:
        raise RuntimeError("sync exploded")

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        raise RuntimeError("turn start exploded")

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        raise RuntimeError("session end exploded")

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        raise RuntimeError("switch exploded")

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        raise RuntimeError("compress exploded")

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        raise RuntimeError("write exploded")

    def on_delegation(self, task: str, result: str, **kwargs: Any) -> None:
        raise RuntimeError("delegation exploded")

    def shutdown(self) -> None:
        raise RuntimeError("shutdown exploded")


class WrongTypes(Recorder):
    """Returns whatever ``value`` holds from prefetch and tool calls."""

    def __init__(self, name: str, value: Any) -> None:
        super().__init__(name)
        self.value = value

    def prefetch(self, query: str, *, session_id: str = "") -> Any:
        return self.value

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> Any:
        return self.value


class SlowSync(Recorder):
    """``sync_turn`` takes ``delay`` seconds per call."""

    def __init__(self, name: str = "slowsync", delay: float = 0.02) -> None:
        super().__init__(name)
        self.delay = delay

    def sync_turn(
        self, user_content: str, assistant_content: str, *, session_id: str = "", **kwargs: Any
    ) -> None:
        time.sleep(self.delay)
        super().sync_turn(user_content, assistant_content, session_id=session_id)


class AsyncMixed(Recorder):
    """Some hooks ``async def``, the rest sync."""

    def __init__(self, name: str = "asyncmixed") -> None:
        super().__init__(name)

    async def prefetch(self, query: str, *, session_id: str = "") -> str:  # type: ignore[override]
        await asyncio.sleep(0.001)
        return f"async recall: {query}"

    async def sync_turn(  # type: ignore[override]
        self, user_content: str, assistant_content: str, *, session_id: str = "", **kwargs: Any
    ) -> None:
        await asyncio.sleep(0)
        with self.lock:
            self.synced.append((user_content, assistant_content))

    async def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:  # type: ignore[override]
        return "async contribution"

    async def handle_tool_call(  # type: ignore[override]
        self, tool_name: str, args: dict[str, Any], **kwargs: Any
    ) -> str:
        await asyncio.sleep(0)
        return json.dumps({"async": True, "args": args})


class LegacyWriter:
    """A provider matched by shape (no base class) with Hermes' older 3-argument hooks."""

    name = "legacy"

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, str]] = []
        self.synced: list[tuple[str, str]] = []

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id, **kwargs):  # type: ignore[no-untyped-def]
        self.session_id = session_id

    def get_tool_schemas(self):  # type: ignore[no-untyped-def]
        return []

    def on_memory_write(self, action, target, content):  # type: ignore[no-untyped-def]
        self.writes.append((action, target, content))

    def sync_turn(self, user_content, assistant_content):  # type: ignore[no-untyped-def]
        self.synced.append((user_content, assistant_content))
