"""Curated memory on PostgreSQL: ``CuratedMemory(lock_timeout=...)`` bounds the wait for
another writer's row lock (the same clear error as the file lock, nothing written), and
``memory list`` says where a target really lives (server, table, profile; no password).
Real PostgreSQL (tests/pgserver.py)."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

import pgserver
from memoryport.cli import main
from memoryport.errors import MemoryStoreError
from memoryport.providers.curated import CuratedMemory
from memoryport.storage.postgres_curated import PostgresCuratedBackend
from memoryport.storage.postgres_curated_schema import close_databases

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh schema, dropped (and its pooled connections closed) afterwards."""
    schema = pgserver.fresh_schema("lock")
    yield schema
    close_databases(schema)
    pgserver.drop_schema(pg_server.uri, schema)


def _hold(uri: str, schema: str) -> psycopg.Connection[tuple[object, ...]]:
    """Another host's writer, in the middle of its transaction on the ``memory`` row."""
    conn = psycopg.connect(uri)
    conn.execute(sql.SQL("SELECT 1 FROM {}.curated_targets WHERE target = 'memory' FOR UPDATE"
                         ).format(sql.Identifier(schema)))
    return conn


def test_lock_timeout_bounds_the_wait_for_another_writer(
        pg_server: pgserver.PgServer, pg_schema: str, tmp_path: Path) -> None:
    """A short ``lock_timeout`` gives up with the file lock's message and writes nothing;
    a long one waits for the other writer and lands; both share one connection pool."""
    backend = PostgresCuratedBackend(pg_server.uri, schema=pg_schema)
    CuratedMemory(tmp_path, backend=backend).add("memory", "Before.")
    holder = _hold(pg_server.uri, pg_schema)
    try:
        impatient = CuratedMemory(tmp_path, backend=backend, lock_timeout=0.2)
        with pytest.raises(MemoryStoreError, match=r"within 0\.2s: another writer holds it\."
                           r" Nothing was written; retry shortly"):
            impatient.add("memory", "Too early.")
        patient = CuratedMemory(tmp_path, backend=backend, lock_timeout=60)
        done: list[str] = []
        waiter = threading.Thread(target=lambda: done.append(
            patient.add("memory", "After.").message))
        waiter.start()
        waiter.join(0.5)
        assert not done and waiter.is_alive()  # still waiting, past the short timeout
    finally:
        holder.rollback()
        holder.close()
    waiter.join(30)
    assert done == ["Entry added."]
    assert CuratedMemory(tmp_path, backend=backend).entries("memory") == ["Before.", "After."]
    assert impatient.add("memory", "Now.").message == "Entry added."


def test_memory_list_says_where_a_postgres_target_lives(
        pg_server: pgserver.PgServer, tmp_path: Path) -> None:
    """On a PostgreSQL home ``memory list`` names the server, database, table, profile
    and owner (never the password), not a ``memories/`` file; JSON keeps ``path`` (the
    file ``export`` writes) and adds ``location``."""
    profile = f"p{uuid.uuid4().hex[:8]}"
    home = tmp_path / "profiles" / profile
    home.mkdir(parents=True)
    dsn = pg_server.uri.replace("postgres:@", "postgres:hunter2@")
    assert "hunter2" in dsn
    (home / "config.yaml").write_text(f"storage:\n  backend: postgres\n  dsn: '{dsn}'\n")
    runner = CliRunner()
    try:
        added = runner.invoke(main, ["--home", str(home), "memory", "add", "--user", "ann",
                                     "--target", "user", "Ann prefers tea."])
        assert added.exit_code == 0, added.output
        listed = runner.invoke(main, ["--home", str(home), "memory", "list", "--user", "ann"])
        assert listed.exit_code == 0, listed.output
        assert f"profile {profile}, user ann, target user)" in listed.output
        assert "postgresql://postgres@" in listed.output
        assert "memoryport.curated_targets" in listed.output
        assert "hunter2" not in listed.output and "memories/" not in listed.output
        assert "Ann prefers tea." in listed.output
        as_json = runner.invoke(main, ["--home", str(home), "memory", "list", "--json"])
        assert as_json.exit_code == 0, as_json.output
        assert '"location": "postgresql://' in as_json.output and '"path": "' in as_json.output
        status = runner.invoke(main, ["--home", str(home), "status", "--no-probe"])
        assert "memoryport.curated_targets" in status.output, status.output
        assert "hunter2" not in status.output and "memories/" not in status.output
        plain = tmp_path / "plain"
        files = runner.invoke(main, ["--home", str(plain), "memory", "list"])
        assert files.exit_code == 0 and str(plain / "memories" / "MEMORY.md") in files.output
    finally:
        close_databases("memoryport")


def test_one_statement_writes_never_act_on_a_stale_text(
        pg_server: pgserver.PgServer, pg_schema: str, tmp_path: Path) -> None:
    """Two stores (two hosts) on one target, alternating: each write lands on the text
    the other left (no lost update, every revision chains to the previous one); a store
    whose last write is stale still sees the other's add (remove works) and its remove
    (the re-add is not taken for a duplicate); an outside edit is still recorded."""
    backend = PostgresCuratedBackend(pg_server.uri, schema=pg_schema)
    first = CuratedMemory(tmp_path, backend=backend)
    second = CuratedMemory(tmp_path, backend=backend)
    for n in range(6):
        (first if n % 2 else second).add("memory", f"Entry {n}.")
        first.add("memory", f"First {n}.")
    assert len(second.entries("memory")) == 12
    assert second.remove("memory", "First 5.").message == "Entry removed."
    assert first.add("memory", "First 5.").message == "Entry added."
    assert first.remove("memory", "Entry 4.").message == "Entry removed."
    revisions = first.history("memory")
    assert [r.rev for r in revisions] == list(range(1, 16))
    assert all(b.before == a.after for a, b in itertools.pairwise(revisions))
    with psycopg.connect(pg_server.uri) as conn:
        conn.execute(sql.SQL("UPDATE {}.curated_targets SET content = content || %s"
                             " WHERE target = 'memory'").format(sql.Identifier(pg_schema)),
                     ("\n§\nTyped in psql.",))
    first.add("memory", "After the edit.")
    assert [r.action for r in first.history("memory")][-2:] == ["external", "add"]
    assert first.entries("memory")[-2:] == ["Typed in psql.", "After the edit."]
