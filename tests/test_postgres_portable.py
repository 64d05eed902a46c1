"""``memoryport export`` / ``import`` carry the holographic facts and turns on a
PostgreSQL home too, and an archive moves between backends exactly: SQLite -> PostgreSQL
-> SQLite -> PostgreSQL keeps every fact row (ids, trust, counts, supersession, events,
history) and every turn. Real PostgreSQL (tests/pgserver.py), through the CLI.
"""

from __future__ import annotations

import json
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import pgserver
from memoryport.cli import main
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.postgres_open import schema_for
from memoryport.storage.facts.records import FactInput, Provenance
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput

pytestmark = pytest.mark.postgres

T0 = 1_684_000_000.0


@pytest.fixture
def profiles(pg_server: pgserver.PgServer) -> Iterator[list[str]]:
    """Two fresh profile names (two PostgreSQL homes); their schemas are dropped after."""
    names = [f"p{uuid.uuid4().hex[:10]}" for _ in range(2)]
    yield names
    for name in names:
        pgserver.drop_schema(pg_server.uri, schema_for(name))


def _sqlite_home(path: Path) -> Path:
    """A SQLite home with facts of two users (supersession, feedback, retrievals, an
    update, a forgotten fact's revisions) and turns of three sessions."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("memory:\n  provider: holographic\n")
    db = path / "holographic.db"
    ann = FactStore(db, user_id="ann")
    ann.add(FactInput("Ann prefers vim as her editor", speaker="Ann"))
    ann.add(FactInput("Ann prefers emacs as her editor", speaker="Ann"))
    tea = ann.add(FactInput("Ann's favorite tea is sencha", category="user_pref",
                            provenance=Provenance(session_id="s1", actor="user")))
    ann.feedback(tea.fact.id, helpful=True)
    ann.mark_retrieved([tea.fact.id])
    gone = ann.add(FactInput("Ann once lived in Oslo"))
    ann.forget(gone.fact.id)
    ann.add(FactInput("We met Caroline at the pottery class last Friday"))
    ann.close()
    bo = FactStore(db, user_id="bo")
    bo.add(FactInput("Bo keeps bees on the roof"))
    bo.close()
    index = TurnIndex(db, dense=False)
    index.add_turns([TurnInput("s1", "Ann", f"turn {i}: greyhounds", T0 + i, f"m{i}", "ann")
                     for i in range(3)]
                    + [TurnInput("s2", "Ann", "I adopted a greyhound named Pixel", T0 + 9),
                       TurnInput("s9", "Bo", "the bees swarmed", T0, "", "bo")])
    index.close()
    return path


def _pg_home(root: Path, profile: str, dsn: str) -> Path:
    home = root / "profiles" / profile
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(
        f"memory:\n  provider: holographic\nstorage:\n  backend: postgres\n  dsn: '{dsn}'\n")
    return home


def _run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def _export(home: Path, out: Path) -> tuple[list[Any], list[Any]]:
    """Export ``home``; the holographic part: fact lines without ``import`` revisions
    (each import adds its own), and turn lines."""
    _run("--home", str(home), "export", "--out", str(out))
    with zipfile.ZipFile(out) as archive:
        facts = [json.loads(line) for line in archive.read(
            "providers/holographic/facts.jsonl").decode().splitlines()]
        turns = [json.loads(line) for line in archive.read(
            "providers/holographic/turns.jsonl").decode().splitlines()]
    return [f for f in facts if f["row"].get("action") != "import"], turns


def _without(turns: list[Any], key: str) -> list[Any]:
    return [{k: v for k, v in t.items() if k != key} for t in turns]


def test_archive_round_trip_between_backends_is_exact(
        tmp_path: Path, pg_server: pgserver.PgServer, profiles: list[str]) -> None:
    """SQLite -> PostgreSQL -> SQLite -> PostgreSQL: the facts part of every export is the
    same (ids and every column; only each import's own ``import`` revisions are added);
    turns keep their sessions, positions and times (PostgreSQL keeps the recording time
    too). Recall on the PostgreSQL home finds the facts; a second import adds nothing."""
    source = _sqlite_home(tmp_path / "a")
    facts, turns = _export(source, tmp_path / "a.zip")
    assert len(facts) > 10 and len(turns) == 5

    pg = _pg_home(tmp_path / "b", profiles[0], pg_server.uri)
    report = _run("--home", str(pg), "import", str(tmp_path / "a.zip"))
    assert "facts_imported 5" in json.dumps(report)
    pg_facts, pg_turns = _export(pg, tmp_path / "b.zip")
    assert pg_facts == facts and pg_turns == turns

    back = tmp_path / "c"
    back.mkdir()
    (back / "config.yaml").write_text("memory:\n  provider: holographic\n")
    _run("--home", str(back), "import", str(tmp_path / "b.zip"))
    sq_facts, sq_turns = _export(back, tmp_path / "c.zip")
    assert sq_facts == facts
    assert _without(sq_turns, "recorded_at") == _without(turns, "recorded_at")

    again = _pg_home(tmp_path / "d", profiles[1], pg_server.uri)
    _run("--home", str(again), "import", str(tmp_path / "c.zip"))
    assert _export(again, tmp_path / "d.zip")[0] == facts

    store = PostgresFactStore(pg_server.uri, user_id="ann", schema=schema_for(profiles[0]))
    try:
        assert store.search("which tea")[0].content == "Ann's favorite tea is sencha"
        tea = next(f for f in store.list_facts(limit=10) if "sencha" in f.content)
        assert (tea.retrieval_count, tea.helpful_count) == (1, 1)
    finally:
        store.close()
    twice = _run("--home", str(pg), "import", str(tmp_path / "a.zip"))
    assert "facts_imported 0" in json.dumps(twice) and "turns_imported 0" in json.dumps(twice)


def test_a_malformed_archive_imports_nothing(
        tmp_path: Path, pg_server: pgserver.PgServer, profiles: list[str]) -> None:
    """A facts line PostgreSQL refuses (a NUL character) makes the import fail with a
    clear error and leaves the schema without any of the archive's facts."""
    source = _sqlite_home(tmp_path / "a")
    _run("--home", str(source), "export", "--out", str(tmp_path / "a.zip"))
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    name = "providers/holographic/facts.jsonl"
    members[name] = members[name].replace(b"Bo keeps bees", b"Bo keeps \\u0000 bees")
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    pg = _pg_home(tmp_path / "b", profiles[0], pg_server.uri)
    result = CliRunner().invoke(main, ["--home", str(pg), "import", str(tmp_path / "bad.zip")])
    assert result.exit_code == 1 and "nothing was imported" in result.output
    store = PostgresFactStore(pg_server.uri, user_id="ann", schema=schema_for(profiles[0]))
    try:
        assert store.count(include_retired=True) == 0
    finally:
        store.close()


def test_an_application_role_imports_by_merging(
        tmp_path: Path, pg_server: pgserver.PgServer, profiles: list[str]) -> None:
    """A home whose DSN is an application role (table rights, no right to move the id
    sequences) imports the archive by merging: every fact lands, under new ids where
    needed, with its history; the policies bind the role throughout."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    from memoryport.storage.turns.postgres import PostgresTurnIndex

    source = _sqlite_home(tmp_path / "a")
    facts, _ = _export(source, tmp_path / "a.zip")
    schema, role = schema_for(profiles[0]), f"mp_app_{uuid.uuid4().hex[:8]}"
    PostgresFactStore(pg_server.uri, schema=schema).close()
    PostgresTurnIndex(pg_server.uri, schema=schema, dense=False).close()
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        for grant in ("GRANT USAGE ON SCHEMA {s} TO {r}",  # an application role's rights
                      "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
                      "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}"):
            conn.execute(sql.SQL(grant).format(s=sql.Identifier(schema),
                                               r=sql.Identifier(role)))
    try:
        app = _pg_home(tmp_path / "b", profiles[0], make_conninfo(pg_server.uri, user=role))
        report = json.dumps(_run("--home", str(app), "import", str(tmp_path / "a.zip")))
        assert "facts_imported 5" in report and "turns_imported 5" in report
        store = PostgresFactStore(pg_server.uri, user_id="ann", schema=schema)
        try:
            contents = {f.content for f in store.list_facts(limit=50, include_retired=True)}
            assert contents == {f["row"]["content"] for f in facts
                                if f["table"] == "facts" and f["row"]["user_id"] == "ann"}
            vim = next(f for f in store.list_facts(limit=50, include_retired=True)
                       if "vim" in f.content)
            assert [r.action for r in store.revisions(vim.id)] == ["add", "retire", "import"]
        finally:
            store.close()
    finally:
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
