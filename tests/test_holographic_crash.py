"""SIGKILL at random moments while two processes ingest turns (with vectors) and facts
into one ``holographic.db``: after every kill the store is consistent — each turn has its
word-index row and nothing else does, no vector lacks its turn (vectors are written after
their turn, off the turn's path, and a reopened index fills in the missing ones),
session positions have no gaps, every fact has its entities and its revisions, a
retirement is complete, no fact is live twice — every acknowledged write is there, and
ingest continues on the same file."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path

from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput

_EMBEDDER = textwrap.dedent(
    """
    import hashlib, math
    from array import array

    class HashEmbedder:
        '''Deterministic test vectors: hashed words, L2-normalised, 32 float32s.'''

        name = "test-hash-32"

        def embed(self, texts):
            out = []
            for text in texts:
                vec = [0.0] * 32
                for word in text.lower().split():
                    digest = hashlib.blake2b(word.encode(), digest_size=2).digest()
                    vec[digest[0] % 32] += 1.0 if digest[1] % 2 else -1.0
                norm = math.sqrt(sum(v * v for v in vec)) or 1.0
                out.append(array("f", [v / norm for v in vec]))
            return out
    """
)

_WORKER = _EMBEDDER + textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memoryport.providers.holographic.extract import facts_in_text
    from memoryport.storage.facts.records import Provenance
    from memoryport.storage.facts.store import FactStore
    from memoryport.storage.turns import TurnIndex, TurnInput

    db, tag = Path(sys.argv[1]), sys.argv[2]
    turns = TurnIndex(db, embedder=HashEmbedder())
    facts = FactStore(db)
    cities = ["Lisbon", "Porto", "Berlin", "Paris", "Oslo"]
    print("ready", flush=True)
    for n in range(100_000):
        stamp = 1_700_000_000.0 + n * 60
        session = f"{tag}-s{n // 40}"
        text = (f"I live in {cities[n % 5]}. My favorite number is {n}. I like {tag}x{n}."
                f" We met last Friday at {tag}y{n}.")
        turns.add_turns([TurnInput(session, "user", text, stamp, f"{tag}:{n}"),
                         TurnInput(session, "assistant", f"Noted {tag}z{n}.", stamp)])
        items = facts_in_text(text, speaker="user", timestamp=stamp,
                              provenance=Provenance(session, f"{tag}:{n}", "turn", "extractor"))
        facts.add_many(items)
        print("ack", n, flush=True)
    """
)

_EMBED_NS: dict[str, object] = {}
exec(_EMBEDDER, _EMBED_NS)  # the same test embedder in this process (reopen + continue)


def _round(db: Path, tags: list[str], delay: float) -> dict[str, list[int]]:
    """Start a writer per tag, SIGKILL all after ``delay`` s; the acknowledged turns."""
    procs = {tag: subprocess.Popen([sys.executable, "-c", _WORKER, str(db), tag],
                                   stdout=subprocess.PIPE, text=True) for tag in tags}
    for proc in procs.values():
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    for proc in procs.values():
        proc.send_signal(signal.SIGKILL)
    acked: dict[str, list[int]] = {}
    for tag, proc in procs.items():
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        acked[tag] = [int(line.split()[1]) for line in out.splitlines() if line.startswith("ack ")]
    return acked


def _ids(conn: sqlite3.Connection, sql: str) -> set[int]:
    return {int(row[0]) for row in conn.execute(sql)}


