"""``memoryport.admin.doctor``: ``diagnose(home)`` returns typed findings; nothing changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fixtures.helpers import isolate
from memoryport.admin.doctor import Check, diagnose, migration_status
from memoryport.admin.sessions import open_store


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolate(tmp_path, monkeypatch)
    home.mkdir(mode=0o700, parents=True)
    home.chmod(0o700)
    return home


def test_diagnose_a_healthy_home(home: Path) -> None:
    open_store(home).close()  # state.db with every migration applied
    checks = diagnose(home)
    assert all(isinstance(c, Check) for c in checks)
    assert [c for c in checks if c.status == "fail"] == []
    names = {c.name for c in checks}
    assert {"home", ".env", "config", "sqlite fts5", "state.db", "sessions", "provider"} <= names
    state = next(c for c in checks if c.name == "state.db")
    assert state.status == "ok" and "schema up to date" in state.detail
    assert [p.name for p in home.iterdir() if p.name.startswith(".doctor")] == []


def test_diagnose_reports_an_old_and_a_newer_schema(home: Path) -> None:
    conn = sqlite3.connect(home / "state.db")
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    conn.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 0)")
    conn.commit()
    conn.close()
    state = [c for c in diagnose(home) if c.name == "state.db"]
    assert state[0].status == "fail" and state[0].fix == "upgrade memoryport"


def test_migration_status() -> None:
    known = migration_status([]).known
    assert known and known == sorted(known)
    fresh = migration_status([])
    assert fresh.pending == known and fresh.unknown == [] and fresh.current == "none"
    partial = migration_status(known[:1])
    assert partial.pending == known[1:] and partial.current == known[0]
    newer = migration_status([*known, "m999_x"])
    assert newer.pending == [] and newer.unknown == ["m999_x"]
