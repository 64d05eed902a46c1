"""The UI over a home whose session store is PostgreSQL (the real server of the test
session, a fresh database for this module): list, search with highlights, a session view
and forgetting a message work as on SQLite."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml
from starlette.testclient import TestClient

import memoryport
import pgserver
from memoryport.admin.sessions import open_store
from memoryport.ui import create_app

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_home(pg_server: pgserver.PgServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Path]:
    name = f"ui_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = pg_server.uri.replace("/postgres?", f"/{name}?") if "/postgres?" in pg_server.uri \
        else re.sub(r"/postgres$", f"/{name}", pg_server.uri)
    home = tmp_path_factory.mktemp("pg") / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"memory": {"provider": ""}, "storage": {"backend": "postgres", "dsn": dsn}}))
    try:
        yield home
    finally:
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_sessions_pages_on_postgres(pg_home: Path) -> None:
    with memoryport.open(pg_home) as memory:
        memory.start_session(title="<b>Kayak</b> trip")
        memory.end_turn(memory.begin_turn("We paddled the kayak to Berlenga"), "Lovely.")
        sid = memory.session_id
    client = TestClient(create_app(pg_home), base_url="http://127.0.0.1:8766")
    listing = client.get("/sessions").text
    assert "&lt;b&gt;Kayak&lt;/b&gt; trip" in listing and "<b>Kayak" not in listing
    hits = client.get("/sessions/results", params={"q": "kayak"}).text
    assert "<mark>kayak</mark>" in hits.lower()
    page = client.get(f"/sessions/{sid}").text
    assert "We paddled the kayak to Berlenga" in page
    with open_store(pg_home) as store:
        first = store.get_messages(sid)[0]
    confirm = client.get(f"/sessions/{sid}/forget", params={"message": first.id}).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', confirm)
    assert csrf
    done = client.post(f"/sessions/{sid}/forget",
                       data={"csrf": csrf.group(1), "message": str(first.id)})
    assert "forgot 1 message" in done.text
    with open_store(pg_home) as store:
        assert [m.content for m in store.get_messages(sid)] == ["Lovely."]
