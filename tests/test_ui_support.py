"""Helpers for the UI tests (no tests here): a seeded home with hostile stored text, and a
real uvicorn server on 127.0.0.1 in a thread, stopped on exit."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from click.testing import CliRunner
from starlette.applications import Starlette

import memoryport
from memoryport.cli import main

XSS_ENTRY = "<script>window.__xss = 'entry'</script>Prefers <b>bold</b> answers"
XSS_TITLE = "<img src=x onerror=\"window.__xss='title'\">Trip planning"
XSS_MESSAGE = "My editor is Helix <script>window.__xss='message'</script>"


def seed_home(home: Path, *, facts: bool = True) -> dict[str, str]:
    """A home with curated entries (one hostile), two linked sessions (hostile title and
    message, a tool call) and, with ``facts``, the holographic fact store with one
    superseded fact. Returns the session ids."""
    if facts:
        result = CliRunner().invoke(
            main, ["--home", str(home), "config", "set", "memory.provider", "holographic"])
        assert result.exit_code == 0, result.output
    with memoryport.open(home, platform="cli") as memory:
        memory.start_session(source="cli", title=XSS_TITLE)
        parent = memory.session_id
        turn = memory.begin_turn(XSS_MESSAGE)
        turn.handle_tool_call("memory", {"action": "add", "target": "memory",
                                         "content": "Editor: Helix"})
        turn.handle_tool_call("memory", {"action": "add", "target": "user",
                                         "content": XSS_ENTRY})
        if facts:
            turn.handle_tool_call("fact_store", {"action": "add",
                                                 "content": "The user lives in Lisbon"})
        memory.end_turn(turn, "Noted: Helix.")
        memory.end_turn(memory.begin_turn("I live in Lisbon"), "Lisbon, noted.")
        turn = memory.begin_turn("I moved to Porto last week")
        if facts:
            turn.handle_tool_call("fact_store", {"action": "add",
                                                 "content": "The user lives in Porto"})
        memory.end_turn(turn, "Porto it is.")
        memory.switch_session(reason="branch", title="Follow-up on the trip")
        child = memory.session_id
        memory.end_turn(memory.begin_turn("Which trains go to Porto?"), "The Alfa Pendular.")
        memory.flush(10)
    return {"parent": parent, "child": child}


@contextmanager
def serve(app: Starlette) -> Iterator[str]:
    """Run ``app`` on a free 127.0.0.1 port; yield its base URL; stop it afterwards."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the UI server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
