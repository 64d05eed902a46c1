"""One session context (issue 11 item 3): ``Memory`` owns a frozen ``SessionContext`` and
the manager passes it with every hook to providers that declare ``context``; Hermes-shaped
providers get their old keywords and never see it; the home alias is made once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from agent_support import make_memory, recorder
from memoryport.manager import MemoryManager
from memoryport.provider import MemoryProvider
from memoryport.providers.curated import BuiltinMemoryProvider
from memoryport.providers.sessions import SessionSearchProvider
from memoryport.types import InitContext, SessionContext


class ContextAware(MemoryProvider):
    """Records the context every hook receives."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, SessionContext]] = []
        self.lock = threading.Lock()

    @property
    def name(self) -> str:
        return "aware"

    def is_available(self) -> bool:
        return True

    def _see(self, hook: str, context: SessionContext) -> None:
        with self.lock:
            self.seen.append((hook, context))

    def initialize(self, session_id: str, *, context: SessionContext, **kwargs: Any) -> None:
        self._see("initialize", context)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "whoami", "description": "session", "parameters": {"type": "object"}}]

    def handle_tool_call(
        self, tool_name: str, args: dict[str, Any], *, context: SessionContext, **kw: Any
    ) -> str:
        self._see("handle_tool_call", context)
        return json.dumps({"session": context.session_id})

    def prefetch(self, query: str, *, context: SessionContext, **kwargs: Any) -> str:
        self._see("prefetch", context)
        return ""

    def sync_turn(self, user: str, assistant: str, *, context: SessionContext, **kw: Any) -> None:
        self._see("sync_turn", context)

    def on_turn_start(self, turn_number: int, message: str, *, context: SessionContext) -> None:
        self._see("on_turn_start", context)

    def on_session_end(self, messages: list[Any], *, context: SessionContext) -> None:
        self._see("on_session_end", context)

    def on_session_switch(self, new_session_id: str, *, context: SessionContext, **kw: Any) -> None:
        self._see("on_session_switch", context)


def test_every_hook_gets_the_one_context(tmp_path: Path) -> None:
    aware = ContextAware()
    memory = make_memory(tmp_path, [aware])
    memory.start_session("s1", source="telegram")
    turn = memory.begin_turn("hello")
    assert json.loads(turn.handle_tool_call("whoami", {}, tool_call_id="c1")) == {"session": "s1"}
    memory.end_turn(turn, "hi")
    memory.switch_session(reason="branch")
    branch = memory.session_id
    memory.close()
    hooks = {hook: ctx for hook, ctx in aware.seen if hook != "on_session_switch"}
    assert set(hooks) == {"initialize", "on_turn_start", "prefetch", "handle_tool_call",
                          "sync_turn", "on_session_end"}  # fmt: skip
    first = hooks["initialize"]
    assert first.session_id == "s1" and first.platform == "telegram" and first.home == tmp_path
    assert all(ctx is first for hook, ctx in aware.seen if hook in ("prefetch", "sync_turn"))
    [switch] = [ctx for hook, ctx in aware.seen if hook == "on_session_switch"]
    assert switch.session_id == branch and switch.parent_session_id == "s1"
    assert switch is memory.context and switch.platform == "telegram"


def test_a_turn_keeps_its_context_across_a_switch(tmp_path: Path) -> None:
    aware = ContextAware()
    memory = make_memory(tmp_path, [aware])
    memory.start_session("s1")
    turn = memory.begin_turn("hello")
    memory.switch_session("s2", reason="new")
    memory.end_turn(turn, "hi")
    memory.flush(10)
    [synced] = [ctx for hook, ctx in aware.seen if hook == "sync_turn"]
    assert synced.session_id == "s1" and turn.context is synced
    memory.close()


def test_hermes_shaped_hooks_never_see_the_context(tmp_path: Path) -> None:
    rec = recorder()
    memory = make_memory(tmp_path, [rec])
    memory.start_session("s1")
    turn = memory.begin_turn("hello")
    memory.end_turn(turn, "hi")
    memory.switch_session(reason="new")
    memory.close()
    assert rec.calls and all("context" not in kwargs for _, _, kwargs in rec.calls)
    init = next(kwargs for name, _, kwargs in rec.calls if name == "initialize")
    assert init["home"] == init["hermes_home"] == str(tmp_path)


def test_home_alias_is_made_once_in_the_context(tmp_path: Path) -> None:
    back = SessionContext.from_kwargs("s", hermes_home=str(tmp_path))
    assert back.home == tmp_path and back.session_id == "s" and InitContext is SessionContext
    kwargs = back.to_kwargs()
    assert kwargs["home"] == kwargs["hermes_home"] == str(tmp_path) and "session_id" not in kwargs
    aware = ContextAware()
    manager = MemoryManager()
    manager.add_provider(aware)
    manager.initialize_all("s", hermes_home=str(tmp_path))
    assert aware.seen[0][1].home == tmp_path and manager.context.session_id == "s"
    manager.shutdown_all()


def test_builtin_providers_keep_no_session_copy() -> None:
    for cls in (BuiltinMemoryProvider, SessionSearchProvider):
        assert "on_session_switch" not in vars(cls), cls
