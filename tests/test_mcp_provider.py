"""The bundled ``mcp`` provider against two real MCP servers nobody here mocked: the
reference knowledge-graph server ``@modelcontextprotocol/server-memory`` from npm (run with
node; ``make node-deps`` installs it under tests/node) and memoryport's own ``memoryport
serve`` over streamable HTTP. Plus the conformance kit, settings errors and a dead server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memoryport
from memoryport.admin.curated import open_curated
from memoryport.errors import ConfigError
from memoryport.providers.mcp import McpProvider, Settings, create_mcp_provider
from memoryport.testing import ProviderConformance

ROOT = Path(__file__).resolve().parents[1]
SERVER_MEMORY = (
    ROOT / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "server-memory"
    / "dist" / "index.js"
)
CLI = [sys.executable, "-c", "from memoryport.cli import main; main()"]


@pytest.fixture(scope="module", autouse=True)
def _node_server_installed() -> None:
    assert shutil.which("node"), "node is needed: apt-get install nodejs"
    assert SERVER_MEMORY.is_file(), f"{SERVER_MEMORY} is missing: run `make node-deps`"


def graph_settings(graph: Path, **extra: Any) -> dict[str, Any]:
    return {
        "command": "node",
        "args": [str(SERVER_MEMORY)],
        "env": {"MEMORY_FILE_PATH": str(graph)},
        "prefetch_tool": "search_nodes",
        "sync_tool": "create_entities",
        "sync_args": {"entities": [{"name": "turn {turn_id}", "entityType": "turn",
                                    "observations": ["user: {user}",
                                                     "assistant: {assistant}"]}]},
        **extra,
    }


def write_config(home: Path, section: dict[str, Any], **memory: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = {"memory": {"provider": "mcp", **memory}, "mcp": section}
    (home / "config.yaml").write_text(json.dumps(config))


class TestMcpProviderConformance(ProviderConformance):
    """The kit, with the provider talking to the npm knowledge-graph server. The kit runs
    each hook on a fresh event loop, so every call reconnects (a node start): one tool keeps
    it short; prefetch/sync through the server are covered by the tests below."""

    def make_provider(self, home: Path) -> McpProvider:
        section = graph_settings(home / "graph.jsonl", tools=["search_nodes"])
        return McpProvider(Settings.from_section(section))


def test_knowledge_graph_server_through_memory(tmp_path: Path) -> None:
    graph = tmp_path / "graph.jsonl"
    write_config(tmp_path, graph_settings(graph))
    with memoryport.open(tmp_path) as memory:
        memory.start_session()
        names = {s["name"] for s in memory.tool_schemas()}
        assert {"create_entities", "search_nodes", "read_graph"} <= names
        first = memory.begin_turn("I switched my editor to Helix")
        memory.end_turn(first, "Helix it is.")
        assert memory.flush(30) == 0
        stored = [json.loads(line) for line in graph.read_text().splitlines()]
        assert stored[0]["observations"] == ["user: I switched my editor to Helix",
                                             "assistant: Helix it is."]
        turn = memory.begin_turn("Helix")
        assert "I switched my editor to Helix" in str(turn.api_user_message())
        assert "<memory-context>" in str(turn.api_user_message())
        nothing = memory.begin_turn("zebra")
        assert nothing.contexts == []  # an empty graph answer recalls nothing
        graph_json = json.loads(memory.call_tool("read_graph", {}))
        assert len(graph_json["entities"]) == 1
        bad = json.loads(memory.call_tool("create_entities", {"entities": "not a list"}))
        assert bad["success"] is False and bad["error_type"] == "RemoteToolError"
        assert len(json.loads(memory.call_tool("read_graph", {}))["entities"]) == 1


@pytest.fixture
def remote_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """memoryport serve --http with the holographic provider (it recalls past turns)."""
    from test_mcp_transport import free_port, wait_for_port

    home = tmp_path / "remote"
    home.mkdir()
    (home / "config.yaml").write_text(json.dumps({"memory": {"provider": "holographic"}}))
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "--home", str(home), "serve", "--http", "--port", str(port),
         "--token", "remote-token-123456"], stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", home
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_memoryport_server_as_a_backend(
    tmp_path: Path, remote_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, remote_home = remote_server
    monkeypatch.setenv("REMOTE_MEMORY_TOKEN", "remote-token-123456")
    local = tmp_path / "local"
    write_config(local, {
        "url": url, "token_env": "REMOTE_MEMORY_TOKEN", "tool_prefix": "remote_",
        "prefetch_tool": "recall", "prefetch_field": "context",
        "sync_tool": "remember_turn", "send_identity": True, "call_timeout_s": 4.5,
    })
    with memoryport.open(local) as memory:
        memory.start_session()
        names = {s["name"] for s in memory.tool_schemas()}
        assert {"remote_memory", "remote_session_search", "remote_recall"} <= names
        first = memory.begin_turn("I adopted a beagle named Biscuit")
        memory.end_turn(first, "Congratulations on Biscuit!")
        assert memory.flush(30) == 0
        turn = memory.begin_turn("What is the name of my beagle?")
        sent = str(turn.api_user_message())
        added = json.loads(memory.call_tool(
            "remote_memory", {"action": "add", "target": "user", "content": "Owns a beagle"}
        ))
        session_id = memory.session_id
    assert "Biscuit" in sent and sent.count("<memory-context>") == 1  # one fence, not nested
    assert added["success"] is True
    assert open_curated(remote_home).entries("user") == ["Owns a beagle"]
    with memoryport.open(remote_home) as remote:  # the remote stored the same session id
        messages = remote.session_messages(session_id)
    assert messages[0]["content"] == "I adopted a beagle named Biscuit"


def test_a_dead_server_shows_in_health_and_never_blocks_the_turn(tmp_path: Path) -> None:
    write_config(tmp_path, {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"],
                            "prefetch_tool": "search", "connect_timeout_s": 5})
    with memoryport.open(tmp_path) as memory:
        memory.start_session()
        assert [p.name for p in memory.providers][-1] == "mcp"  # still registered
        turn = memory.begin_turn("anything there?")
        memory.end_turn(turn, "no")
        health = memory.health()["mcp"]
        answer = json.loads(memory.call_tool("search", {}))
    assert turn.contexts == []
    prefetch = health["hooks"]["prefetch"]
    assert prefetch["errors"] == 1 and "cannot connect" in prefetch["last_error"]
    assert answer["success"] is False


def test_a_server_that_never_answers_costs_a_turn_one_timeout(tmp_path: Path) -> None:
    write_config(tmp_path, {"command": sys.executable, "args": ["-c", "import time; "
                            "time.sleep(60)"], "prefetch_tool": "search",
                            "connect_timeout_s": 1, "call_timeout_s": 0.5})
    with memoryport.open(tmp_path) as memory:
        memory.start_session()
        turns = [memory.begin_turn(f"question {n}") for n in range(2)]
        health = memory.health()["mcp"]["hooks"]["prefetch"]
    assert [t.contexts for t in turns] == [[], []]
    assert health["errors"] + health["timeouts"] == 2
    assert "connect" in health["last_error"]


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"command": "node", "url": "http://127.0.0.1:1/mcp"}, "either command or url"),
        ({"command": "node", "protocol": "fancy"}, "protocol"),
        ({"command": "node", "call_timeout_s": 0}, "call_timeout_s"),
        ({"command": "node", "args": {"a": 1}}, "mcp.args"),
        ({"command": "node", "sync_args": "[1, 2]"}, "mcp.sync_args"),
        ({"command": "node", "prefetch_args": "{broken"}, "not valid JSON"),
    ],
)
def test_bad_settings_name_the_problem(
    tmp_path: Path, section: dict[str, Any], says: str
) -> None:
    write_config(tmp_path, section)
    with pytest.raises(ConfigError) as error:
        create_mcp_provider(tmp_path)
    assert says in str(error.value)


def test_settings_accept_strings_for_lists() -> None:
    settings = Settings.from_section(
        {"command": "npx", "args": "-y '@modelcontextprotocol/server-memory'",
         "tools": "search_nodes, read_graph", "env": '{"A": "1"}'}
    )
    assert settings.args == ("-y", "@modelcontextprotocol/server-memory")
    assert settings.tools == ("search_nodes", "read_graph")
    assert settings.env == {"A": "1"}
    assert not McpProvider().is_available()


def test_templates_fill_placeholders_once() -> None:
    from memoryport.providers.mcp.settings import fill

    template = {"text": "user: {user} / assistant: {assistant}", "who": "{user}", "n": 3,
                "list": ["{query}", "{unknown}"]}
    values = {"user": "I typed {assistant}", "assistant": "ok", "query": "q"}
    assert fill(template, values) == {
        "text": "user: I typed {assistant} / assistant: ok", "who": "I typed {assistant}",
        "n": 3, "list": ["q", "{unknown}"],
    }
