"""``memoryport ui`` handlers through Starlette's TestClient over a real seeded home:
every page renders, stored markup is escaped, writes need the CSRF token and go through
the core (audited, honouring the pause), and the access rules (loopback host names,
tokens, refusing a public bind without a token) hold."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from memoryport.admin import audit
from memoryport.admin.curated import open_curated
from memoryport.admin.pause import pause_state, resume
from memoryport.admin.sessions import open_store
from memoryport.cli import main
from memoryport.errors import MemoryportError
from memoryport.ui import check_bind, create_app
from test_ui_support import XSS_ENTRY, XSS_MESSAGE, XSS_TITLE, seed_home

BASE = "http://127.0.0.1:8766"
PAGES = ["/memory", "/memory/history", "/memory/history?target=user",
         "/memory/revision?id=user:1", "/sessions", "/sessions?q=helix", "/facts", "/facts/1",
         "/providers", "/pause", "/audit"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    home = tmp_path_factory.mktemp("ui") / "home"
    return home, seed_home(home)


@pytest.fixture()
def client(seeded: tuple[Path, dict[str, str]]) -> TestClient:
    return TestClient(create_app(seeded[0]), base_url=BASE)


def _csrf(client: TestClient) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/memory").text)
    assert found
    return found.group(1)


def test_every_page_renders_and_stored_markup_stays_text(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    pages = [*PAGES, f"/sessions/{seeded[1]['parent']}", f"/sessions/{seeded[1]['child']}"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, (page, response.text[:500])
        for raw in (XSS_ENTRY, XSS_TITLE, XSS_MESSAGE, "<script>window", "<img src=x"):
            assert raw not in response.text, page
        assert response.headers["content-security-policy"].startswith("default-src 'self'")
    assert "&lt;script&gt;window.__xss = &#39;entry&#39;" in client.get("/memory").text
    assert "&lt;img src=x onerror=" in client.get("/sessions").text


def test_session_view_shows_lineage_tool_calls_and_search_highlights(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    parent, child = seeded[1]["parent"], seeded[1]["child"]
    page = client.get(f"/sessions/{child}").text
    assert f'href="/sessions/{parent}"' in page and "Parent:" in page
    page = client.get(f"/sessions/{parent}").text
    assert "Children:" in page and "Follow-up on the trip" in page
    assert "<code>memory</code>" in page and "&#34;action&#34;: &#34;add&#34;" in page
    hits = client.get("/sessions/results", params={"q": "helix"}).text
    assert "<mark>Helix</mark>" in hits or "<mark>helix</mark>" in hits
    phrase = client.get("/sessions/results", params={"q": '"trains go"'}).text
    assert "<mark>" in phrase and "Follow-up on the trip" in phrase
    tools = client.get("/sessions", params={"tools": "1"}).text
    assert "Follow-up on the trip" not in tools and "Trip planning" in tools
    assert "No sessions." in client.get("/sessions", params={"user": "nobody"}).text
    assert "No sessions." in client.get("/sessions", params={"until": "2000-01-01"}).text
    assert "Trip planning" in client.get("/sessions", params={"since": "2000-01-01"}).text


def test_facts_pages_show_trust_contradictions_chain_and_why(client: TestClient) -> None:
    page = client.get("/facts").text
    assert "The user lives in Porto" in page and 'class="trust"' in page
    assert "Contradictions" in page and "<del>lisbon</del>" in page.lower()
    retired = client.get("/facts", params={"retired": "1"}).text
    assert "retired" in retired
    found = client.get("/facts", params={"q": "Porto"}).text
    assert "The user lives in Porto" in found
    why = client.get("/facts/1").text
    assert "Why (provenance)" in why and "Supersession chain" in why and "/sessions/" in why
    assert client.get("/facts/999").status_code == 404
    assert client.get("/facts/abc").status_code == 400


def test_writes_without_the_csrf_token_are_refused_and_change_nothing(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    home, ids = seeded
    before = open_curated(home).entries("memory")
    for url, data in [("/memory", {"op": "add", "target": "memory", "content": "sneaky"}),
                      ("/memory", {"op": "add", "target": "memory", "content": "x",
                                   "csrf": "wrong"}),
                      ("/memory/restore", {"id": "memory:1"}),
                      ("/pause", {"writes": "on"}),
                      (f"/sessions/{ids['parent']}/forget", {}),
                      ("/audit/retention", {"days": "1"})]:
        response = client.post(url, data=data, follow_redirects=False)
        assert response.status_code == 403, url
        assert "CSRF" in response.text
    assert open_curated(home).entries("memory") == before
    assert pause_state(home).active is False


def test_add_edit_remove_restore_go_through_the_tool_path_and_are_audited(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    home, csrf = seeded[0], _csrf(client)
    page = client.post("/memory", data={"csrf": csrf, "op": "add", "target": "memory",
                                        "content": "Timezone: Europe/Lisbon"}).text
    assert "Entry added." in page and "Timezone: Europe/Lisbon" in page
    client.post("/memory", data={"csrf": csrf, "op": "replace", "target": "memory",
                                 "old_text": "Timezone: Europe/Lisbon",
                                 "content": "Timezone: Europe/Porto"})
    assert "Timezone: Europe/Porto" in open_curated(home).entries("memory")
    drift = client.post("/memory", data={"csrf": csrf, "op": "replace", "target": "memory",
                                         "old_text": "gone text", "content": "y"}).text
    assert 'id="error"' in drift
    client.post("/memory", data={"csrf": csrf, "op": "remove", "target": "memory",
                                 "old_text": "Timezone: Europe/Porto"})
    assert "Timezone: Europe/Porto" not in open_curated(home).entries("memory")
    history = client.get("/memory/history", params={"target": "memory",
                                                    "entry": "Timezone: Europe/Porto"}).text
    revs = re.findall(r"/memory/revision\?id=(memory%3A\d+)", history)
    assert len(revs) == 2  # the replace that wrote it and the remove
    removed = revs[0].replace("%3A", ":")
    client.post("/memory/restore", data={"csrf": csrf, "id": removed, "before": "1"})
    assert "Timezone: Europe/Porto" in open_curated(home).entries("memory")
    ui_writes = [e for e in audit.events(home, shell="ui", kind="write")]
    actions = [e.action for e in ui_writes]
    assert {"memory.add", "memory.replace", "memory.remove", "memory.restore"} <= set(actions)
    assert all(e.revision for e in ui_writes if "refused" not in e.action)


def test_forget_a_message_after_confirmation_and_export(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    home, child = seeded[0], seeded[1]["child"]
    with open_store(home) as store:
        first = store.get_messages(child)[0]
    confirm = client.get(f"/sessions/{child}/forget", params={"message": first.id}).text
    assert "Which trains go to Porto?" in confirm and 'id="confirm-forget"' in confirm
    exported = client.get(f"/sessions/{child}/export")
    lines = [json.loads(line) for line in exported.text.splitlines()]
    assert "attachment" in exported.headers["content-disposition"] and len(lines) >= 2
    done = client.post(f"/sessions/{child}/forget", data={"csrf": _csrf(client),
                                                          "message": str(first.id)})
    assert done.status_code == 200 and "forgot 1 message" in done.text
    with open_store(home) as store:
        assert first.id not in [m.id for m in store.get_messages(child)]
    assert audit.events(home, action="sessions.forget_message")


def test_pause_from_the_ui_refuses_writes_everywhere_until_resumed(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    home, csrf = seeded[0], _csrf(client)
    try:
        page = client.post("/pause", data={"csrf": csrf, "writes": "on"}).text
        assert "paused: writes" in page and 'id="pause-banner"' in page
        refused = client.post("/memory", data={"csrf": csrf, "op": "add", "target": "memory",
                                               "content": "while paused"}).text
        assert "Memory writes are paused" in refused
        assert "while paused" not in open_curated(home).entries("memory")
        blocked = client.post("/memory/restore", data={"csrf": csrf, "id": "memory:1"}).text
        assert "Memory writes are paused" in blocked and "the restore was not made" in blocked
        forget = client.post(f"/sessions/{seeded[1]['parent']}/forget", data={"csrf": csrf})
        assert forget.status_code == 409
        page = client.post("/pause", data={"csrf": csrf, "resume": "1"}).text
        assert "resumed" in page and pause_state(home).active is False
    finally:
        resume(home)


def test_audit_page_filters_and_retention(client: TestClient) -> None:
    client.get("/memory")
    page = client.get("/audit", params={"shell": "ui", "kind": "read"}).text
    assert "memory.list" in page
    bad = client.get("/audit", params={"since": "someday"}).text
    assert "use a duration such as 30m" in bad
    csrf = _csrf(client)
    wrong = client.post("/audit/retention", data={"csrf": csrf, "days": "-3"}).text
    assert "retention must be a whole number" in wrong
    ok = client.post("/audit/retention", data={"csrf": csrf, "days": "120"}).text
    assert "retention set to 120 days" in ok


def test_host_names_tokens_and_binds(seeded: tuple[Path, dict[str, str]]) -> None:
    home = seeded[0]
    rebinding = TestClient(create_app(home), base_url="http://evil.example:8766")
    assert rebinding.get("/memory").status_code == 421
    locked = TestClient(create_app(home, token="s3cret"), base_url="http://192.0.2.1:8766")
    assert locked.get("/memory").status_code == 401
    assert locked.get("/memory", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert locked.get("/memory", params={"token": "s3cret"}).status_code == 200
    assert locked.get("/memory").status_code == 200  # the cookie set by ?token=
    with pytest.raises(MemoryportError, match="without a token"):
        check_bind("0.0.0.0", "")
    check_bind("0.0.0.0", "s3cret")
    check_bind("::1", "")
    check_bind("localhost", "")


def test_cli_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--home", str(tmp_path / "h"), "ui", "--host",
                                       "0.0.0.0"], env={"MEMORYPORT_UI_TOKEN": ""})
    assert result.exit_code == 1
    assert "refusing to listen on '0.0.0.0' without a token" in result.output


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_memoryport_ui_serves_the_home_until_stopped(tmp_path: Path) -> None:
    home, port = tmp_path / "home", _free_port()
    env = {**os.environ, "MEMORYPORT_UI_TOKEN": ""}
    command = [sys.executable, "-c", "from memoryport.cli import main; main()",
               "--home", str(home), "ui", "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/memory", timeout=5) as r:
                    assert r.status == 200 and "Curated memory" in r.read().decode()
                    break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_a_long_session_pages_and_history_rows_have_one_click_undo(
        client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    with open_store(seeded[0]) as store:
        store.create_session("long-one", source="cli", title="Long one")
        store.append_messages("long-one", [{"role": "user", "content": f"line {i}"}
                                           for i in range(510)])
    first = client.get("/sessions/long-one").text
    assert "Messages 1-500 of 510." in first and "line 499" in first and "line 500" not in first
    later = client.get("/sessions/long-one", params={"offset": "500"}).text
    assert "line 509" in later and "line 499" not in later and "Earlier" in later
    history = client.get("/memory/history").text
    assert history.count('class="inline undo"') == history.count('class="revision"') > 0


def test_providers_page_masks_secrets(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "memory:\n  provider: mentisdb\nmentisdb:\n  api_key: sk-very-secret-123\n")
    page = TestClient(create_app(home), base_url=BASE).get("/providers").text
    assert "mentisdb" in page and "<th>config api_key</th><td>set</td>" in page
    assert "sk-very-secret-123" not in page


def test_providers_page_probes_health(client: TestClient) -> None:
    page = client.get("/providers").text
    assert "holographic" in page and "Probe health" in page
    probed = client.get("/providers", params={"probe": "1"}).text
    assert 'class="breaker">closed<' in probed and "<td>prefetch</td>" in probed


def test_per_user_files(client: TestClient, seeded: tuple[Path, dict[str, str]]) -> None:
    home = seeded[0]
    page = client.post("/memory", data={"csrf": _csrf(client), "user": "ann", "op": "add",
                                        "target": "user", "content": "Ann prefers tea"}).text
    assert "Entry added." in page and 'value="ann"' in page
    assert open_curated(home, "ann").entries("user") == ["Ann prefers tea"]
    assert "Ann prefers tea" not in open_curated(home).entries("user")
    assert "Ann prefers tea" not in client.get("/memory").text
    history = client.get("/memory/history", params={"user": "ann", "target": "user"}).text
    assert "Ann prefers tea" in history
    odd = client.get("/memory", params={"user": "<b>../x</b>"})
    assert odd.status_code == 200 and "<b>../x</b>" not in odd.text
