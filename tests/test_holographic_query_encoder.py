"""The query encoder (``storage/turns/query_encoder.py``): query vectors from a static
token table fitted per scope to the model's own turn vectors, so a search never runs the
model. Real small BERT models the tests build (``test_holographic_embed.tiny_model``), the
real numpy encoder, real SQLite files and a real PostgreSQL server."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pgserver
from memoryport.storage.turns import TurnIndex, TurnInput, distill, query_encoder, vectors
from memoryport.storage.turns.encoder import MiniLM
from test_holographic_embed import VOCAB, WORDS, tiny_model
from test_holographic_rank_dense_query import plain_server  # noqa: F401 (fixture)

_WORDS = [w for w in WORDS if w.isalpha()]


def _sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9))) for _ in range(count)]


def _turns(texts: list[str], session: str = "s1") -> list[TurnInput]:
    return [TurnInput(session, "Ann" if n % 2 else "Bob", text, 1.7e9 + n, f"D1:{n}")
            for n, text in enumerate(texts)]


@pytest.fixture
def model_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A small BERT with its token table, installed as the default model."""
    where = tiny_model(tmp_path / "model")
    query_encoder.build_tokens(MiniLM(where), where)
    monkeypatch.setenv(vectors.MODEL_ENV, str(where))
    yield where


