"""The holographic stores on PostgreSQL: the turn index ranks exactly as on SQLite, the
fact store behaves the same on both backends, and the provider opens them from
``storage.backend``. Real servers only (``pg_server``, tests/pgserver.py).

Row-level security, crashes and concurrent first opens are in
``test_postgres_holographic_rls.py``.
"""

from __future__ import annotations

import json
import math
import uuid
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.errors import ConfigError, ToolArgumentError
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.postgres_open import open_stores, schema_for
from memoryport.storage.facts.records import FactInput, Provenance
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex
from memoryport.storage.turns.postgres_terms import phrase_terms, terms
from memoryport.testing import ProviderConformance

pytestmark = pytest.mark.postgres

DAY = 86_400.0
T0 = 1_684_000_000.0  # 2023-05-13


@pytest.fixture
def schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh schema, dropped after the test."""
    name = pgserver.fresh_schema("holo")
    yield name
    pgserver.drop_schema(pg_server.uri, name)


# ---------------------------------------------------------------------------- terms


def test_terms_are_fts5_porter_unicode61_terms() -> None:
    """Case, diacritics, separators and Porter stems exactly as the SQLite index cuts them
    (the counts' sum is the BM25 length, stopwords included)."""
    (bag,) = terms(["Zoë's café: running, RAN & runs — e-mail 3.5% naïve"])
    assert dict(bag) == {"zoe": 1, "s": 1, "cafe": 1, "run": 2, "ran": 1, "e": 1,
                         "mail": 1, "3": 1, "5": 1, "naiv": 1}
    assert phrase_terms('"running" OR "Cafés" OR "e-mail" OR "runs"') == ["run", "cafe", "run"]


# ---------------------------------------------------------------------------- turn index

_SPEAKERS = ("Caroline", "Melanie")
_LINES = (
    "I went to the LGBTQ support group yesterday and it was so powerful",
    "That sounds amazing! What happened at the support group?",
    "We painted a sunrise together last Friday, my kids loved it",
    "I'm researching adoption agencies, it's a big step",
    "Running a charity race for mental health next month",
    "My café order is always a flat white, naïve I know",
    "We camped at the beach in June and saw the stars",
    "Pottery class on Tuesday: I made a bowl for my mom",
    "Counseling and mental health careers interest me a lot",
    "The kids and I went hiking in the mountains last weekend",
    "Did you finish the painting of the lake?",
    "Yes! It took three weeks, the lake at sunset",
)
QUERIES = (
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint recently?",
    "What is Caroline researching?",
    "When is Melanie running the charity race?",
    "What does Caroline order at the cafe?",
    "Where did Melanie camp in June?",
    "What did Melanie make in pottery class?",
    "What careers interest Caroline?",
    "Where did they go hiking last weekend?",
    "How long did the lake painting take?",
    "support group powerful",
    "stars",
)


_EXTRA = ("really", "honestly", "with friends", "again", "this time", "for the first time",
          "after work", "in the rain", "at last", "with my sister", "on a whim")


def _conversation() -> list[TurnInput]:
    """Four sessions of two speakers, a day apart; every turn's text is different (a
    line, one or two extra phrases and its number), so that BM25 ties are rare."""
    out = []
    for session in range(4):
        for n in range(40):
            line = _LINES[(n * 5 + session * 3) % len(_LINES)]
            extra = " ".join(_EXTRA[(n * k + session) % len(_EXTRA)] for k in range(1, n % 3 + 2))
            out.append(TurnInput(f"s{session}", _SPEAKERS[n % 2], f"{line}, {extra} #{n}",
                                 T0 + session * DAY, f"D{session}:{n}"))
    return out


@pytest.fixture
def pair(tmp_path: Path, pg_server: pgserver.PgServer, schema: str
         ) -> Iterator[tuple[TurnIndex, PostgresTurnIndex]]:
    """The same turns in a SQLite and a PostgreSQL index."""
    lite = TurnIndex(tmp_path / "t.db", dense=False)
    pg = PostgresTurnIndex(pg_server.uri, schema=schema, dense=False)
    turns = _conversation()
    for start in range(0, len(turns), 37):  # uneven batches across block boundaries
        lite.add_turns(turns[start:start + 37])
        pg.add_turns(turns[start:start + 37])
    yield lite, pg
    lite.close()
    pg.close()


def test_turn_search_ranks_as_on_sqlite(pair: tuple[TurnIndex, PostgresTurnIndex]) -> None:
    """For every query: the same hits in the same order with the same scores, and the
    same raw signals of every candidate (BM25 of the turn, its neighbours and its session
    block; speaker, names, dates, events)."""
    lite, pg = pair
    for query in QUERIES:
        want = lite.search(query, limit=20)
        got = pg.search(query, limit=20)
        assert want, query
        assert [h.source_id for h in got] == [h.source_id for h in want], query
        assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-9)
        rows_l, parts_l = lite.candidates(query)
        rows_p, parts_p = pg.candidates(query)
        signals_l = {r[6]: tuple(p) for r, p in zip(rows_l, parts_l, strict=True)}
        signals_p = {r[6]: tuple(p) for r, p in zip(rows_p, parts_p, strict=True)}
        assert signals_p.keys() == signals_l.keys(), query
        for key, values in signals_l.items():
            assert signals_p[key] == pytest.approx(values, rel=1e-9), (query, key)


