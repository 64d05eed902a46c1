"""``memoryport sessions`` CLI: option bounds, export paths, import errors, prune, display,
progress bars (a real pty), read-only homes, and the PostgreSQL backend."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import pgserver
from fixtures.helpers import as_unprivileged
from memoryport.cli import main
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "memory", "arguments": '{"action": "add", "content": "likes Lisbon"}'},
}


def _seed(home: Path) -> None:
    store = SQLiteSessionStore(home / "state.db")
    store.create_session("s1", source="cli", title="Trip \x1b]0;pwned\x07")
    store.append_messages(
        "s1",
        [
            {"role": "user", "content": "book Lisbon \x1b[2J now"},
            {"role": "assistant", "content": "", "tool_calls": [_CALL]},
        ],
    )
    store.close()


def _run(home: Path, *args: str, input: str | bytes | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sessions", *args, "--home", str(home)], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--limit", str(2**70)),
        ("list", "--limit", "-1"),
        ("list", "--limit", "0"),
        ("search", "x", "--limit", "-1"),
        ("search", "x", "--limit", str(10**30)),
        ("forget", "--message", "-5", "--yes"),
        ("prune", "--older-than", "-1d"),
        ("prune", "--older-than", "soon"),
    ],
)
def test_numeric_options_are_bounded(tmp_path: Path, args: tuple[str, ...]) -> None:
    code, out = _run(tmp_path, *args)
    assert code == 2 and "Invalid value" in out and "Traceback" not in out


def test_list_all_and_json_shapes(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    for i in range(25):
        store.create_session(f"s{i:02d}", source="cli", started_at=1000.0 + i)
    store.close()
    code, out = _run(tmp_path, "list", "--json")
    data = json.loads(out)
    assert code == 0 and data["count"] == 20 == len(data["sessions"])
    code, out = _run(tmp_path, "list", "--all", "--json")
    assert json.loads(out)["count"] == 25
    code, out = _run(tmp_path, "search", "nothing-here", "--json")
    assert set(json.loads(out)) >= {"results", "count", "query"}


def test_export_paths(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    code, out = _run(tmp_path / "h", "export", "-o", str(empty))
    assert code == 0 and "exported 0 sessions (0 messages)" in out
    assert json.loads(empty.read_text())["sessions"] == 0
    assert _run(tmp_path / "h2", "import", str(empty))[0] == 0
    missing = tmp_path / "no" / "such" / "dir" / "x.jsonl"
    code, out = _run(tmp_path / "h", "export", "-o", str(missing))
    assert code == 1 and "does not exist" in out and not missing.parent.exists()
    code, out = _run(tmp_path / "h", "export", "-o", str(tmp_path))
    assert code == 2 and "is a directory" in out
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_import_errors_name_file_and_line_and_store_nothing(tmp_path: Path) -> None:
    _seed(tmp_path / "a")
    dump = tmp_path / "dump.jsonl"
    assert _run(tmp_path / "a", "export", "-o", str(dump))[0] == 0
    lines = dump.read_bytes().splitlines()
    dump.write_bytes(b"\n".join([*lines[:2], b"\xc3\x28 latin-1?", *lines[2:]]))
    code, out = _run(tmp_path / "b", "import", str(dump))
    assert code == 1 and f"{dump}: line 3: not valid UTF-8" in out
    assert "nothing was imported" in out
    code, out = _run(tmp_path / "b", "list", "--all-sources", "--json")
    assert json.loads(out)["count"] == 0
    code, out = _run(tmp_path / "b", "import", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "cannot read" in out and "No such file" in out
    code, out = _run(tmp_path / "b", "import", "-", input=b"\xff\n")
    assert code == 1 and "stdin: line 1: not valid UTF-8" in out


def test_show_and_search_render_tool_calls_and_escape_controls(tmp_path: Path) -> None:
    _seed(tmp_path)
    code, out = _run(tmp_path, "show", "s1")
    assert code == 0 and '→ memory(add, content: "likes Lisbon")' in out
    assert "\x1b" not in out and "\x07" not in out and "\\e]0;pwned\\a" in out
    assert "\\e[2J" in out
    code, out = _run(tmp_path, "search", "lisbon", "--json")
    snippets = [r["snippet"] for r in json.loads(out)["results"]]
    assert '→ memory(add, content: "likes >>>Lisbon<<<")' in snippets
    assert not any('"type"' in s for s in snippets)
    code, out = _run(tmp_path, "search", "lisbon")
    assert code == 0 and "\x1b" not in out and "memory(add" in out
    code, out = _run(tmp_path, "list")
    assert code == 0 and "\x1b" not in out and "\x07" not in out


def test_prune_command(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    store.create_session("old-empty", source="cli", started_at=time.time() - 5 * 86400)
    store.create_session("new-empty", source="cli")
    store.close()
    code, out = _run(tmp_path, "prune", "--dry-run", "--json")
    data = json.loads(out)
    assert code == 0 and data["dry_run"] and [s["id"] for s in data["sessions"]] == ["old-empty"]
    code, out = _run(tmp_path, "prune", "--older-than", "2d")
    assert code == 0 and "removed 1 empty session" in out and "old-empty" in out
    code, out = _run(tmp_path, "list", "--json")
    assert [s["id"] for s in json.loads(out)["sessions"]] == ["new-empty"]


def test_forget_declined_exits_0(tmp_path: Path) -> None:
    _seed(tmp_path)
    code, out = _run(tmp_path, "forget", "--session", "s1", input="n\n")
    assert code == 0 and "Nothing deleted." in out
    assert json.loads(_run(tmp_path, "list", "--json")[1])["count"] == 1


def test_read_only_home_reads_and_refuses_writes() -> None:
    home = Path(tempfile.mkdtemp(prefix="mp-ro-"))
    try:
        _seed(home)
        os.chmod(home / "state.db", 0o444)
        os.chmod(home, 0o555)

        def attempt() -> dict[str, Any]:
            runner = CliRunner()
            out: dict[str, Any] = {}
            for name, args in {
                "list": ["list", "--json"],
                "search": ["search", "lisbon", "--json"],
                "show": ["show", "s1"],
                "export": ["export"],
                "prune": ["prune", "--older-than", "0"],
                "rebuild": ["rebuild-index"],
            }.items():
                result = runner.invoke(main, ["sessions", *args, "--home", str(home)])
                out[name] = [result.exit_code, result.output]
            return out

        out = as_unprivileged(attempt)
        for name in ("list", "search", "show", "export"):
            assert out[name][0] == 0, out[name]
        assert json.loads(out["list"][1])["count"] == 1
        for name in ("prune", "rebuild"):
            assert out[name][0] == 1 and "read-only" in out[name][1], out[name]
    finally:
        os.chmod(home, 0o755)
        shutil.rmtree(home)


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    _seed(tmp_path)
    script = "from memoryport.cli import main; main()"
    args = [sys.executable, "-c", script, "sessions", "export", "--home", str(tmp_path)]
    master, slave = pty.openpty()
    out_file = tmp_path / "out.jsonl"
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.run(
        [*args, "-o", str(out_file)], stderr=slave, stdout=subprocess.PIPE, env=env, timeout=60
    )
    os.close(slave)
    shown = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert proc.returncode == 0
    assert b"exporting" in shown and b"2/2" in shown, shown
    piped = subprocess.run([*args, "-o", str(out_file)], capture_output=True, env=env, timeout=60)
    assert piped.returncode == 0 and b"exporting" not in piped.stderr
    assert piped.stderr.decode().strip().startswith("exported 1 session")


def test_export_import_on_postgres(tmp_path: Path, pg_server: pgserver.PgServer) -> None:
    _seed(tmp_path / "lite")
    dump = tmp_path / "dump.jsonl"
    assert _run(tmp_path / "lite", "export", "-o", str(dump))[0] == 0
    home = tmp_path / "pg"
    home.mkdir()
    dsn = {"backend": "postgres", "dsn": pg_server.uri}
    (home / "config.yaml").write_text(yaml.safe_dump({"storage": dsn}))
    try:
        code, out = _run(home, "import", str(dump))
        assert code == 0 and "imported 1 session (2 messages)" in out, out
        code, out = _run(home, "import", str(dump), "--on-conflict", "error")
        assert code == 1 and "nothing was imported" in out
        again = tmp_path / "again.jsonl"
        assert _run(home, "export", "-o", str(again))[0] == 0
        assert again.read_text() == dump.read_text()
        assert _run(home, "rebuild-index", "--json")[0] == 0
        code, out = _run(home, "prune", "--older-than", "0", "--json")
        assert code == 0 and json.loads(out)["count"] == 0
    finally:
        pgserver.drop_schema(pg_server.uri, "memoryport")
