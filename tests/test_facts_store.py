"""The fact store on real SQLite files: the labelled contradiction set (precision and
recall through ``FactStore.add``), history, forget, its own migration ledger, safe
queries, and a SIGKILL loop (a fact and its entities are written together or not at all)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facts_contradiction_set import PAIRS
from memoryport.storage.facts import migrations
from memoryport.storage.facts.entities import extract_entities
from memoryport.storage.facts.records import FactInput, Provenance
from memoryport.storage.facts.store import FactStore


def _predictions(path: Path) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for index, (older, newer, label) in enumerate(PAIRS):
        store = FactStore(path, user_id=f"pair-{index}")
        first = store.add(FactInput(older))
        second = store.add(FactInput(newer))
        out.append((label, first.fact.id in second.superseded))
        store.close()
    return out


def test_contradiction_set_precision_and_recall(tmp_path: Path) -> None:
    labels = {label for _, _, label in PAIRS}
    assert len(PAIRS) >= 60 and labels == {"C", "P", "U"}
    results = _predictions(tmp_path / "c.db")
    tp = sum(1 for label, said in results if said and label == "C")
    fp = sum(1 for label, said in results if said and label != "C")
    fn = sum(1 for label, said in results if not said and label == "C")
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    print(f"contradictions: {len(PAIRS)} pairs, precision {precision:.3f}, recall {recall:.3f}")
    assert precision >= 0.9 and recall >= 0.8


def test_retired_facts_keep_their_history(tmp_path: Path) -> None:
    store = FactStore(tmp_path / "h.db")
    who = Provenance("s1", "call-1", "tool", "model")
    old = store.add(FactInput("Alice lives in Paris", provenance=who)).fact
    new = store.add(FactInput("Alice moved to Berlin", provenance=who))
    assert new.superseded == [old.id]
    retired = store.get(old.id)
    assert retired is not None and retired.retired_at is not None
    assert retired.superseded_by == new.fact.id and retired.valid_to is not None
    history = store.revisions(old.id)
    assert [r.action for r in history] == ["add", "retire"]
    assert history[0].session_id == "s1" and history[0].tool_call_id == "call-1"
    assert history[1].before and history[1].before["retired_at"] is None
    assert history[1].after and history[1].after["superseded_by"] == new.fact.id
    assert store.count() == 1 and store.count(include_retired=True) == 2
    store.close()


def test_forget_deletes_content_and_leaves_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    store = FactStore(path)
    fact = store.add(FactInput("My passport number is X1234567")).fact
    assert store.forget(fact.id) is True
    assert store.get(fact.id) is None and store.forget(fact.id) is False
    assert [r.action for r in store.revisions(fact.id)] == ["forget"]
    store.close()
    conn = sqlite3.connect(path)
    dump = "\n".join(conn.iterdump())
    assert "X1234567" not in dump.replace("INSERT INTO \"facts_fts", "")
    conn.close()


def test_own_migration_ledger_beside_other_components(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    conn.execute("INSERT INTO _migrations VALUES ('m001_facts', 0)")  # another namespace
    conn.commit()
    conn.close()
    FactStore(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrations.applied(conn) == ["m001_facts", "m002_source_text", "m003_fact_events",
                                        "m004_fact_generation", "m005_function_word_links"]
    assert migrations.pending(conn) == []
    assert conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)
    conn.close()
    FactStore(tmp_path / "fresh.db").close()
    assert (tmp_path / "fresh.db").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("query", ["user's", "a/b?", "#tag @me", '"quoted', "NEAR(", "*", ""])
def test_queries_never_raise_and_find_what_they_should(tmp_path: Path, query: str) -> None:
    store = FactStore(tmp_path / "q.db")
    store.add(FactInput("The user's editor is vim"))
    hits = store.search(query)
    assert isinstance(hits, list)
    if query == "user's":
        assert [h.content for h in hits] == ["The user's editor is vim"]
    store.close()


def test_entity_rules_do_not_misfire() -> None:
    names = {(e.name, e.kind) for e in extract_entities("Alice doesn't like Bob's cat")}
    assert names == {("Alice", "person"), ("Bob", "person")}
    found = {(e.name, e.kind) for e in extract_entities(
        "Carol works at Acme Corp in Berlin since 7 May 2023 and earns $300")}
    assert {("Acme Corp", "org"), ("Berlin", "place"), ("7 May 2023", "date"),
            ("$300", "number"), ("Carol", "person")} <= found


_WRITER = """
import sys
from pathlib import Path
from memoryport.storage.facts.records import FactInput
from memoryport.storage.facts.store import FactStore
store = FactStore(Path(sys.argv[1]))
start = int(sys.argv[2])
for i in range(start, start + 100000):
    store.add(FactInput(f"Person{i} works at Company{i} Corp in City{i}"))
    if i == start:
        print("ready", flush=True)