def _cos(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


def test_the_token_table_is_each_token_run_through_the_model_alone(model_dir: Path) -> None:
    table = np.load(model_dir / query_encoder.TOKENS_FILE)
    model = MiniLM(model_dir)
    assert table.shape == (len(VOCAB), model.dim) and table.dtype == np.float32
    for word in ("car", "hiking", "park"):
        alone = np.asarray(model.embed([word])[0])  # [CLS] word [SEP], mean-pooled
        assert table[VOCAB.index(word)] == pytest.approx(alone, abs=1e-6)


def test_the_raw_vector_is_the_weighted_sum_of_the_word_tokens(model_dir: Path) -> None:
    encoder = query_encoder.for_model_dir(model_dir)
    assert encoder is not None
    offset = VOCAB.index("bought")  # the first whole word of two or more letters
    assert encoder.offset == offset
    table = np.load(model_dir / query_encoder.TOKENS_FILE).astype(np.float64)
    rows = table - table[offset:].mean(axis=0)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    tokens = encoder.tokenizer.encode("I bought a car.", add_special_tokens=False).ids
    assert VOCAB.index("i") in tokens  # before the first whole word: left out
    ids = [i for i in tokens if i >= offset]
    assert len(ids) == len(tokens) - 1
    expected = sum(rows[i] * np.log1p(i - offset + 1) for i in ids)
    expected /= np.linalg.norm(expected)
    got = encoder.raw(["I bought a car."])[0]
    assert got == pytest.approx(expected, abs=1e-5)
    assert not encoder.raw([""]).any()  # no token: a zero vector (cosine 0 with every turn)


def test_checkpoints_and_windows() -> None:
    points = sorted({query_encoder.checkpoint(n) for n in range(0, 200)})
    assert points == [0, 32, 40, 50, 63, 79, 99, 124, 155, 194]
    assert query_encoder.checkpoint(31) == 0 and query_encoder.checkpoint(39) == 32
    assert query_encoder.fit_window(40) == (0, 40)
    big = query_encoder.checkpoint(100_000)
    assert query_encoder.fit_window(big) == (big - query_encoder.FIT_MAX, query_encoder.FIT_MAX)


def test_a_fitted_map_brings_query_vectors_closer_to_the_models(model_dir: Path,
                                                                tmp_path: Path) -> None:
    """On texts the fit never saw, the fitted vector is closer to the model's than the raw
    one; and a search after the fit never runs the model on its query."""
    model = MiniLM(model_dir)
    held_out = _sentences(40, seed=2)
    with TurnIndex(tmp_path / "q.db") as index:
        index.add_turns(_turns(_sentences(120, seed=1)))
        assert index.flush_vectors(60)
        dense = index._vectors
        assert dense is not None and dense.encoder is not None
        assert dense.encoder.has_map("") and dense._fits.point("") == 99  # checkpoint of 120
        raw = dense.encoder.raw(held_out)
        fitted = [dense.encoder.vector(t, "") for t in held_out]
        truth = model.matrix(held_out)
        before = np.mean([_cos(r, y) for r, y in zip(raw, truth, strict=True)])
        after = np.mean([_cos(f, y) for f, y in zip(fitted, truth, strict=True)])
        assert after > before + 0.05, (before, after)

        calls: list[int] = []
        real = MiniLM.matrix

        def counting(self: MiniLM, texts: Any, **kw: Any) -> Any:
            calls.append(len(texts))
            return real(self, texts, **kw)

        MiniLM.matrix = counting  # type: ignore[method-assign]
        try:
            hits = index.search("did bob buy a car")
        finally:
            MiniLM.matrix = real  # type: ignore[method-assign]
        assert hits and calls == []


def test_a_scopes_map_is_fitted_on_its_own_turns_only(model_dir: Path, tmp_path: Path) -> None:
    """Another user's turns in the same file change nothing of a scope's query vectors."""
    mine = _turns(_sentences(50, seed=3))
    theirs = [TurnInput("s9", "Eve", t, 1.8e9, "E:0", user_id="eve")
              for t in _sentences(70, seed=4)]
    query = "we went hiking in the park"
    with TurnIndex(tmp_path / "alone.db") as alone:
        alone.add_turns(mine)
        assert alone.flush_vectors(60)
        assert alone._vectors is not None and alone._vectors.encoder is not None
        expected = np.asarray(alone._vectors.encoder.vector(query, ""))
    query_encoder._LOADED.clear()  # a fresh process's encoder (maps are per process)
    with TurnIndex(tmp_path / "shared.db") as shared:
        shared.add_turns(theirs)
        shared.add_turns(mine)
        assert shared.flush_vectors(60)
        assert shared._vectors is not None and shared._vectors.encoder is not None
        got = np.asarray(shared._vectors.encoder.vector(query, ""))
        assert got == pytest.approx(expected, abs=1e-6)
        other = np.asarray(shared._vectors.encoder.vector(query, "eve"))
        assert _cos(other, got) < 0.9999


def test_without_the_token_table_queries_are_embedded_by_the_model(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    where = tiny_model(tmp_path / "plain")
    monkeypatch.setenv(vectors.MODEL_ENV, str(where))
    with TurnIndex(tmp_path / "p.db") as index:
        index.add_turns(_turns(_sentences(40, seed=5)))
        assert index.flush_vectors(60)
        assert index._vectors is not None and index._vectors.encoder is None
        vec = index._vectors.query_vector("bought a car")
        assert list(vec) == pytest.approx(MiniLM(where).embed(["bought a car"])[0], abs=1e-6)


def test_distill_builds_the_token_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m memoryport.storage.turns.distill`` leaves the table beside the model."""
    package = tmp_path / "pkg"
    tiny_model(package / "model")
    monkeypatch.setattr(distill, "source_dir", lambda: package / "model")
    built = tmp_path / "out"
    with pytest.raises(RuntimeError, match="384"):  # the tiny model is not MiniLM's size
        distill.build(built)
    assert not (built / query_encoder.TOKENS_FILE).exists()  # checked before building
    query_encoder.build_tokens(MiniLM(built), built)
    assert query_encoder.for_model_dir(built) is not None


@pytest.mark.postgres
def test_postgres_fits_the_same_maps_as_sqlite(model_dir: Path, tmp_path: Path,
                                               plain_server: pgserver.PgServer,  # noqa: F811
                                               ) -> None:
    from memoryport.storage.turns.postgres import PostgresTurnIndex

    turns = _turns(_sentences(90, seed=6))
    schema = pgserver.fresh_schema("qe")
    try:
        with TurnIndex(tmp_path / "l.db") as lite:
            lite.add_turns(turns)
            assert lite.flush_vectors(60)
            assert lite._vectors is not None and lite._vectors.encoder is not None
            for query in ("did bob buy a car", "we went hiking"):
                lite.candidates(query)
            want = {q: np.asarray(lite._vectors.encoder.vector(q, ""))
                    for q in ("did bob buy a car", "we went hiking")}
        query_encoder._LOADED.clear()
        with PostgresTurnIndex(plain_server.uri, schema=schema) as pg:
            pg.add_turns(turns)
            assert pg.flush_vectors(60)
            assert pg._encoder is not None and pg._encoder.has_map("")
            for query, vec in want.items():
                assert np.asarray(pg._encoder.vector(query, "")) == pytest.approx(vec, abs=1e-5)
            rows, parts = pg.candidates("did bob buy a car")
            assert rows and any(p.dense for p in parts)
    finally:
        pgserver.drop_schema(plain_server.uri, schema)


def test_the_model_can_be_chosen_for_queries(model_dir: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``MEMORYPORT_QUERY_VECTORS=model``: the token table is there but not used."""
    monkeypatch.setenv(query_encoder.CHOICE_ENV, "model")
    assert query_encoder.for_model_dir(model_dir) is None
    with TurnIndex(tmp_path / "m.db") as index:
        assert index._vectors is not None and index._vectors.encoder is None
    monkeypatch.setenv(query_encoder.CHOICE_ENV, "encoder")
    assert query_encoder.for_model_dir(model_dir) is not None


def test_status_says_how_queries_get_their_vectors(model_dir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryport.admin.facts import status_details

    assert "token table fitted" in status_details(tmp_path / "home")["query_vectors"]
    monkeypatch.setenv(query_encoder.CHOICE_ENV, "model")
    assert "=model" in status_details(tmp_path / "home")["query_vectors"]
    monkeypatch.delenv(query_encoder.CHOICE_ENV)
    (model_dir / query_encoder.TOKENS_FILE).unlink()
    assert "build the token table" in status_details(tmp_path / "home")["query_vectors"]


def test_a_fit_that_finds_no_vectors_is_not_retried_in_a_loop(model_dir: Path) -> None:
    """A scope counted past a checkpoint whose fit reads nothing (say its vectors are of
    another length) gets no map and is not due again before its next checkpoint."""
    encoder = query_encoder.for_model_dir(model_dir)
    assert encoder is not None
    fits = query_encoder.FitSchedule()
    fits.want("s")
    fits.counted("s", 40)
    assert fits.next(encoder, uncounted=False) == "s"
    fits.fitted("s", fits.point("s"), ok=False)
    assert fits.next(encoder, uncounted=False) is None and not encoder.has_map("s")
    fits.add("s", 10)  # 50: the next checkpoint
    assert fits.next(encoder, uncounted=False) == "s"


def test_a_words_vector_is_the_models_vector_of_the_word_alone(model_dir: Path) -> None:
    encoder = query_encoder.for_model_dir(model_dir)
    assert encoder is not None
    model = MiniLM(model_dir)
    for word in ("car", "hiking", "park"):  # one token each: exactly the model's vector
        assert encoder.word_vector(word) == pytest.approx(
            np.asarray(model.embed([word])[0]), abs=1e-5)
    table = np.load(model_dir / query_encoder.TOKENS_FILE).astype(np.float64)
    assert encoder.tokenizer.encode("unknown", add_special_tokens=False).ids == [
        VOCAB.index("un"), VOCAB.index("##known")]
    pieces = encoder.word_vector("unknown")  # two tokens: their rows summed, unit length
    expected = table[VOCAB.index("un")] + table[VOCAB.index("##known")]
    assert pieces == pytest.approx(expected / np.linalg.norm(expected), abs=1e-5)


def test_the_expansion_vector_adds_the_querys_own_words(model_dir: Path) -> None:
    from array import array

    from memoryport.storage.turns import expand

    encoder = query_encoder.for_model_dir(model_dir)
    assert encoder is not None
    dim = encoder.dim
    vocabulary = expand.Vocabulary(np, dim)
    stored = np.zeros(dim, dtype=np.float32)
    stored[0] = 1.0  # a stored vector unlike the word's table vector
    vocabulary.add("hiking", stored.tobytes())
    vocabulary.load_scope("=ann", ["hiking"])
    vocabulary.load_scope("=bob", [])
    query = array("f", encoder.vector("hiking dog", None).tobytes())

    def expected(hiking: Any) -> Any:
        words = hiking / np.linalg.norm(hiking) + encoder.word_vector("dog")
        mixed = words / np.linalg.norm(words) + np.asarray(query)
        return mixed / np.linalg.norm(mixed)

    ann = expand.query_vector(query, "What did hiking dog?", "=ann", vocabulary, encoder)
    assert np.asarray(ann) == pytest.approx(expected(stored), abs=1e-5)  # ann holds "hiking"
    # bob's turns do not hold it: the table's vector, whatever another scope stores
    bob = expand.query_vector(query, "What did hiking dog?", "=bob", vocabulary, encoder)
    assert np.asarray(bob) == pytest.approx(expected(encoder.word_vector("hiking")), abs=1e-5)
    # only stopwords and short words: the query's own vector
    assert expand.query_vector(query, "what did a", "=ann", vocabulary, encoder) is query


def _holographic(home: Path, **section: object) -> Any:
    """A ``holographic`` provider opened on ``home`` with ``section`` as its settings."""
    import yaml

    from memoryport.providers.holographic import HolographicProvider

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"holographic": dict(section)}))
    provider = HolographicProvider()
    provider.initialize("s1", home=str(home))
    return provider


