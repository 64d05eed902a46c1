"""Turn vectors on a PostgreSQL without pgvector (the distribution's server): stored as
float32 ``bytea``, the nearest turns join the candidates and the ``dense`` signal equals
the SQLite index's (the pgvector case is in test_postgres_holographic.py)."""

from __future__ import annotations

import math
import zlib
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
import pytest

import pgserver
from memoryport.storage.turns import TurnIndex, TurnInput
from memoryport.storage.turns.postgres import PostgresTurnIndex

pytestmark = pytest.mark.postgres

T0 = 1_684_000_000.0
_TOPICS = {"kids": 0, "paint": 0, "painted": 0, "beach": 1, "camped": 1, "stars": 1}


class TopicEmbedder:
    """A real, tiny ``Embedder``: topic buckets plus a small part from the text's checksum
    (no two texts tie, so the nearest turns are one set whatever breaks ties)."""

    name = "topics-crc"

    def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """One unit vector per text."""
        out = []
        for text in texts:
            vec = [0.0, 0.0, 0.0, zlib.crc32(text.encode()) / 2**32 * 0.05]
            for word in text.lower().replace(",", " ").split():
                vec[_TOPICS.get(word, 2)] += 1.0 if word in _TOPICS else 0.1
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append(array("f", [v / norm for v in vec]))
        return out


@pytest.fixture(scope="module")
def plain_server() -> Iterator[pgserver.PgServer]:
    """The distribution's PostgreSQL: contrib, but no pgvector."""
    server = pgserver.start_system_server()
    yield server
    server.stop()


def _turns() -> list[TurnInput]:
    lines = ("the kids painted the fence", "we camped on the beach", "stars over the beach",
             "paint for the kids room", "a quiet evening at home", "the beach was cold")
    return [TurnInput(f"s{n % 3}", ("Ann", "Bo")[n % 2], f"{lines[n % 6]}, turn {n}",
                      T0 + n, f"t{n}") for n in range(48)]


def test_bytea_vectors_rank_as_on_sqlite(tmp_path: Path, plain_server: pgserver.PgServer
                                         ) -> None:
    schema = pgserver.fresh_schema("vec")
    try:
        with TurnIndex(tmp_path / "v.db", embedder=TopicEmbedder()) as lite, \
                PostgresTurnIndex(plain_server.uri, schema=schema,
                                  embedder=TopicEmbedder()) as pg:
            lite.add_turns(_turns())
            pg.add_turns(_turns())
            assert lite.flush_vectors(60)
            assert pg.flush_vectors(60)  # both write vectors in the background
            expanded = False
            for query in ("what did the kids paint", "where did they camp", "evening"):
                rows_l, parts_l = lite.candidates(query)
                rows_p, parts_p = pg.candidates(query)
                dense_l = {r[6]: p.dense for r, p in zip(rows_l, parts_l, strict=True)}
                dense_p = {r[6]: p.dense for r, p in zip(rows_p, parts_p, strict=True)}
                assert any(dense_l.values())
                assert dense_p == pytest.approx(dense_l, rel=1e-5)
                expand_l = {r[6]: p.expand for r, p in zip(rows_l, parts_l, strict=True)}
                expand_p = {r[6]: p.expand for r, p in zip(rows_p, parts_p, strict=True)}
                assert expand_p == pytest.approx(expand_l, rel=1e-5)
                expanded = expanded or any(expand_l.values())
        assert expanded  # the queries do expand
        with psycopg.connect(plain_server.uri) as conn:
            kind = conn.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
                " WHERE attrelid = to_regclass(%s) AND attname = 'vec'",
                (f"{schema}.turn_vectors",)).fetchone()
        assert kind == ("bytea",)
    finally:
        pgserver.drop_schema(plain_server.uri, schema)