def test_turn_index_scopes_and_counts(pg_server: pgserver.PgServer, schema: str) -> None:
    """Users are separate scopes (count, search); ids come back in input order across
    scopes; bad input names the turn and stores nothing; a query with no searchable
    word finds nothing."""
    with PostgresTurnIndex(pg_server.uri, schema=schema, dense=False) as index:
        ids = index.add_turns([
            TurnInput("s", "Ann", "the red kite flew", T0, "a1", user_id="ann"),
            TurnInput("s", "Bob", "the red kite fell", T0, "b1", user_id="bob"),
            TurnInput("s", "Ann", "a blue kite", T0, "a2", user_id="ann"),
        ])
        assert len(set(ids)) == 3 and ids[0] < ids[2]
        assert (index.count("ann"), index.count("bob"), index.count()) == (2, 1, 0)
        assert [h.source_id for h in index.search("red kite", user_id="ann")] == ["a1", "a2"]
        assert [h.source_id for h in index.search("kite", user_id="bob")] == ["b1"]
        assert index.search("the of and", user_id="ann") == []
        with pytest.raises(ValueError, match="turn 1: session_id is empty"):
            index.add_turns([TurnInput("s", "Ann", "ok", T0, user_id="ann"),
                             TurnInput(" ", "Ann", "bad", T0, user_id="ann")])
        assert index.count("ann") == 2


class TopicEmbedder:
    """A real, tiny ``Embedder`` (topic buckets), as in test_turn_index_vectors.py."""

    name = "topics-v1"
    TOPICS: ClassVar[dict[str, int]] = {
        "kids": 0, "painted": 0, "painting": 0, "paint": 0,
        "beach": 1, "camped": 1, "stars": 1, "hiking": 1, "mountains": 1,
    }

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text (a small fourth part from the text's checksum, so no
        two texts tie: the nearest turns are one set, whatever breaks ties)."""
        out = []
        for text in texts:
            vec = [0.0] * 3 + [zlib.crc32(text.encode()) / 2**32 * 0.05]
            for word in text.lower().replace(",", " ").replace("?", " ").split():
                vec[self.TOPICS.get(word, 2)] += 1.0 if word in self.TOPICS else 0.1
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


def test_dense_vectors_score_as_on_sqlite(tmp_path: Path, pg_server: pgserver.PgServer,
                                          schema: str) -> None:
    """With an embedder, vectors are stored by the background writer (pgvector's
    ``vector`` when the server has it, as this one does) and the ``dense`` signal equals
    SQLite's."""
    turns = _conversation()[:60]
    with TurnIndex(tmp_path / "v.db", embedder=TopicEmbedder()) as lite, \
            PostgresTurnIndex(pg_server.uri, schema=schema, embedder=TopicEmbedder()) as pg:
        lite.add_turns(turns)
        pg.add_turns(turns)
        assert lite.flush_vectors(60)  # both write vectors in the background
        assert pg.flush_vectors(60)
        expanded = False
        for query in ("what did the kids paint", "where did they camp"):
            rows_l, parts_l = lite.candidates(query)
            rows_p, parts_p = pg.candidates(query)
            dense_l = {r[6]: p.dense for r, p in zip(rows_l, parts_l, strict=True)}
            dense_p = {r[6]: p.dense for r, p in zip(rows_p, parts_p, strict=True)}
            assert any(dense_l.values())
            assert dense_p == pytest.approx(dense_l, rel=1e-5)
            expand_l = {r[6]: p.expand for r, p in zip(rows_l, parts_l, strict=True)}
            expand_p = {r[6]: p.expand for r, p in zip(rows_p, parts_p, strict=True)}
            assert expand_p == pytest.approx(expand_l, rel=1e-5)  # expansion too
            expanded = expanded or any(expand_l.values())
        assert expanded
    with psycopg.connect(pg_server.uri) as conn:
        kind = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attname = 'vec'",
            (f"{schema}.turn_vectors",)).fetchone()
    assert kind == ("vector",)