@pytest.mark.parametrize("choice", ["table", "model"])
def test_the_query_vectors_setting_chooses_how_queries_are_embedded(
        model_dir: Path, tmp_path: Path, choice: str) -> None:
    """``holographic.query_vectors``: ``table`` (the default) gives a query the token
    table's fitted vector, ``model`` the model's own vector of the query, through the
    provider a user configures; ``memoryport status`` says which."""
    from memoryport.admin.facts import status_details

    home = tmp_path / "home"
    provider = _holographic(home, query_vectors=choice)
    try:
        assert provider.settings.query_vectors == choice
        provider.sync_turn("we went hiking in the park", "sounds great", session_id="s1",
                           speaker="Bob", timestamp=1.7e9, source_id="D1:0")
        assert provider.turns is not None and provider.turns.flush_vectors(60)
        dense = provider.turns._vectors
        assert dense is not None
        vec = np.asarray(dense.query_vector("did bob buy a car"))
        model = np.asarray(MiniLM(model_dir).embed(["did bob buy a car"])[0])
        if choice == "model":
            assert dense.encoder is None
            assert vec == pytest.approx(model, abs=1e-5)
        else:
            assert dense.encoder is not None
            assert vec == pytest.approx(np.asarray(dense.encoder.vector("did bob buy a car",
                                                                         "")), abs=1e-6)
            assert _cos(vec, model) < 0.999  # not the model's vector
        assert [h.source_id for h in provider.recall_items("hiking in the park")[1]][:1] \
            == ["D1:0"]
    finally:
        provider.shutdown()
    said = status_details(home)["query_vectors"]
    assert ("query_vectors: model" in said) == (choice == "model")


