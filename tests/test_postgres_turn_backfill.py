"""The PostgreSQL turn index's vector writer: vectors and vocabulary words are written in
the background, after the turn's own transaction; a turn left without its vector (an
index without the model, a process killed before its writer got there) is found and
embedded by the next index with the model that touches its user; a turn that has its
vector always has its words. Real server (tests/pgserver.py), an ordinary role (so
row-level security applies to the writer too), a real tiny ``Embedder``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.storage.turns import TurnIndex, TurnInput, expand
from memoryport.storage.turns.postgres import PostgresTurnIndex
from test_postgres_turn_vectors import TopicEmbedder, _turns

pytestmark = pytest.mark.postgres


@pytest.fixture
def app(pg_server: pgserver.PgServer) -> Iterator[tuple[str, str]]:
    """The DSN of a fresh ordinary login role (row-level security binds it) and a fresh
    schema name."""
    role = f"mp_vec_{uuid.uuid4().hex[:8]}"
    schema = pgserver.fresh_schema("vbf")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(conn.info.dbname), sql.Identifier(role)))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield make_conninfo(pg_server.uri, user=role), schema
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _state(uri: str, schema: str) -> dict[str, tuple[int, int, bool]]:
    """Per user (as the superuser, past the policies): turns, turns with a vector, and
    whether every turn with a vector has all its words in the user's vocabulary."""
    out = {}
    with psycopg.connect(uri) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        users = [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM turns")]
        for user in users:
            rows = conn.execute(
                "SELECT t.text, v.turn_id IS NOT NULL FROM turns t LEFT JOIN turn_vectors v"
                " ON v.turn_id = t.id WHERE t.user_id = %s", (user,)).fetchall()
            words = {r[0] for r in conn.execute(
                "SELECT word FROM turn_words WHERE user_id = %s", (user,))}
            whole = all(expand.words_of(text) <= words for text, has in rows if has)
            out[user] = (len(rows), sum(1 for _, has in rows if has), whole)
    return out


def _with_users(turns: list[TurnInput], user: str) -> list[TurnInput]:
    return [TurnInput(t.session_id, t.speaker, t.text, t.timestamp, t.source_id, user)
            for t in turns]


def test_turns_without_vectors_are_backfilled_per_user_and_rank_as_on_sqlite(
        tmp_path: Path, pg_server: pgserver.PgServer, app: tuple[str, str]) -> None:
    """Turns stored by an index without the model get their vectors and words when an
    index with it first searches (or writes for) their user, that user's only; the
    ``dense`` and ``expand`` signals then equal a SQLite index's over the same turns."""
    dsn, schema = app
    turns = _turns()
    with PostgresTurnIndex(dsn, schema=schema, dense=False) as plain:
        plain.add_turns(_with_users(turns, "ann") + _with_users(turns, "bo"))
    assert _state(pg_server.uri, schema) == {"ann": (48, 0, True), "bo": (48, 0, True)}
    with PostgresTurnIndex(dsn, schema=schema, embedder=TopicEmbedder()) as pg, \
            TurnIndex(tmp_path / "v.db", embedder=TopicEmbedder()) as lite:
        pg.search("kids paint", user_id="ann")  # touches ann: her turns are back-filled
        assert pg.flush_vectors(60)
        assert _state(pg_server.uri, schema) == {"ann": (48, 48, True), "bo": (48, 0, True)}
        pg.add_turns([TurnInput("s9", "Bo", "stars again over the beach", 2e9, "b1", "bo")])
        assert pg.flush_vectors(60)  # bo's new turn and the ones before it
        assert _state(pg_server.uri, schema) == {"ann": (48, 48, True), "bo": (49, 49, True)}
        lite.add_turns(turns)
        assert lite.flush_vectors(60)
        expanded = False
        for query in ("what did the kids paint", "where did they camp"):
            rows_l, parts_l = lite.candidates(query)
            rows_p, parts_p = pg.candidates(query, user_id="ann")
            assert {r[6]: (p.dense, p.expand) for r, p in zip(rows_p, parts_p, strict=True)} \
                == {r[6]: (p.dense, p.expand) for r, p in zip(rows_l, parts_l, strict=True)}
            assert any(p.dense for p in parts_p)
            expanded = expanded or any(p.expand for p in parts_p)
        assert expanded  # the expansion statement is exercised (same floats as SQLite)


_WRITER = """
import sys, time
from array import array
from memoryport.storage.turns import TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex

class Slow:
    name = "topics-crc"
    def embed(self, texts):
        time.sleep(0.02)  # the writer lags behind the turns
        return [array("f", [0.0, 0.0, 0.0, 1.0]) for t in texts]

index = PostgresTurnIndex(sys.argv[1], schema=sys.argv[2], embedder=Slow())
print("ready", flush=True)
n = 0
while True:
    index.add_turns([TurnInput("s", "Ann", f"word{n} and other{n % 7} things", 1.7e9 + n,
                               f"t{n}", "ann")])
    n += 1
"""


def test_a_process_killed_before_its_writer_caught_up_leaves_turns_to_backfill(
        pg_server: pgserver.PgServer, app: tuple[str, str]) -> None:
    """SIGKILL a process storing turns faster than its writer embeds them: some turns
    are left without a vector, none has a vector without all its words; the next index
    with the model that touches the user embeds the rest."""
    dsn, schema = app
    PostgresTurnIndex(dsn, schema=schema, dense=False).close()
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, dsn, schema],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the writer has stored some, not all
        state = _state(pg_server.uri, schema).get("ann", (0, 0, True))
        if state[1] >= 3 and state[0] - state[1] >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    stored, embedded, whole = _state(pg_server.uri, schema)["ann"]
    assert 0 < embedded < stored and whole
    with PostgresTurnIndex(dsn, schema=schema, embedder=TopicEmbedder()) as pg:
        pg.search("other things", user_id="ann")
        assert pg.flush_vectors(60)
    assert _state(pg_server.uri, schema)["ann"] == (stored, stored, True)
