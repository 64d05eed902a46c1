"""MemoryManager: registration, routing, the threading contract, failure isolation."""

from __future__ import annotations

import gc
import json
import logging
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from manager_doubles import (
    AsyncMixed,
    Hangs,
    LegacyWriter,
    Raises,
    Recorder,
    Sleeps,
    SlowSync,
    WrongTypes,
)
from memoryport.manager import ManagerSettings, MemoryManager
from memoryport.provider import mark_builtin

DEADLINE = 0.2
# Generous slack for a loaded 2-core CI machine: this checks that calls *return*
# instead of hanging, not how fast they are (speed is measured in benchmarks/).
SLACK = 1.5


def manager(**overrides: Any) -> MemoryManager:
    settings = {"prefetch_deadline_s": DEADLINE, "max_external_providers": 8} | overrides
    return MemoryManager(ManagerSettings(**settings))


@pytest.fixture
def released() -> list[Hangs]:
    hung: list[Hangs] = []
    yield hung
    for provider in hung:
        provider.release.set()


# ---------------------------------------------------------------- registration
def test_external_limit_defaults_to_one() -> None:
    m = MemoryManager()
    assert m.add_provider(Recorder("a"))
    assert not m.add_provider(Recorder("b"))
    assert [p.name for p in m.providers] == ["a"]


def test_builtin_recognised_by_identity_not_name() -> None:
    m = MemoryManager()
    impostor = Recorder("builtin")
    assert not m.add_provider(impostor), "a third party may not call itself builtin"
    real = mark_builtin(Recorder("builtin"))
    assert m.add_provider(real)
    assert m.add_provider(Recorder("external"))
    assert m.health()["builtin"]["builtin"] is True
    assert m.health()["external"]["builtin"] is False


def test_duplicate_and_broken_registrations_return_false(caplog: pytest.LogCaptureFixture) -> None:
    class Unavailable(Recorder):
        def is_available(self) -> bool:
            return False

    class AvailabilityRaises(Recorder):
        def is_available(self) -> bool:
            raise RuntimeError("boom")

    class NameRaises(Recorder):
        @property
        def name(self) -> str:
            raise RuntimeError("no name")

    m = manager()
    caplog.set_level(logging.WARNING)
    assert m.add_provider(Recorder("a"))
    assert not m.add_provider(Recorder("a"))
    assert not m.add_provider(Unavailable("u"))
    assert not m.add_provider(AvailabilityRaises("r"))
    assert not m.add_provider(NameRaises("n"))
    assert not m.add_provider(Recorder(""))
    assert [p.name for p in m.providers] == ["a"]
    assert "already registered" in caplog.text and "not available" in caplog.text


def test_initialize_failure_drops_provider_and_kwargs_are_aliased() -> None:
    class InitRaises(Recorder):
        def initialize(self, session_id: str, **kwargs: Any) -> None:
            raise RuntimeError("cannot connect")

    m = manager()
    good = Recorder("good")
    m.add_provider(good)
    m.add_provider(InitRaises("bad"))
    m.initialize_all("s1", hermes_home="/tmp/h", platform="cli", user_id="u1")
    assert [p.name for p in m.providers] == ["good"]
    _, args, kwargs = good.calls[0]
    assert args == ("s1",)
    assert kwargs["home"] == kwargs["hermes_home"] == "/tmp/h"
    assert kwargs["user_id"] == "u1"
    m.shutdown_all()


# ---------------------------------------------------------------- fault injection
def test_faulty_providers_never_reach_the_caller(released: list[Hangs]) -> None:
    m = manager(max_external_providers=16)
    hang, sleeps, healthy = Hangs(), Sleeps(delay=2.0), Recorder("healthy")
    released.append(hang)
    junk = [
        WrongTypes("dicts", {"not": "text"}),
        WrongTypes("nones", None),
        WrongTypes("bytes", b"bytes recall"),
        WrongTypes("huge", "x" * 10_000_000),
    ]
    slow = SlowSync(delay=0.01)
    for provider in [hang, sleeps, Raises(), *junk, slow, healthy]:
        assert m.add_provider(provider)
    m.initialize_all("s1")

    started = time.monotonic()
    context = dict(m.prefetch_all("what do I like?"))
    assert time.monotonic() - started < DEADLINE + SLACK
    assert context["healthy"] == "healthy recalls: what do I like?"
    assert context["bytes"] == "bytes recall"
    assert len(context["huge"]) <= 262_144
    assert set(context) == {"healthy", "bytes", "huge", "slowsync"}

    assert m.build_system_prompt() == ""
    m.on_turn_start(2, "again")
    assert json.loads(m.handle_tool_call("raises_tool", {}))["error"].startswith("Memory tool")
    assert json.loads(m.handle_tool_call("dicts_echo", {})) == {"not": "text"}
    assert "returned NoneType" in json.loads(m.handle_tool_call("nones_echo", {}))["error"]
    for i in range(20):
        m.sync_all(f"u{i}", f"a{i}")
    m.on_memory_write("add", "memory", "fact")
    m.on_delegation("task", "result", child_session_id="c1")
    m.on_session_switch("s2", parent_session_id="s1", reason="new")

    health = m.health()
    assert health["hangs"]["hooks"]["prefetch"]["timeouts"] == 1
    assert health["sleeps"]["hooks"]["prefetch"]["timeouts"] == 1
    assert health["dicts"]["hooks"]["prefetch"]["errors"] == 1
    report = m.shutdown_all()
    assert report["abandoned"] == {}
    assert slow.synced == [(f"u{i}", f"a{i}") for i in range(20)]
    assert healthy.synced == slow.synced
    assert health["raises"]["hooks"]["prefetch"]["errors"] == 1
    errors = m.health()["raises"]["hooks"]
    for hook in ("sync_turn", "on_memory_write", "on_delegation", "on_session_switch"):
        assert errors[hook]["errors"] >= 1, hook