def _check_turns(conn: sqlite3.Connection) -> None:
    turns = _ids(conn, "SELECT id FROM turns")
    assert _ids(conn, "SELECT turn_id FROM turn_vectors") <= turns, "vector without turn"
    models = conn.execute("SELECT DISTINCT model, length(vec) FROM turn_vectors").fetchall()
    assert models in ([], [("test-hash-32", 128)]), models
    assert turns == _ids(conn, "SELECT id FROM turns_fts_docsize"), "FTS rows != turns"
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if "turn_events" in tables:  # event windows of the turns' time words (when present)
        assert _ids(conn, "SELECT turn_id FROM turn_events") <= turns, "orphaned event"
    blocks = {(u, s, p // 64) for u, s, p in
              conn.execute("SELECT user_id, session_id, position FROM turns")}
    stored = set(conn.execute("SELECT user_id, session_id, block FROM turn_blocks"))
    assert blocks == stored, "session block missing or orphaned"
    assert _ids(conn, "SELECT id FROM turn_blocks") == _ids(
        conn, "SELECT id FROM blocks_fts_docsize")
    for session, count, top in conn.execute(
            "SELECT session_id, count(*), max(position) FROM turns GROUP BY session_id"):
        assert top == count - 1, f"{session}: positions have a gap"
    for table in ("turns_fts", "blocks_fts"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


def _check_facts(conn: sqlite3.Connection) -> None:
    facts = _ids(conn, "SELECT id FROM facts")
    assert facts == _ids(conn, "SELECT fact_id FROM fact_entities"), "fact without entities"
    added = _ids(conn, "SELECT fact_id FROM fact_revisions WHERE action = 'add'")
    assert facts == added, "fact without its add revision"
    retired = _ids(conn, "SELECT id FROM facts WHERE retired_at IS NOT NULL")
    assert retired == _ids(conn, "SELECT fact_id FROM fact_revisions WHERE action = 'retire'")
    assert not conn.execute("SELECT 1 FROM facts WHERE retired_at IS NOT NULL AND"
                            " (superseded_by IS NULL OR valid_to IS NULL)").fetchall()
    twice = conn.execute(
        "SELECT subject, relation, qualifier, count(*) FROM facts WHERE retired_at IS NULL"
        " AND relation IN ('lives_in', 'favorite') GROUP BY 1, 2, 3 HAVING count(*) > 1"
    ).fetchall()
    assert not twice, f"two live values of a single-valued relation: {twice}"
    conn.execute("INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')")


def _check(db: Path, acked: dict[str, list[int]]) -> None:
    conn = sqlite3.connect(str(db))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        _check_turns(conn)
        _check_facts(conn)
        sources = {row[0] for row in conn.execute("SELECT source_id FROM turns")}
        likes = {row[0] for row in conn.execute("SELECT content FROM facts")}
        for tag, numbers in acked.items():
            for n in numbers:
                assert f"{tag}:{n}" in sources, f"acknowledged turn {tag}:{n} lost"
                assert f"I like {tag}x{n}" in likes, f"acknowledged fact {tag}:{n} lost"
    finally:
        conn.close()


def test_sigkill_loop_leaves_a_consistent_store_and_ingest_continues(tmp_path: Path) -> None:
    db = tmp_path / "holographic.db"
    rng = random.Random(1212)
    acked: dict[str, list[int]] = defaultdict(list)
    for number in range(6):
        for tag, numbers in _round(db, [f"r{number}a", f"r{number}b"],
                                   rng.uniform(0.05, 0.6)).items():
            acked[tag] += numbers
        _check(db, acked)
    assert sum(map(len, acked.values())) > 20, "too few writes acknowledged to prove much"
    # Reopened in this process: the index and the store still take writes and find them.
    embedder = _EMBED_NS["HashEmbedder"]()  # type: ignore[operator]
    with TurnIndex(db, embedder=embedder) as turns:
        turns.add_turns([TurnInput("after", "user", "I finally adopted a corgi.", 1.8e9)])
        assert turns.search("corgi adopted")[0].text == "I finally adopted a corgi."
        assert turns.flush_vectors(120)  # every turn the kills left without one has it now
    conn = sqlite3.connect(str(db))
    missing = conn.execute("SELECT count(*) FROM turns WHERE id NOT IN"
                           " (SELECT turn_id FROM turn_vectors)").fetchone()[0]
    conn.close()
    assert missing == 0, "turns still without a vector after the back-fill"
    store = FactStore(db)
    try:
        assert store.search("favorite number")
    finally:
        store.close()
    _check(db, acked)