def test_a_bad_query_vectors_value_names_the_key_and_the_choices(tmp_path: Path) -> None:
    from memoryport.errors import ConfigError
    from memoryport.providers.holographic.settings import Settings

    with pytest.raises(ConfigError, match="query_vectors") as caught:
        Settings.from_section({"query_vectors": "fast"})
    assert "table" in str(caught.value) and "model" in str(caught.value)
    with pytest.raises(ValueError, match="query_vectors must be one of table, model"):
        TurnIndex(tmp_path / "bad.db", query_vectors="fast")
    assert not (tmp_path / "bad.db").exists()  # refused before the file is created


@pytest.mark.postgres
def test_postgres_follows_the_query_vectors_choice(model_dir: Path,
                                                   plain_server: pgserver.PgServer,  # noqa: F811
                                                   ) -> None:
    from memoryport.storage.turns.postgres import PostgresTurnIndex

    schema = pgserver.fresh_schema("qv")
    try:
        with PostgresTurnIndex(plain_server.uri, schema=schema, query_vectors="model") as pg:
            assert pg.embedder is not None and pg._encoder is None
        with PostgresTurnIndex(plain_server.uri, schema=schema) as pg:
            assert pg._encoder is not None
    finally:
        pgserver.drop_schema(plain_server.uri, schema)
