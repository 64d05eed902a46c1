"""Moving one long session between homes holds it once, not also as its export text.

``memoryport storage copy`` (SQLite -> PostgreSQL) sends each chunk's export through a
temporary file read back line by line by the target's import, and ``memoryport import``
keeps a session's message lines past ``SPILL_LINES`` in a temporary file: measured with
tracemalloc in a fresh subprocess (no timing), each peak stays under what the whole-text
path takes (the chunk's export held as a string and split into lines before the import,
as the copy did) by about the export's size, and the stored rows are the source's. SQLite and
PostgreSQL targets; real files, a real server (tests/pgserver.py).

The target's import still parses one chunk (one whole session at least) before writing
it; its memory grows with the session's length (see docs/postgres.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

import pgserver
from memoryport.admin import archive
from memoryport.errors import SessionNotFound
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.storage.turns import vectors

MESSAGES = 5_000
SIZE = 300

_MEASURE = """
import io, json, sys, tracemalloc
from pathlib import Path
import memoryport.admin.storage, memoryport.admin.archive  # imported before the count
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.storage.turns import vectors
kind, home, arg = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
tracemalloc.start()
if kind == "copy":
    report = memoryport.admin.storage.copy_sessions(home, arg)
    done = report.messages
elif kind == "whole":  # the export held as text, split, then imported: a whole load
    source = SQLiteSessionStore(home / "state.db", hidden_sources=())
    target = PostgresSessionStore(arg, hidden_sources=())
    buf = io.StringIO()
    source.export_jsonl(buf)
    done = target.import_jsonl(buf.getvalue().splitlines()).messages_imported
    del buf
elif kind == "whole-import":  # the archive's session lines held, then imported
    import zipfile
    with zipfile.ZipFile(arg) as bundle:
        lines = bundle.read(memoryport.admin.archive.SESSIONS_NAME).decode().splitlines()
    home.mkdir(parents=True)
    target = SQLiteSessionStore(home / "state.db", hidden_sources=())
    done = target.import_jsonl(lines).messages_imported
    del lines
else:
    done = memoryport.admin.archive.import_archive(home, Path(arg)).counts["messages"]
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "messages": done}))
"""


def _measure(kind: str, home: Path, arg: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, kind, str(home), arg],
                         capture_output=True, text=True, check=False, timeout=300)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _source(home: Path) -> None:
    """A SQLite home holding one session of :data:`MESSAGES` messages."""
    home.mkdir(parents=True)
    store = SQLiteSessionStore(home / "state.db")
    store.create_session("long", source="cli", started_at=1.7e9, title="a long one")
    text = ("lorem ipsum dolor sit amet " * (SIZE // 27 + 1))[:SIZE]
    for start in range(0, MESSAGES, 2000):
        store.append_messages("long", [
            {"role": "user" if i % 2 else "assistant", "content": f"{i} {text}",
             "timestamp": 1.7e9 + i} for i in range(start, min(MESSAGES, start + 2000))])
    store.close()


def _rows(store: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    session = store.get_session("long")
    messages = store.get_messages("long")
    return ((session.id, session.title, session.message_count, session.started_at),
            [(m.id, m.role, m.content, m.timestamp) for m in messages])


@pytest.fixture
def dsn(pg_server: pgserver.PgServer) -> Any:
    """The session store's database, emptied after the test."""
    from memoryport.storage.sessions.postgres import PostgresSessionStore

    yield pg_server.uri
    store = PostgresSessionStore(pg_server.uri, hidden_sources=())
    try:
        store.forget_session("long")
    except SessionNotFound:
        pass  # the test removed it
    store.close()


@pytest.mark.postgres
def test_copy_and_import_hold_a_long_session_once(tmp_path: Path, dsn: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Copy to PostgreSQL and import into a new SQLite home: the same rows; each peak
    well under the whole-text load's into the same target. The embeddings model is kept
    off (an installed one would embed the imported turns, whose arrays are not the
    importer's memory)."""
    from memoryport.storage.sessions.postgres import PostgresSessionStore

    monkeypatch.setenv(vectors.MODEL_ENV, str(tmp_path / "no-model"))

    source = tmp_path / "source"
    _source(source)
    lite = SQLiteSessionStore(source / "state.db", hidden_sources=())
    expected = _rows(lite)
    lite.close()
    bundle = tmp_path / "home.zip"
    archive.export_home(source, bundle)

    whole = _measure("whole", source, dsn)
    assert whole["messages"] == MESSAGES
    target = PostgresSessionStore(dsn, hidden_sources=())
    target.forget_session("long")
    target.close()

    copied = _measure("copy", source, dsn)
    assert copied["messages"] == MESSAGES
    target = PostgresSessionStore(dsn, hidden_sources=())
    assert _rows(target) == expected
    target.forget_session("long")
    target.close()

    imported = _measure("import", tmp_path / "lite", str(bundle))
    assert imported["messages"] == MESSAGES
    lite = SQLiteSessionStore(tmp_path / "lite" / "state.db", hidden_sources=())
    assert _rows(lite) == expected
    lite.close()

    whole_import = _measure("whole-import", tmp_path / "whole", str(bundle))
    assert whole_import["messages"] == MESSAGES

    with zipfile.ZipFile(bundle) as opened:
        text = opened.getinfo(archive.SESSIONS_NAME).file_size  # the export's bytes
    # The whole-text paths hold the export (and its lines) besides what the import
    # parses; the streamed ones do not: each saves about the export's size (measured:
    # 1.06 and 1.01 times; the bound leaves room for the stores' own changes).
    assert whole["peak"] - copied["peak"] > 0.6 * text, (copied, whole, text)
    assert whole_import["peak"] - imported["peak"] > 0.6 * text, (imported, whole_import, text)