# ---------------------------------------------------------------------------- fact store

Factory = Callable[..., FactStore]


@pytest.fixture(params=["sqlite", "postgres"])
def facts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """Open fact stores (``user_id=...``) on one backend; all closed after the test."""
    opened: list[FactStore] = []
    if request.param == "postgres":
        server: pgserver.PgServer = request.getfixturevalue("pg_server")
        name = request.getfixturevalue("schema")

        def make(**kwargs: object) -> FactStore:
            opened.append(PostgresFactStore(server.uri, schema=name, **kwargs))  # type: ignore[arg-type]
            return opened[-1]
    else:
        def make(**kwargs: object) -> FactStore:
            opened.append(FactStore(tmp_path / "f.db", **kwargs))  # type: ignore[arg-type]
            return opened[-1]
    yield make
    for store in opened:
        store.close()


def test_facts_add_dedupe_contradict_and_history(facts: Factory) -> None:
    """Duplicates (exact and near), a contradiction retiring the older value with both
    in ``contradictions`` and one chain, revisions, update, feedback and remove."""
    store = facts(user_id="alice")
    vim = store.add(FactInput("Alice prefers vim as her editor", speaker="Alice"))
    assert vim.status == "added" and "Alice" in vim.fact.entities
    assert store.add(FactInput("alice prefers vim as her editor.")).status == "duplicate"
    deploy = store.add(FactInput("The deploy runs on Friday evenings"))
    near = store.add(FactInput("The deploy runs on Friday evenings!!"))
    assert near.status == "duplicate" and near.fact.id == deploy.fact.id
    emacs = store.add(FactInput("Alice prefers emacs as her editor", speaker="Alice"))
    assert emacs.superseded == [vim.fact.id]
    (pair,) = store.contradictions()
    assert (pair.older.value, pair.newer.value) == ("vim", "emacs")
    assert [f.id for f in store.chain(vim.fact.id)] == [vim.fact.id, emacs.fact.id]
    assert [r.action for r in store.revisions(vim.fact.id)] == ["add", "retire"]
    updated = store.update(deploy.fact.id, content="The deploy runs on Monday mornings",
                           provenance=Provenance(actor="user"))
    assert updated.content.endswith("Monday mornings")
    assert store.search("when does the deploy run")[0].content == updated.content
    assert store.search("friday evenings") == []
    feedback = store.feedback(emacs.fact.id, helpful=False)
    assert (feedback["old_trust"], feedback["new_trust"]) == (0.5, 0.4)
    assert store.remove(deploy.fact.id) and not store.remove(deploy.fact.id)
    assert store.count() == 1 and store.count(include_retired=True) == 3
    with pytest.raises(ToolArgumentError, match="no fact #999"):
        store.update(999, content="x y z")


