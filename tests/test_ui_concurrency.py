"""The UI while the agent writes: 8 processes append turns (and curated entries) to one
home while the UI lists, searches and writes through its handlers. No request fails, no
write is lost or overwritten (every process's turns and entries are there at the end)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from starlette.testclient import TestClient

import memoryport
from memoryport.admin.curated import open_curated
from memoryport.admin.sessions import open_store
from memoryport.ui import create_app

WRITERS = 8
TURNS = 8

WRITER = textwrap.dedent("""
    import sys, memoryport
    home, n, turns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with memoryport.open(home, platform="agent") as memory:
        memory.start_session(source="agent", title=f"writer {n}")
        for i in range(turns):
            turn = memory.begin_turn(f"writer{n} turn{i} zebra{n} question")
            if i == 0:
                turn.handle_tool_call("memory", {"action": "add", "target": "memory",
                                                 "content": f"Writer {n} was here"})
            memory.end_turn(turn, f"answer {i} from writer{n}")
""")


def test_ui_lists_searches_and_writes_while_eight_processes_append(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with memoryport.open(home) as memory:  # create the home and its stores once
        memory.start_session()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(home), str(n), str(TURNS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(WRITERS)]
    client = TestClient(create_app(home), base_url="http://127.0.0.1:8766")
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/memory").text)
    assert csrf
    requests = 0
    added = False
    while any(p.poll() is None for p in procs) or requests < 10:
        for url in ("/sessions", "/sessions/results?q=zebra3", "/memory", "/audit"):
            response = client.get(url)
            assert response.status_code == 200, (url, response.text[:300])
            requests += 1
        if not added:
            done = client.post("/memory", data={"csrf": csrf.group(1), "op": "add",
                                                "target": "memory", "content": "UI was here"})
            assert done.status_code == 200 and 'id="error"' not in done.text
            added = True
        time.sleep(0.02)
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    entries = open_curated(home).entries("memory")
    assert sorted(entries) == sorted(["UI was here", *[f"Writer {n} was here"
                                                       for n in range(WRITERS)]])
    with open_store(home) as store:
        rows = store.list_sessions(sources=["agent"], limit=100)
        assert sorted(r.session.title for r in rows) == sorted(f"writer {n}"
                                                              for n in range(WRITERS))
        assert all(r.session.message_count >= 2 * TURNS for r in rows)
    page = client.get("/sessions/results", params={"q": "zebra5"}).text
    assert "writer 5" in page and "<mark>zebra5</mark>" in page
