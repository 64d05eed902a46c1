"""``memoryport.admin.sessions``: a home's session store for shells, on a real SQLite file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fixtures.helpers import isolate
from memoryport.admin import sessions as admin_sessions
from memoryport.config import set_value
from memoryport.errors import ConfigError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolate(tmp_path, monkeypatch)
    home.mkdir(parents=True)
    return home


def _fill(home: Path, sessions: int) -> None:
    with admin_sessions.open_store(home) as store:
        for number in range(sessions):
            store.create_session(f"s{number:04d}", source="cli")
            store.append_message(f"s{number:04d}", {"role": "user", "content": f"hello {number}"})


def test_open_store_uses_the_homes_state_db_and_user_scope(home: Path) -> None:
    with admin_sessions.open_store(home, "alice") as store:
        store.create_session("a1", source="cli", user_id="alice")
    assert (home / "state.db").is_file()
    with admin_sessions.open_store(home, "bob") as store:
        assert not admin_sessions.session_exists(store, "a1")
    with admin_sessions.open_store(home, "alice") as store:
        assert admin_sessions.session_exists(store, "a1")


def test_open_store_reports_a_postgres_backend_without_dsn(home: Path) -> None:
    set_value(home, "sessions.backend", "postgres")
    with pytest.raises(ConfigError, match=r"sessions\.dsn is empty"):
        admin_sessions.open_store(home)


def test_all_sessions_pages_past_one_page(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_sessions, "PAGE_SIZE", 3)
    _fill(home, 7)
    with admin_sessions.open_store(home) as store:
        rows = admin_sessions.all_sessions(store)
    assert sorted(r.session.id for r in rows) == [f"s{n:04d}" for n in range(7)]


def test_export_counts_sessions_and_messages_and_reports_progress(home: Path) -> None:
    _fill(home, 3)
    seen: list[tuple[str, int, int]] = []
    out = io.StringIO()
    with admin_sessions.open_store(home) as store:
        counts = admin_sessions.export(
            store, out, progress=lambda phase, done, total: seen.append((phase, done, total))
        )
    assert (counts.sessions, counts.messages) == (3, 3)
    assert len(out.getvalue().splitlines()) == 1 + 3 + 3
    assert seen[-1] == ("exporting", 3, 3)
    json.loads(out.getvalue().splitlines()[0])  # the header is JSON


def test_rebuild_and_verify_reports_the_verifying_phase(home: Path) -> None:
    _fill(home, 2)
    phases: list[str] = []
    with admin_sessions.open_store(home) as store:
        admin_sessions.rebuild_and_verify(store, lambda phase, done, total: phases.append(phase))
        hits = store.search_messages("hello").hits
    assert phases[-2:] == ["verifying", "verifying"]
    assert len(hits) == 2