def test_facts_search_entities_and_forget(facts: Factory) -> None:
    """Search ranks by BM25 + overlap + entity, trust floor hides, probe/related/reason
    read the entity index, forget deletes and leaves a trace, the scope holds."""
    store = facts(user_id="bob")
    other = facts(user_id="carol")
    a = store.add(FactInput("Bob works at Acme Corp in Berlin", speaker="Bob")).fact
    b = store.add(FactInput("Bob likes hiking with Dana", speaker="Bob")).fact
    c = store.add(FactInput("Dana lives in Paris", speaker="Dana")).fact
    other.add(FactInput("Carol works at Acme Corp too", speaker="Carol"))
    assert [f.id for f in store.search("where does Bob work")][:1] == [a.id]
    assert {f.id for f in store.probe("Dana")} == {b.id, c.id}
    names, related = store.related("Bob")
    assert "Dana" in {n["name"] for n in names} and c.id in {f.id for f in related}
    (best, covers), *_ = store.reason(["Bob", "Dana"])
    assert best.id == b.id and sorted(covers) == ["Bob", "Dana"]
    for _ in range(3):
        store.feedback(c.id, helpful=False)
    assert c.id not in {f.id for f in store.search("Dana Paris")}
    assert c.id in {f.id for f in store.list_facts()}
    assert store.find_live("bob likes hiking with dana") is not None
    assert store.forget(b.id) and store.get(b.id) is None
    assert [r.action for r in store.revisions(b.id)] == ["forget"]
    assert {f.content for f in other.search("Acme")} == {"Carol works at Acme Corp too"}
    assert all(f.user_id == "bob" for f in store.list_facts(include_retired=True))
    assert store.search("'\"NEAR( * a/b?") == []


def test_facts_batch_sees_its_own_earlier_facts(facts: Factory) -> None:
    """In one add_many, a later item that repeats an earlier one is a duplicate and a
    later value retires an earlier one (the batch's own postings are read)."""
    store = facts()
    done = store.add_many([
        FactInput("Weekly sync moved to the big room"),
        FactInput("weekly sync moved to the big room!"),
        FactInput("I live in Paris"),
        FactInput("I moved to Berlin"),
    ])
    assert [d.status for d in done] == ["added", "duplicate", "added", "added"]
    assert done[3].superseded == [done[2].fact.id]


_FACTS = (
    ("Caroline joined the LGBTQ support group in May 2023", "Caroline"),
    ("Melanie painted a sunrise with her kids", "Melanie"),
    ("Caroline is researching adoption agencies", "Caroline"),
    ("Melanie runs a charity race for mental health", "Melanie"),
    ("I prefer a flat white at the café", "Caroline"),
    ("Melanie camped at the beach in June 2023", "Melanie"),
    ("My favorite book is Becoming Nicole", "Caroline"),
    ("Melanie's kids love pottery and dinosaurs", "Melanie"),
    ("Caroline wants a career in counseling and mental health", "Caroline"),
    ("The family went hiking in the mountains", "Melanie"),
)


FACT_QUERIES = (
    "What is Caroline researching?", "mental health", "Who painted a sunrise?",
    "What did Melanie do in June 2023?", "cafe order", "kids pottery dinosaurs",
    "What book does Caroline like?", "Melanie",
)


def test_fact_search_ranks_as_on_sqlite(tmp_path: Path, pg_server: pgserver.PgServer,
                                        schema: str) -> None:
    """The same facts, the same order and scores (BM25 normalised, overlap, entities,
    time windows, trust) on both backends, for every query."""
    lite = FactStore(tmp_path / "f.db", user_id="u")
    pg = PostgresFactStore(pg_server.uri, schema=schema, user_id="u")
    try:
        for n, (content, speaker) in enumerate(_FACTS):
            for store in (lite, pg):
                store.add(FactInput(content, speaker=speaker, valid_from=T0 + n * DAY))
        for query in FACT_QUERIES:
            want, got = lite.search(query), pg.search(query)
            assert want, query
            assert [(f.content, f.entities) for f in got] == [
                (f.content, f.entities) for f in want], query
            assert [f.score for f in got] == pytest.approx([f.score for f in want], rel=1e-9)
    finally:
        lite.close()
        pg.close()


# ---------------------------------------------------------------------------- the factory