"""


def _consistent(path: Path) -> int:
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.execute("INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')")
    facts = conn.execute("SELECT id, content FROM facts").fetchall()
    for fact_id, content in facts:
        linked = {row[0] for row in conn.execute(
            "SELECT e.key FROM fact_entities fe JOIN entities e ON e.id = fe.entity_id"
            " WHERE fe.fact_id = ?", (fact_id,))}
        number = content.split()[0].removeprefix("Person")
        assert {f"person{number}", f"company{number} corp", f"city{number}"} <= linked
        actions = [r[0] for r in conn.execute(
            "SELECT action FROM fact_revisions WHERE fact_id = ?", (fact_id,))]
        assert actions == ["add"]
    conn.close()
    return len(facts)


def test_sigkill_never_leaves_a_fact_without_its_entities(tmp_path: Path) -> None:
    path = tmp_path / "kill.db"
    FactStore(path).close()
    count = 0
    for round_ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(round_ * 100000)],
            stdout=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.05 * (round_ + 1))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        after = _consistent(path)
        assert after > count
        count = after


def test_m003_upgrades_an_older_store_keeping_each_facts_date(tmp_path: Path) -> None:
    """Issue 13: a store written before fact events gets the event columns, and each
    existing fact's ``stated_at`` is its ``valid_from`` (nothing is lost or re-dated)."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    from memoryport.storage.sqlite_ledger import ConnLedger

    ledger = ConnLedger(conn, migrations.LEDGER_TABLE)
    for name, step in migrations.MIGRATIONS[:2]:
        with ledger.transaction(name):
            step(conn)
            ledger.record(name, 0.0)
    conn.execute(
        "INSERT INTO facts(user_id, content, content_hash, category, tags, subject, relation,"
        " qualifier, value, negated, trust_score, valid_from, recorded_at, updated_at,"
        " session_id, message_id, source_kind, actor, speaker)"
        " VALUES ('', 'I like tea', 'h', 'general', '', 'user', 'likes', '', 'tea', 0, 0.5,"
        " 1000.0, 2000.0, 2000.0, '', '', 'turn', 'extractor', 'user')"
    )
    conn.close()
    store = FactStore(path)
    (fact,) = store.list_facts()
    assert (fact.content, fact.stated_at, fact.valid_from) == ("I like tea", 1000.0, 1000.0)
    assert fact.event_start is None and fact.event_words == ""
    store.close()


def test_supersession_chains_and_as_of_on_the_labelled_set(tmp_path: Path) -> None:
    """Issue 13: over every labelled pair (the older said on day 1, the newer on day 10),
    a contradicting pair the store catches is one chain [older, newer] in which the older
    is believed as of day 5 and only the newer as of day 15; every other pair keeps both
    facts live, each believed from its own day. At least the contradiction set's recall of
    the C pairs is caught (the misses are the reader's, reported by the test above)."""
    day = 86_400.0
    t1, t2 = 1_700_000_000.0, 1_700_000_000.0 + 9 * day
    chained = 0
    for index, (older, newer, label) in enumerate(PAIRS):
        store = FactStore(tmp_path / "as_of.db", user_id=f"pair-{index}")
        first = store.add(FactInput(older, valid_from=t1)).fact
        second = store.add(FactInput(newer, valid_from=t2))
        if second.status == "duplicate":
            store.close()
            continue
        newest = second.fact
        then = {f.id for f in store.search(older, limit=50, as_of=t1 + 4 * day)}
        now = {f.id for f in store.search(f"{older} {newer}", limit=50, as_of=t2 + 5 * day)}
        assert first.id in then and newest.id not in then, (older, newer)
        if first.id in second.superseded:
            chained += 1
            assert [f.id for f in store.chain(newest.id)] == [first.id, newest.id]
            assert [f.id for f in store.chain(first.id)] == [first.id, newest.id]
            assert first.id not in now and newest.id in now, (older, newer)
            retired = store.get(first.id)
            assert retired is not None and retired.valid_to is not None
        else:
            assert label != "C" or (older, newer) in _KNOWN_MISSES, (older, newer)
            assert [f.id for f in store.chain(first.id)] == [first.id]
            assert store.get(first.id).retired_at is None  # type: ignore[union-attr]
        store.close()
    assert chained >= 0.8 * sum(1 for *_, label in PAIRS if label == "C")


_KNOWN_MISSES = {
    ("The project uses Postgres as its database", "We decided to use SQLite for our database"),
}