def test_hung_provider_is_skipped_while_busy_then_breaker_opens(
    released: list[Hangs],
) -> None:
    m = manager(breaker_threshold=3, breaker_cooldown_s=60.0)
    hang, healthy = Hangs(), Recorder("healthy")
    released.append(hang)
    m.add_provider(hang)
    m.add_provider(healthy)
    m.initialize_all("s1")
    for turn in range(5):
        m.on_turn_start(turn, "q")
        started = time.monotonic()
        assert dict(m.prefetch_all("q"))["healthy"]
        assert time.monotonic() - started < DEADLINE + SLACK
    stats = m.health()["hangs"]
    assert stats["breaker"]["state"] == "open"
    assert stats["hooks"]["prefetch"]["timeouts"] == 1  # the first turn paid the deadline
    assert stats["hooks"]["prefetch"]["skipped"] >= 3  # later turns did not


def test_breaker_closes_after_cooldown_when_provider_recovers() -> None:
    m = manager(breaker_threshold=2, breaker_cooldown_s=1.0)
    sleeps = Sleeps(delay=DEADLINE * 1.5)
    m.add_provider(sleeps)
    m.initialize_all("s1")
    for _ in range(2):
        m.on_turn_start(1, "q")
        assert m.prefetch_all("q") == []
    assert m.health()["sleeps"]["breaker"]["state"] == "open"
    assert m.prefetch_all("q") == []
    assert m.health()["sleeps"]["hooks"]["prefetch"]["skipped"] >= 1
    sleeps.delay = 0.0
    time.sleep(1.1)
    assert m.health()["sleeps"]["breaker"]["state"] == "half-open"
    assert m.prefetch_all("q") == [("sleeps", "sleeps slept")]
    assert m.health()["sleeps"]["breaker"]["state"] == "closed"
    m.shutdown_all()


def test_pre_compress_collects_contributions_with_deadline(released: list[Hangs]) -> None:
    m = manager(pre_compress_deadline_s=DEADLINE)
    hang = Hangs()
    released.append(hang)
    for provider in (Recorder("a"), hang, Raises(), AsyncMixed()):
        m.add_provider(provider)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    started = time.monotonic()
    contributions = m.on_pre_compress(messages)
    assert time.monotonic() - started < DEADLINE + SLACK
    assert contributions == [("a", "a saw 2 messages"), ("asyncmixed", "async contribution")]


# ---------------------------------------------------------------- ordering and loss
def test_thousand_syncs_arrive_in_order_and_none_is_lost_at_shutdown() -> None:
    m = manager()
    slow = SlowSync(delay=0.0005)
    m.add_provider(slow)
    m.initialize_all("s1")
    for i in range(1000):
        m.sync_all(f"user {i}", f"assistant {i}")
    report = m.shutdown_all()
    assert report["abandoned"] == {}
    assert slow.synced == [(f"user {i}", f"assistant {i}") for i in range(1000)]


def test_full_queue_drops_oldest_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    m = manager(queue_maxsize=5)
    slow = SlowSync(delay=0.05)
    m.add_provider(slow)
    caplog.set_level(logging.WARNING)
    for i in range(20):
        m.sync_all(f"u{i}", "a")
    m.shutdown_all()
    assert "queue full" in caplog.text
    assert m.health()["slowsync"]["queue"]["dropped"] >= 10
    assert slow.synced[-1] == ("u19", "a")  # the newest always survives


