"""Opening a SQLite session store: concurrent first open (migrations) and read-only homes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.helpers import as_unprivileged
from memoryport.errors import StoreError
from memoryport.storage.sessions.sqlite import SQLiteSessionStore, migrations

_OPENER = textwrap.dedent(
    """
    import json, os, sys, time
    from memoryport.storage.sessions.sqlite import SQLiteSessionStore
    home, go = sys.argv[1], sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.001)
    try:
        store = SQLiteSessionStore(os.path.join(home, "state.db"))
        sid = store.create_session(source="cli").id
        store.append_message(sid, {"role": "user", "content": "hello walrus"})
        print(json.dumps({"ok": store.applied_migrations()}))
        store.close()
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
    """
)


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize("trial", range(5))
def test_eight_processes_opening_a_fresh_home_at_once_all_succeed(
    tmp_path: Path, trial: int
) -> None:
    home, go = tmp_path / "home", tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(home), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for _ in range(8)
    ]
    time.sleep(1.5)  # let every interpreter start and wait on the go file
    go.write_text("go")
    outputs = [p.communicate(timeout=120) for p in procs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    names = [name for name, _ in migrations.MIGRATIONS]
    assert results == [{"ok": names}] * 8, [err[-2000:] for _, err in outputs]
    store = SQLiteSessionStore(home / "state.db")
    assert len(store.search_messages("walrus").hits) == 8
    store.check_index()
    store.close()


# ---------------------------------------------------------------------------- read-only
#
# Tests run as root in CI, where file modes do not stop root. The checks therefore run in a
# forked child that first drops to the unprivileged ``nobody`` user (when root), so the
# permission bits really apply. The interpreter lives under /root, which ``nobody`` cannot
# read, hence fork (everything already imported) rather than a new interpreter.


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory ``nobody`` can traverse (pytest's tmp_path parents are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="mp-open-"))
    path.chmod(0o755)
    yield path
    for sub in path.rglob("*"):
        if sub.is_dir():
            sub.chmod(0o700)
    shutil.rmtree(path)


def _read_only_session(db: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    store = SQLiteSessionStore(db)
    out["read_only"] = store.read_only
    out["hits"] = len(store.search_messages("walrus").hits)
    out["sessions"] = len(store.list_sessions())
    for name, write in (
        ("create", lambda: store.create_session(source="cli")),
        ("set_meta", lambda: store.set_meta("k", "v")),
    ):
        try:
            write()
            out[name] = "allowed"
        except StoreError as exc:
            out[name] = str(exc)
    store.close()
    return out


def test_read_only_home_opens_read_only_and_says_so_on_write(shared_dir: Path) -> None:
    home = shared_dir / "home"
    store = SQLiteSessionStore(home / "state.db")
    sid = store.create_session(source="cli").id
    store.append_message(sid, {"role": "user", "content": "a walrus in a read-only home"})
    store.close()
    (home / "state.db").chmod(0o444)
    home.chmod(0o555)  # neither the directory nor the file is writable
    out = as_unprivileged(lambda: _read_only_session(home / "state.db"))
    assert out["read_only"] is True
    assert out["hits"] == 1 and out["sessions"] == 1
    assert "read-only" in out["create"] and "read-only" in out["set_meta"]


def test_missing_database_in_an_unwritable_directory_says_read_only(shared_dir: Path) -> None:
    home = shared_dir / "home"
    home.mkdir()
    home.chmod(0o555)

    def attempt() -> dict[str, Any]:
        try:
            SQLiteSessionStore(home / "state.db")
        except StoreError as exc:
            return {"error": str(exc)}
        return {"error": ""}

    assert "read-only" in as_unprivileged(attempt)["error"]
    assert not (home / "state.db").exists()


def test_writable_store_reports_not_read_only(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    assert store.read_only is False
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get_session("x")
