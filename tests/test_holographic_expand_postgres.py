"""Query expansion on the PostgreSQL turn index: the same terms and scores as SQLite's.

The words of a user's turns are embedded by the index's background writer, stored in
the transaction of the turns' vectors and kept per user (``turn_words``, under row-level
security); a query expands only through its own user's words, and each turn's
``expand`` score is SQLite's (cosine times the scope's BM25 idf). Real server
(tests/pgserver.py), real SQLite file, the ``Embedder`` of
``test_holographic_expand_scope`` (no model needed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import pgserver
from memoryport.storage.turns import TurnIndex, TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex
from test_holographic_expand_scope import QUESTION, DirectionEmbedder, _alice, _bob, _bob_view

pytestmark = pytest.mark.postgres


@pytest.fixture
def schema(pg_server: pgserver.PgServer) -> Iterator[str]:
    """A fresh schema, dropped after the test."""
    name = pgserver.fresh_schema("expand")
    yield name
    pgserver.drop_schema(pg_server.uri, name)


def test_expansion_scores_as_on_sqlite_and_stays_in_scope(
        tmp_path: Path, pg_server: pgserver.PgServer, schema: str) -> None:
    """Bob's expand candidates and scores on PostgreSQL, beside Alice's 25 nearer words,
    are those of a SQLite file holding Bob's turns alone; without expansion (weight 0)
    his guitar turn is not a candidate."""
    with TurnIndex(tmp_path / "alone.db", embedder=DirectionEmbedder()) as lite:
        lite.add_turns(_bob())
        assert lite.flush_vectors(30)
        alone = _bob_view(lite)
    assert set(alone) == {"B:4"}
    with PostgresTurnIndex(pg_server.uri, schema=schema, embedder=DirectionEmbedder()) as pg:
        pg.add_turns(_alice())
        assert pg.flush_vectors(30)  # words are embedded in the background, as on SQLite
        assert _bob_view(pg) == {}  # Bob has no turns yet: nothing expands
        pg.add_turns(_bob())
        assert pg.flush_vectors(30)
        assert _bob_view(pg) == pytest.approx(alone, rel=1e-6)
        assert "B:4" in [h.source_id for h in pg.search(QUESTION, limit=3, user_id="bob")]
        pg.add_turns([TurnInput("b4", "Bob", "My ukulele is out of tune.", 0.0, "B:6", "bob")])
        assert pg.flush_vectors(30)
        assert set(_bob_view(pg)) == {"B:4", "B:6"}  # a new word of Bob's, once written
    with PostgresTurnIndex(pg_server.uri, schema=schema, embedder=DirectionEmbedder()) as pg:
        assert set(_bob_view(pg)) == {"B:4", "B:6"}  # read back from the server
    with psycopg.connect(pg_server.uri) as conn:
        words = {r[0]: r[1] for r in conn.execute(
            f'SELECT user_id, count(*) FROM "{schema}".turn_words GROUP BY user_id')}
        secured = conn.execute(
            "SELECT c.relrowsecurity AND c.relforcerowsecurity FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relname = 'turn_words'", (schema,)).fetchone()
        policies = {r[0] for r in conn.execute(
            "SELECT policyname FROM pg_policies WHERE schemaname = %s"
            " AND tablename = 'turn_words'", (schema,))}
    assert words["alice"] == 25 + 2 and words["bob"] > 0  # instrument + "tonight", "tried"
    assert secured == (True,) and policies == {"user_scope", "read_all"}