def test_session_end_and_switch_are_ordered_after_pending_syncs() -> None:
    m = manager()
    slow = SlowSync(delay=0.01)
    m.add_provider(slow)
    m.sync_all("u1", "a1")
    m.sync_all("u2", "a2")
    m.on_session_end([{"role": "user", "content": "u1"}])
    m.on_session_switch("s2", parent_session_id="s1", reset=False, reason="compression")
    m.shutdown_all()
    order = [h for h in slow.hooks_called() if h != "shutdown"]
    assert order == ["sync_turn", "sync_turn", "on_session_end", "on_session_switch"]
    _, args, kwargs = slow.calls[3]
    assert args == ("s2",) and kwargs["reason"] == "compression" and kwargs["reset"] is False
    assert m.session_id == "s2"


def test_shutdown_is_idempotent_reverse_order_and_bounded(released: list[Hangs]) -> None:
    order: list[str] = []

    class Tracks(Recorder):
        def shutdown(self) -> None:
            order.append(self.name)

    class HangsOnShutdown(Recorder):
        def shutdown(self) -> None:
            time.sleep(5)

    m = manager(shutdown_deadline_s=0.2)
    for provider in (Tracks("first"), HangsOnShutdown("stuck"), Tracks("last")):
        m.add_provider(provider)
    started = time.monotonic()
    report = m.shutdown_all()
    assert time.monotonic() - started < 0.2 * 3 + SLACK
    assert order == ["last", "first"]
    assert report["timed_out"] == ["stuck"]
    assert m.shutdown_all()["already"] is True
    assert not m.add_provider(Recorder("late"))


def test_discarded_manager_is_not_kept_alive_by_atexit() -> None:
    m = manager()
    m.add_provider(Recorder("a"))
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------- tools
def test_tool_routing_dedupe_reserved_names_and_bad_arguments() -> None:
    class Shadow(Recorder):
        def get_tool_schemas(self) -> list[dict[str, Any]]:
            return [
                {"name": "memory", "parameters": {"type": "object"}},
                {"type": "function", "function": {"name": "a_echo", "parameters": {}}},
                {"description": "no name"},
                {"name": "shadow_only", "parameters": {"type": "object"}},
            ]

    m = manager()
    m.add_provider(Recorder("a"))
    m.add_provider(Shadow("shadow"))
    names = [s["name"] for s in m.get_all_tool_schemas()]
    assert names == ["a_echo", "shadow_only"]
    assert m.has_tool("shadow_only") and not m.has_tool("memory")
    assert json.loads(m.handle_tool_call("a_echo", '{"text": "hi"}')) == {"echo": {"text": "hi"}}
    assert "not valid JSON" in json.loads(m.handle_tool_call("a_echo", "{oops"))["error"]
    assert "JSON object" in json.loads(m.handle_tool_call("a_echo", [1, 2]))["error"]
    assert "No memory provider" in json.loads(m.handle_tool_call("zzz", {}))["error"]


def test_tool_schema_failure_does_not_block_other_providers() -> None:
    class SchemaRaises(Recorder):
        def get_tool_schemas(self) -> list[dict[str, Any]]:
            raise RuntimeError("schemas exploded")

    m = manager(max_external_providers=2)
    m.add_provider(SchemaRaises("broken"))
    m.add_provider(Recorder("ok"))
    assert [s["name"] for s in m.get_all_tool_schemas()] == ["ok_echo"]


# ---------------------------------------------------------------- signatures & async
def test_legacy_three_argument_hooks_are_adapted_once() -> None:
    m = manager()
    legacy = LegacyWriter()
    assert m.add_provider(legacy)
    m.initialize_all("s1", home="/tmp/x", platform="cli")
    m.on_memory_write("add", "user", "Prefers tea", {"session_id": "s1"})
    m.sync_all("hello", "hi", session_id="s1", messages=[{"role": "user", "content": "hello"}])
    m.shutdown_all()
    assert legacy.writes == [("add", "user", "Prefers tea")]
    assert legacy.synced == [("hello", "hi")]


def test_memory_write_mirrors_to_others_but_not_the_writer() -> None:
    class Writer(Recorder):
        def set_memory_write_listener(self, listener: Any) -> None:
            self.listener = listener

    m = manager()
    writer, other = mark_builtin(Writer("builtin")), Recorder("other")
    m.add_provider(writer)
    m.add_provider(other)
    writer.listener("replace", "memory", "new text", {"old_text": "old", "session_id": "s1"})
    m.shutdown_all()
    assert "on_memory_write" not in writer.hooks_called()
    writes = [c for c in other.calls if c[0] == "on_memory_write"]
    assert writes == [
        (
            "on_memory_write",
            ("replace", "memory", "new text", {"old_text": "old", "session_id": "s1"}),
            {},
        )
    ]


