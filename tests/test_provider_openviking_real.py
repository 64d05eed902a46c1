"""The ``openviking`` provider against the real OpenViking server (``openviking`` 0.5.2
from PyPI, installed in its own environment by ``make openviking-server``: its
dependencies conflict with memoryport's), started offline on 127.0.0.1 with its embedding
and chat models pointed at a loopback OpenAI-compatible server
(``doubles.openviking_server.FakeModels``: bag-of-words embeddings, first-sentence
summaries). One server for the module."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from doubles.base_server import write_home
from doubles.openviking_server import FakeModels
from memoryport import open as open_memory
from memoryport.api import Memory

SERVER = Path(__file__).resolve().parents[1] / ".venv" / "openviking" / "bin" / \
    "openviking-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"openviking-server exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"openviking-server did not answer {url} in {seconds:g}s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert SERVER.exists(), "run `make openviking-server` (the real server, its own venv)"
    root = tmp_path_factory.mktemp("openviking")
    models = FakeModels().start()
    api = f"{models.base_url}/v1"
    config = {"storage": {"workspace": str(root / "ws")},
              "embedding": {"dense": {"provider": "openai", "api_base": api, "api_key": "x",
                                      "model": "fake-embed",
                                      "dimension": FakeModels.dimension}},
              "vlm": {"provider": "openai", "api_base": api, "api_key": "x",
                      "model": "fake-chat"}}
    (root / "ov.conf").write_text(json.dumps(config), encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "HOME": str(root)}
    log = (root / "server.log").open("wb")
    process = subprocess.Popen([str(SERVER), "--config", str(root / "ov.conf"), "--host",
                                "127.0.0.1", "--port", str(port)], env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        _wait(f"http://127.0.0.1:{port}/health", process, 120)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        models.stop()


def _memory(home: Path, endpoint: str, user_id: str) -> Memory:
    write_home(home, "openviking", {"endpoint": endpoint, "timeout_s": 30.0},
               prefetch_deadline_s=30.0)
    memory = open_memory(home, None, user_id, platform="cli")
    memory.start_session()
    return memory


def _tool(memory: Memory, name: str, **args: Any) -> dict[str, Any]:
    return json.loads(memory.call_tool(name, args))  # type: ignore[no-any-return]


def _settle(endpoint: str) -> None:
    """Wait until the server has embedded and summarized what it was given."""
    httpx.post(f"{endpoint}/api/v1/system/wait", json={}, timeout=60.0)


def test_a_full_turn_and_every_tool_on_the_real_server(tmp_path: Path, server: str) -> None:
    memory = _memory(tmp_path / "home", server, "ana")
    saved = _tool(memory, "viking_remember",
                  content="Ana waters the orchids every Sunday morning.")
    assert saved["success"], saved
    _settle(server)
    listing = _tool(memory, "viking_browse")
    assert [e["uri"] for e in listing["entries"]] == [saved["uri"]]
    details = _tool(memory, "viking_read", uri=saved["uri"], level="details")
    assert details["content"] == "Ana waters the orchids every Sunday morning."
    found = _tool(memory, "viking_search", query="orchids sunday watering")
    assert saved["uri"] in [r["uri"] for r in found["results"]], found
    turn = memory.begin_turn("When does Ana water the orchids?")
    sent = str(turn.api_user_message())
    memory.end_turn(turn, "On Sunday mornings.")
    memory.flush()
    assert "<memory-context>" in sent and saved["uri"] in sent.partition("<memory-context>")[2]
    missing = _tool(memory, "viking_read", uri=saved["uri"] + ".nope", level="details")
    assert missing["success"] is False and missing["backend"] == "openviking"
    sid = f"memoryport-default-ana-{memory.session_id}"
    memory.close()  # commits the OpenViking session (session-end extraction)
    session = httpx.get(f"{server}/api/v1/sessions/{sid}", timeout=30.0,
                        headers={"X-OpenViking-User": "ana"}).json()
    assert session["status"] == "ok", session
    result = session["result"]
    assert result["created_by_user_id"] == "ana" and result["total_message_count"] == 2
    assert result["commit_count"] == 1  # the turn went in; the session end committed it