def test_factory_chooses_the_backend(tmp_path: Path, pg_server: pgserver.PgServer) -> None:
    """SQLite files by default; PostgreSQL in a schema per profile with ``postgres``;
    clear errors for a missing DSN or an unknown backend, with nothing created."""
    store, turns = open_stores(tmp_path / "h.db")
    assert type(store) is FactStore and type(turns) is TurnIndex
    store.close()
    turns.close()
    profile = f"p{uuid.uuid4().hex[:8]}"
    store, turns = open_stores(tmp_path / "x.db", backend="postgres", dsn=pg_server.uri,
                               profile=profile, user_id="ann")
    try:
        assert isinstance(store, PostgresFactStore) and isinstance(turns, PostgresTurnIndex)
        assert turns.schema == store.schema == schema_for(profile) == f"memoryport_{profile}"
        assert not (tmp_path / "x.db").exists()
    finally:
        store.close()
        turns.close()
        pgserver.drop_schema(pg_server.uri, schema_for(profile))
    with pytest.raises(ConfigError, match=r"storage\.dsn is empty"):
        open_stores(tmp_path / "y.db", backend="postgres")
    with pytest.raises(ConfigError, match="must be one of sqlite, postgres"):
        open_stores(tmp_path / "y.db", backend="mysql")
    assert not (tmp_path / "y.db").exists()
    assert schema_for("default") == "memoryport"
    assert len(schema_for("x" * 200).encode()) <= 48


def test_provider_on_postgres_through_the_public_api(tmp_path: Path,
                                                     pg_server: pgserver.PgServer) -> None:
    """``storage.backend: postgres`` in config.yaml: the provider stores turns and facts
    in the profile's schema (no SQLite file) and recalls them; a second host (another
    provider on another home of the same profile name) recalls the same memory."""
    from memoryport.providers.holographic import HolographicProvider

    profile = f"p{uuid.uuid4().hex[:8]}"
    homes = [tmp_path / host / "profiles" / profile for host in ("host1", "host2")]
    for home in homes:
        home.mkdir(parents=True)
        (home / "config.yaml").write_text(
            f"storage:\n  backend: postgres\n  dsn: '{pg_server.uri}'\n")
    first, second = HolographicProvider(), HolographicProvider()
    try:
        first.initialize("s1", home=homes[0], platform="cli", user_id="ann")
        first.sync_turn("I adopted a greyhound named Pixel last spring", "What a lovely name!",
                        session_id="s1")
        result = first.handle_tool_call("fact_store", {"action": "add",
                                                       "content": "Ann's favorite tea is sencha"})
        assert '"success": false' not in result
        second.initialize("s2", home=homes[1], platform="cli", user_id="ann")
        _, hits = second.recall_items("what is the greyhound called")
        assert any("Pixel" in h.text for h in hits)
        assert "sencha" in second.prefetch("which tea does Ann like", session_id="s2")
        assert not any((home / "holographic.db").exists() for home in homes), [
            list(home.iterdir()) for home in homes]
        with psycopg.connect(pg_server.uri) as conn:
            found = conn.execute(sql.SQL("SELECT count(*) FROM {}.turns").format(
                sql.Identifier(schema_for(profile)))).fetchone()
        assert found is not None and found[0] >= 1
    finally:
        first.shutdown()
        second.shutdown()
        pgserver.drop_schema(pg_server.uri, schema_for(profile))


def test_facts_cli_and_status_read_the_postgres_store(tmp_path: Path,
                                                      pg_server: pgserver.PgServer) -> None:
    """``memoryport facts`` and ``status`` on a PostgreSQL home read the profile's schema,
    not a ``holographic.db`` that is not there; ``export`` writes the facts of the
    profile's schema into the archive."""
    from click.testing import CliRunner

    from memoryport.cli import main
    from memoryport.providers.holographic import HolographicProvider

    profile = f"p{uuid.uuid4().hex[:8]}"
    home = tmp_path / "profiles" / profile
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(
        f"memory:\n  provider: holographic\nstorage:\n  backend: postgres\n"
        f"  dsn: '{pg_server.uri}'\n")
    provider = HolographicProvider()
    try:
        provider.initialize("s1", home=home, platform="cli", user_id="ann")
        provider.handle_tool_call("fact_store", {"action": "add",
                                                 "content": "Ann's favorite tea is sencha"})
        provider.shutdown()
        runner = CliRunner()
        listed = runner.invoke(main, ["--home", str(home), "facts", "list", "--user", "ann",
                                      "--json"])
        assert listed.exit_code == 0, listed.output
        assert "sencha" in listed.output and json.loads(listed.output)["count"] == 1
        status = runner.invoke(main, ["--home", str(home), "status", "--json"])
        assert status.exit_code in (0, 1), status.output
        exported = runner.invoke(main, ["--home", str(home), "export", "--out",
                                        str(tmp_path / "a.zip"), "--json"])
        assert exported.exit_code == 0, exported.output
        facts = json.loads(exported.output)["manifest"]["providers"]["holographic"]
        assert facts["counts"]["facts"] == 1  # from the profile's schema
        assert not (home / "holographic.db").exists()
    finally:
        provider.shutdown()
        pgserver.drop_schema(pg_server.uri, schema_for(profile))


