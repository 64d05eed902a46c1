"""The MCP server in process, through the real ``mcp`` client over memory streams with
JSON-RPC framing (``Client(server, mode="legacy")``): tools, resources, per-user scoping,
per-client sessions and bad input (nothing written, the server keeps serving)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import memoryport
from memoryport import MemoryProvider
from memoryport.admin.curated import open_curated
from memoryport.mcp import MemoryServer, ServeOptions, build_server
from memoryport.mcp.clients import META_SESSION_KEY, META_USER_KEY


@pytest.fixture
def server(tmp_path: Path) -> Iterator[MemoryServer]:
    srv = build_server(tmp_path, ServeOptions(max_argument_bytes=4096))
    yield srv
    srv.close()


def run(server: MemoryServer, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(server.mcp, mode="legacy", raise_exceptions=True) as client:
            return await body(client)

    return anyio.run(main)


def text(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def entries(home: Path, target: str, user: str = "") -> list[str]:
    return open_curated(home, user).entries(target)


def test_lists_tools_with_their_schemas_and_resources(server: MemoryServer) -> None:
    async def body(c: Client) -> tuple[Any, Any, Any]:
        return await c.list_tools(), await c.list_resources(), await c.list_resource_templates()

    tools, resources, templates = run(server, body)
    by_name = {t.name: t for t in tools.tools}
    assert {"memory", "session_search", "remember_turn", "recall"} <= set(by_name)
    assert "action" in by_name["memory"].input_schema["properties"]
    assert by_name["remember_turn"].input_schema["required"] == ["user", "assistant"]
    assert {str(r.uri) for r in resources.resources} == {"memory://MEMORY.md", "memory://USER.md"}
    assert [t.uri_template for t in templates.resource_templates] == [
        "memory://sessions/{session_id}"
    ]


def test_memory_tool_writes_and_resources_read_it(server: MemoryServer, tmp_path: Path) -> None:
    async def body(c: Client) -> tuple[Any, Any]:
        added = await c.call_tool(
            "memory", {"action": "add", "target": "user", "content": "User writes Rust"}
        )
        return added, await c.read_resource("memory://USER.md")

    added, user_md = run(server, body)
    assert not added.is_error and text(added)["success"] is True
    assert added.structured_content["success"] is True
    assert "User writes Rust" in user_md.contents[0].text
    assert entries(tmp_path, "user") == ["User writes Rust"]
    from memoryport.admin.audit import audit_log  # issue 18: the resource read is audited

    reads = [(e.shell, e.kind, e.target) for e in audit_log(tmp_path).events(kind="read")]
    assert ("mcp", "read", "memory://USER.md") in reads


def test_remember_turn_recall_and_session_resource(server: MemoryServer) -> None:
    async def body(c: Client) -> tuple[Any, ...]:
        first = text(await c.call_tool(
            "remember_turn", {"user": "I moved to Lisbon in May", "assistant": "Noted."}
        ))
        recalled = text(await c.call_tool("recall", {"query": "Where do I live?"}))
        second = text(await c.call_tool(
            "remember_turn", {"user": "Where do I live?", "assistant": "In Lisbon."}
        ))
        stored = await c.read_resource(f"memory://sessions/{first['session_id']}")
        return first, recalled, second, json.loads(stored.contents[0].text)

    first, recalled, second, stored = run(server, body)
    assert first["turn"] == 1 and second["turn"] == 2  # recall opened turn 2, remember closed it
    assert recalled["session_id"] == first["session_id"] == second["session_id"]
    assert [m["content"] for m in stored["messages"]] == [
        "I moved to Lisbon in May", "Noted.", "Where do I live?", "In Lisbon."
    ]
    assert stored["session"]["source"] == "mcp"


class NotesProvider(MemoryProvider):
    """A small real provider: recalls stored notes, offers one tool."""

    def __init__(self) -> None:
        self.notes: list[str] = ["The user's dog is called Biscuit"]

    @property
    def name(self) -> str:
        return "notes"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        return None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "notes_count", "description": "How many notes there are.",
                 "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return json.dumps({"success": True, "count": len(self.notes)})

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return "\n".join(n for n in self.notes if any(w in n for w in query.split()))

    def sync_turn(self, user_content: str, assistant_content: str, **kwargs: Any) -> None:
        self.notes.append(user_content)


def test_provider_tools_and_fenced_recall(tmp_path: Path) -> None:
    def opener(user_id: str) -> memoryport.Memory:
        return memoryport.open(tmp_path, user_id=user_id or None, providers=[NotesProvider()],
                               load_provider=False)

    srv = build_server(tmp_path, ServeOptions(), opener=opener)

    async def body(c: Client) -> tuple[Any, ...]:
        names = [t.name for t in (await c.list_tools()).tools]
        count = text(await c.call_tool("notes_count", {}))
        recalled = text(await c.call_tool("recall", {"query": "What is Biscuit?"}))
        return names, count, recalled

    try:
        names, count, recalled = run(srv, body)
    finally:
        srv.close()
    assert "notes_count" in names and count == {"success": True, "count": 1}
    assert recalled["providers"] == ["notes"]
    block = recalled["context"]
    assert block.startswith("<memory-context>") and block.endswith("</memory-context>")
    assert "Biscuit" in block


def test_users_from_meta_are_scoped(server: MemoryServer, tmp_path: Path) -> None:
    async def body(c: Client) -> tuple[Any, ...]:
        alice = {META_USER_KEY: "alice"}
        bob = {META_USER_KEY: "bob"}
        add = {"action": "add", "target": "user", "content": "Alice likes tea"}
        await c.call_tool("memory", add, meta=alice)
        turn = text(await c.call_tool(
            "remember_turn", {"user": "alice secret plan", "assistant": "ok"}, meta=alice
        ))
        bob_md = await c.read_resource("memory://USER.md", meta=bob)
        bob_search = text(await c.call_tool("session_search", {"query": "secret plan"}, meta=bob))
        with pytest.raises(MCPError) as missing:
            await c.read_resource(f"memory://sessions/{turn['session_id']}", meta=bob)
        alice_md = await c.read_resource("memory://USER.md", meta=alice)
        return bob_md, bob_search, missing.value, alice_md

    bob_md, bob_search, missing, alice_md = run(server, body)
    assert bob_md.contents[0].text == ""
    assert bob_search["count"] == 0
    assert "no session" in missing.message
    assert "Alice likes tea" in alice_md.contents[0].text
    assert entries(tmp_path, "user", "alice") == ["Alice likes tea"]
    assert entries(tmp_path, "user", "bob") == []


def test_clients_picking_session_ids_get_their_own_sessions(server: MemoryServer) -> None:
    async def body(c: Client) -> list[Any]:
        out = []
        for key in ("client-a", "client-b", "client-a"):
            out.append(text(await c.call_tool(
                "remember_turn", {"user": f"hello from {key}", "assistant": "hi"},
                meta={META_SESSION_KEY: key},
            )))
        return out

    a1, b1, a2 = run(server, body)
    assert a1["session_id"] == a2["session_id"] == "client-a"
    assert b1["session_id"] == "client-b"
    assert (a1["turn"], a2["turn"], b1["turn"]) == (1, 2, 1)


def test_unknown_tool_is_a_protocol_error_and_nothing_changes(
    server: MemoryServer, tmp_path: Path
) -> None:
    async def body(c: Client) -> tuple[MCPError, Any]:
        with pytest.raises(MCPError) as unknown:
            await c.call_tool("drop_everything", {"x": 1})
        return unknown.value, await c.call_tool("session_search", {"query": "x"})

    error, after = run(server, body)
    assert error.code == -32602 and "drop_everything" in error.message
    assert "memory" in error.message  # says what exists
    assert not after.is_error  # still serving


def test_oversized_arguments_refused_before_anything_is_written(
    server: MemoryServer, tmp_path: Path
) -> None:
    async def body(c: Client) -> MCPError:
        with pytest.raises(MCPError) as big:
            await c.call_tool("memory", {"action": "add", "target": "memory",
                                         "content": "x" * 5000})
        with pytest.raises(MCPError):
            await c.call_tool("remember_turn", {"user": "y" * 5000, "assistant": "z"})
        return big.value

    error = run(server, body)
    assert error.code == -32602 and "4096" in error.message
    assert "max-argument-bytes" in error.message
    assert entries(tmp_path, "memory") == []
    with memoryport.open(tmp_path) as memory:
        assert memory.sessions.list_sessions() == []


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("memory", {"action": 3, "target": "memory", "content": "x"}, "valid string"),
        ("memory", {"action": "add", "target": "memory", "content": "x", "bogus": 1}, "bogus"),
        ("remember_turn", {"user": ["not", "text"], "assistant": "a"}, "valid string"),
        ("remember_turn", {"user": "only the user"}, "assistant"),
        ("remember_turn", {"user": "   ", "assistant": "a"}, "empty"),
        ("memory", {"action": "explode", "target": "memory", "content": "x"}, "explode"),
    ],
)
def test_wrong_arguments_are_tool_errors_and_write_nothing(
    server: MemoryServer, tmp_path: Path, tool: str, arguments: dict[str, Any], says: str
) -> None:
    async def body(c: Client) -> tuple[Any, Any]:
        return await c.call_tool(tool, arguments), await c.call_tool("session_search", {})

    result, after = run(server, body)
    assert result.is_error and says in result.content[0].text
    assert not after.is_error
    assert entries(tmp_path, "memory") == []
    with memoryport.open(tmp_path) as memory:
        assert memory.sessions.list_sessions() == []


def test_close_ends_the_client_sessions(tmp_path: Path) -> None:
    srv = build_server(tmp_path, ServeOptions())
    turn = text(run(srv, lambda c: c.call_tool("remember_turn", {"user": "u", "assistant": "a"})))
    srv.close()
    srv.close()
    with memoryport.open(tmp_path) as memory:
        record = memory.sessions.get_session(turn["session_id"])
    assert record.end_reason == "close"


def test_least_recently_used_client_is_closed_over_max_clients(tmp_path: Path) -> None:
    srv = build_server(tmp_path, ServeOptions(max_clients=2))

    async def body(c: Client) -> list[str]:
        ids = []
        for key in ("one", "two", "three"):
            answer = await c.call_tool("remember_turn", {"user": f"hi {key}", "assistant": "a"},
                                       meta={META_SESSION_KEY: key})
            ids.append(text(answer)["session_id"])
        return ids

    try:
        ids = run(srv, body)
        open_now = {i.client_key for i in srv.pool.identities()}
    finally:
        srv.close()
    assert ids == ["one", "two", "three"]
    assert open_now == {"session:two", "session:three"}  # "default" and "one" were closed
    with memoryport.open(tmp_path) as memory:
        assert memory.sessions.get_session("one").end_reason == "close"


def test_meta_identity_must_be_text(server: MemoryServer) -> None:
    async def body(c: Client) -> MCPError:
        with pytest.raises(MCPError) as bad:
            await c.call_tool("session_search", {"query": "x"}, meta={META_USER_KEY: 42})
        return bad.value

    error = run(server, body)
    assert error.code == -32600 and META_USER_KEY in error.message


def test_timing_is_reported_only_when_asked_for(server: MemoryServer, tmp_path: Path) -> None:
    from memoryport.mcp.server import TIMING_KEY

    async def body(c: Client) -> tuple[Any, Any, Any]:
        plain = await c.call_tool("memory", {"action": "add", "target": "user",
                                             "content": "plain write"})
        timed = await c.call_tool("memory", {"action": "add", "target": "user",
                                             "content": "timed write"}, meta={TIMING_KEY: True})
        turn = await c.call_tool("remember_turn", {"user": "q", "assistant": "a"},
                                 meta={TIMING_KEY: True, META_USER_KEY: "timer"})
        return plain, timed, turn

    plain, timed, turn = run(server, body)
    assert not (plain.meta or {}).get(TIMING_KEY)
    for result in (timed, turn):
        assert not result.is_error
        figures = result.meta[TIMING_KEY]
        assert set(figures) == {"server_ms", "handler_ms", "tool_ms"}
        assert 0 <= figures["tool_ms"] <= figures["handler_ms"] <= figures["server_ms"]
    assert text(timed)["success"] is True  # the answer itself is unchanged
    assert entries(tmp_path, "user") == ["plain write", "timed write"]


def test_curated_resources_read_through_the_clients_open_memory(
    server: MemoryServer, tmp_path: Path
) -> None:
    # a resource read uses the store the client's Memory opened (no config.yaml parse per
    # read): it shows what that client's `memory` tool writes, even after config.yaml breaks
    async def body(c: Client) -> tuple[Any, Any, Any]:
        added = await c.call_tool("memory", {"action": "add", "target": "user",
                                             "content": "Prefers tabs"})
        (tmp_path / "config.yaml").write_text("memory: [this is not: a mapping\n")
        again = await c.call_tool("memory", {"action": "add", "target": "user",
                                             "content": "Uses vim"})
        return added, again, await c.read_resource("memory://USER.md")

    added, again, user_md = run(server, body)
    assert not added.is_error and not again.is_error
    assert "Prefers tabs" in user_md.contents[0].text
    assert "Uses vim" in user_md.contents[0].text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_direct_tool_calls_answer_exactly_as_the_sdk_path(tmp_path: Path, mode: str) -> None:
    """A plain ``tools/call`` is answered by the server's middleware (the direct path); a
    call the SDK must pre-parse (an array sent as a JSON string) takes the SDK's tool
    manager. Both give the same result, in the handshake era and the 2026 one."""
    srv = build_server(tmp_path, ServeOptions())
    ops = [{"action": "add", "content": "first"}]

    async def body(c: Client) -> list[Any]:
        return [
            await c.call_tool("memory", {"target": "memory", "operations": ops}),
            await c.call_tool("memory", {"target": "memory", "operations": json.dumps(ops)}),
            await c.call_tool("memory", {"action": "remove", "target": "memory",
                                         "old_text": "nothing like this"}),
        ]

    def shape(result: Any) -> dict[str, Any]:
        dumped = result.model_dump()
        dumped["content"] = [{**c, "text": "..."} for c in dumped["content"]]
        dumped["structured_content"] = sorted(dumped["structured_content"])
        return dumped

    async def main() -> list[Any]:
        async with Client(srv.mcp, mode=mode, raise_exceptions=True) as client:
            return await body(client)

    try:
        direct, through_sdk, refused = anyio.run(main)
    finally:
        srv.close()
    assert shape(direct) == shape(through_sdk)
    assert direct.structured_content["success"] is True and not direct.is_error
    assert json.loads(through_sdk.content[0].text)["success"] is True  # a no-op duplicate
    assert refused.is_error and refused.structured_content["success"] is False
    assert entries(tmp_path, "memory") == ["first"]



def test_serving_lowers_the_thread_switch_interval_and_restores_it() -> None:
    """While serving, a provider's background thread holds the GIL at most 0.5 ms at a
    time (not Python's 5 ms) before the event loop gets it back."""
    import sys

    from memoryport.mcp.server import SWITCH_INTERVAL_S, responsive

    before = sys.getswitchinterval()
    with responsive():
        assert sys.getswitchinterval() == min(before, SWITCH_INTERVAL_S) == 0.0005
    assert sys.getswitchinterval() == before


def test_tool_calls_run_on_the_servers_threads_which_close_stops(tmp_path: Path) -> None:
    """Tool calls and resource reads run on the server's own worker threads (not the event
    loop); ``close()`` waits for them and leaves none running."""
    import threading

    srv = build_server(tmp_path, ServeOptions())

    def workers() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("memoryport-mcp")]

    async def body(c: Client) -> Any:
        await c.call_tool("memory", {"action": "add", "target": "user", "content": "tea"})
        return await c.read_resource("memory://USER.md")

    try:
        profile = run(srv, body)
        assert workers()  # the call and the read ran there
    finally:
        srv.close()
    assert profile.contents[0].text.strip().endswith("tea")
    assert workers() == []