def test_async_and_mixed_providers_through_sync_api() -> None:
    m = manager()
    mixed = AsyncMixed()
    m.add_provider(mixed)
    m.initialize_all("s1")
    assert m.prefetch_all("tea?") == [("asyncmixed", "async recall: tea?")]
    assert json.loads(m.handle_tool_call("asyncmixed_echo", {"x": 1})) == {
        "async": True,
        "args": {"x": 1},
    }
    for i in range(50):
        m.sync_all(f"u{i}", f"a{i}")
    m.queue_prefetch_all("next")
    m.shutdown_all()
    assert mixed.synced == [(f"u{i}", f"a{i}") for i in range(50)]
    assert "queue_prefetch" in mixed.hooks_called()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_async_api_never_blocks_the_event_loop(
    kind: str, released: list[Hangs], tmp_path: Path
) -> None:
    """The one async API is ``memoryport.aio`` (the manager has no async twins of its own):
    with a provider hanging in every blocking hook, the event loop keeps running."""
    import asyncio

    from memoryport.aio import open_async
    from memoryport.config import Config

    hang = Hangs()
    released.append(hang)
    other = AsyncMixed() if kind == "async" else Recorder("plain")
    settings = ManagerSettings(
        prefetch_deadline_s=DEADLINE, pre_compress_deadline_s=DEADLINE,
        shutdown_deadline_s=DEADLINE, max_external_providers=8,
    )

    async def scenario() -> tuple[list[tuple[str, str]], int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        memory = await open_async(
            tmp_path, config=Config(), providers=[hang, other], load_provider=False,
            manager_settings=settings,
        )
        await memory.start_session("s1")
        turn = await memory.begin_turn("q")
        result = await memory.compress(
            [{"role": "user", "content": "x"}], lambda messages, notes: "summary"
        )
        assert "hangs" not in dict(result.contributions)
        await memory.close()
        task.cancel()
        return turn.contexts, ticks

    context, ticks = asyncio.run(scenario())
    assert other.name in dict(context) and "hangs" not in dict(context)
    assert ticks >= 5, "the event loop kept running while providers were awaited"
    assert not hasattr(MemoryManager, "aprefetch_all")


def test_async_is_available_and_initialize_are_awaited() -> None:
    class AsyncLifecycle(Recorder):
        async def is_available(self) -> bool:  # type: ignore[override]
            return True

        async def initialize(self, session_id: str, **kwargs: Any) -> None:  # type: ignore[override]
            self.initialized_with = session_id

    m = manager()
    provider = AsyncLifecycle("asynclife")
    assert m.add_provider(provider)
    m.initialize_all("s9")
    assert provider.initialized_with == "s9"
    m.shutdown_all()


class CacheOnly(Recorder):
    """Serves prefetch only from what queue_prefetch cached (like many Hermes providers)."""

    def __init__(self) -> None:
        super().__init__("cacheonly")
        self.cache: dict[str, str] = {}

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        self._log("queue_prefetch", query, session_id=session_id)
        self.cache[session_id] = f"cached for {query}"

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return self.cache.pop(session_id, "")


def test_first_turn_of_a_session_is_warmed_synchronously() -> None:
    m = manager()
    provider = CacheOnly()
    m.add_provider(provider)
    m.initialize_all("s1")
    assert m.prefetch_all("first question", session_id="s1") == [
        ("cacheonly", "cached for first question")
    ]
    m.queue_prefetch_all("first question", session_id="s1")
    m.flush()
    # a later turn of the same session uses the queued result (no synchronous warm-up)
    assert m.prefetch_all("second question", session_id="s1") == [
        ("cacheonly", "cached for first question")
    ]
    # after a switch the queued result is for another session: warm again
    m.queue_prefetch_all("second question", session_id="s1")
    m.flush()
    m.on_session_switch("s2", reason="new", reset=True)
    assert m.prefetch_all("third question", session_id="s2") == [
        ("cacheonly", "cached for third question")
    ]
    warmed = [c for c in provider.calls if c[0] == "queue_prefetch"]
    assert [c[1][0] for c in warmed] == [
        "first question",
        "first question",
        "second question",
        "third question",
    ]
    m.shutdown_all()


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_switch_to_an_empty_session_id_is_ignored(bad: Any) -> None:
    m = manager()
    rec = Recorder("rec")
    m.add_provider(rec)
    m.initialize_all("s1")
    m.on_session_switch(bad, reason="new")
    m.on_session_switch("s2", reason="new")
    m.shutdown_all()
    switches = [args for name, args, _ in rec.calls if name == "on_session_switch"]
    assert switches == [("s2",)]  # the empty switch never reached the provider
    m2 = manager()
    m2.initialize_all("s1")
    m2.on_session_switch(bad)
    assert m2.session_id == "s1"  # not reset
    m2.shutdown_all()