def test_doctor_checks_the_fact_and_turn_tables(pg_server: pgserver.PgServer,
                                                schema: str) -> None:
    """``doctor``: a warning before the provider first opens the schema; afterwards the
    policies of every table and pgvector for the vectors."""
    from memoryport.admin.doctor_postgres import postgres_checks

    def finding() -> tuple[str, str]:
        (check,) = [c for c in postgres_checks(pg_server.uri, schema)
                    if c.name == "postgres facts/turns"]
        return check.status, check.detail

    assert finding()[0] == "warn"
    PostgresTurnIndex(pg_server.uri, schema=schema, dense=False).close()
    PostgresFactStore(pg_server.uri, schema=schema).close()
    assert finding() == ("ok", "user_scope enforced on 15 tables; vectors: pgvector")


class TestHolographicOnPostgresConforms(ProviderConformance):
    """The whole provider conformance kit with ``storage.backend: postgres`` (a profile
    home per test, so each test has its own schema)."""

    @pytest.fixture
    def home(self, tmp_path: Path, pg_server: pgserver.PgServer) -> Iterator[Path]:
        """A profile home whose config.yaml puts the stores on the test server."""
        path = tmp_path / "profiles" / f"c{uuid.uuid4().hex[:10]}"
        path.mkdir(parents=True)
        (path / "config.yaml").write_text(
            f"storage:\n  backend: postgres\n  dsn: '{pg_server.uri}'\n")
        yield path
        pgserver.drop_schema(pg_server.uri, schema_for(path.name))

    def make_provider(self, home: Path) -> Any:
        from memoryport.providers.holographic import HolographicProvider

        return HolographicProvider()


def test_stores_reconnect_after_the_server_drops_them(pg_server: pgserver.PgServer,
                                                      schema: str) -> None:
    """A dropped connection (the server terminates it) fails the call that finds it,
    with ``StoreError``; the next call opens a new one, scoped as before."""
    from psycopg.conninfo import make_conninfo

    from memoryport.errors import StoreError

    role = f"mp_drop_{uuid.uuid4().hex[:8]}"  # its own role: only its connections are cut
    with psycopg.connect(pg_server.uri, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(admin.info.dbname), sql.Identifier(role)))
    dsn = make_conninfo(pg_server.uri, user=role)
    turns = PostgresTurnIndex(dsn, schema=schema, dense=False)
    store = PostgresFactStore(dsn, schema=schema, user_id="ann")
    try:
        turns.add_turns([TurnInput("s", "Ann", "the red kite", T0, "k1", user_id="ann")])
        store.add(FactInput("Ann flies a red kite", speaker="Ann"))
        with psycopg.connect(pg_server.uri, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                          " WHERE usename = %s", (role,))
        with pytest.raises(StoreError):
            turns.count("ann")
        with pytest.raises(StoreError):
            store.count()
        assert [h.source_id for h in turns.search("kite", user_id="ann")] == ["k1"]
        assert [f.content for f in store.search("kite")] == ["Ann flies a red kite"]
        assert turns.count("bob") == 0 and turns.count("ann") == 1
    finally:
        turns.close()
        store.close()
        pgserver.drop_schema(pg_server.uri, schema)
        with psycopg.connect(pg_server.uri, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
