"""TurnIndex on real SQLite files: storing, ranking with context, scopes, migrations."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from memoryport.storage.turns import TurnIndex, TurnInput, Weights, schema

DAY = 86400.0


def _t(session: str, speaker: str, text: str, stamp: float = 1_700_000_000.0,
       source: str = "", user: str | None = None) -> TurnInput:
    return TurnInput(session, speaker, text, stamp, source, user)


@pytest.fixture
def index(tmp_path: Path) -> TurnIndex:
    idx = TurnIndex(tmp_path / "holographic.db")
    yield idx  # type: ignore[misc]
    idx.close()


def test_add_and_search_return_the_stored_turn(index: TurnIndex) -> None:
    ids = index.add_turns([
        _t("s1", "Caroline", "I went to a pottery class yesterday", 1_690_000_000.0, "D1:1"),
        _t("s1", "Melanie", "Nice, I prefer painting landscapes", 1_690_000_000.0, "D1:2"),
    ])
    assert len(ids) == 2 and ids[0] < ids[1]
    hits = index.search("pottery class")
    assert hits[0].turn_id == ids[0]
    assert (hits[0].speaker, hits[0].source_id, hits[0].session_id) == ("Caroline", "D1:1", "s1")
    assert hits[0].timestamp == 1_690_000_000.0
    assert hits[0].text == "I went to a pottery class yesterday"
    assert index.count() == 2


def test_a_reply_is_found_through_its_neighbour(index: TurnIndex) -> None:
    """"Yes, last week" has no query word; the question before it does (prev signal)."""
    index.add_turns([
        _t("s1", "A", "Did you finally visit the aquarium downtown?"),
        _t("s1", "B", "Yes, last week, it was great"),
        _t("s2", "A", "The weather is cold today"),
    ])
    rows, parts = index.candidates("aquarium")
    by_text = {r[4]: p for r, p in zip(rows, parts, strict=True)}
    reply = by_text["Yes, last week, it was great"]
    assert reply.main == 0 and reply.prev > 0
    assert by_text["Did you finally visit the aquarium downtown?"].next == 0
    assert "Yes, last week, it was great" in [h.text for h in index.search("aquarium")]


def test_neighbours_follow_session_order_across_batches(index: TurnIndex) -> None:
    """Turns of two sessions added interleaved, one per call, link within their session."""
    index.add_turns([_t("a", "X", "zebra question")])
    index.add_turns([_t("b", "X", "unrelated words")])
    index.add_turns([_t("a", "Y", "plain answer")])
    rows, parts = index.candidates("zebra")
    signals = {r[4]: p for r, p in zip(rows, parts, strict=True)}
    assert signals["plain answer"].prev > 0
    assert "unrelated words" not in signals or signals["unrelated words"].prev == 0


def test_session_blocks_match_whether_added_at_once_or_one_by_one(tmp_path: Path) -> None:
    """Re-indexing a session block deletes its old text exactly (contentless FTS5)."""
    turns = [_t("s", "A" if i % 2 else "B", f"line {i} word{i % 7} common") for i in range(70)]
    together = TurnIndex(tmp_path / "a.db")
    single = TurnIndex(tmp_path / "b.db")
    together.add_turns(turns)
    for turn in turns:
        single.add_turns([turn])
    for query in ("word3", "common", "line word5"):
        a = [(r[2], p.session) for r, p in zip(*together.candidates(query), strict=True)]
        b = [(r[2], p.session) for r, p in zip(*single.candidates(query), strict=True)]
        assert [x[0] for x in sorted(a)] == [x[0] for x in sorted(b)]
        assert [x[1] for x in sorted(a)] == pytest.approx([x[1] for x in sorted(b)])
    together.close()
    single.close()


def test_query_naming_the_speaker_boosts_their_turns(index: TurnIndex) -> None:
    index.add_turns([
        _t("s", "Jon", "I like the painting in the hall"),
        _t("s2", "Gina", "I like the painting in the hall"),
    ])
    hits = index.search("What painting does Gina like?")
    assert hits[0].speaker == "Gina"


def test_query_date_window_uses_each_turns_own_timestamp(index: TurnIndex) -> None:
    may = time.mktime((2023, 5, 8, 12, 0, 0, 0, 0, -1))
    index.add_turns([
        _t("old", "A", "we went hiking in the hills", may - 200 * DAY, "old"),
        _t("new", "A", "we went hiking in the hills", may, "new"),
    ])
    assert index.search("Where did they go hiking on 7 May 2023?")[0].source_id == "new"
    assert index.search("When did they go hiking?")[0].score > 0


def test_users_are_isolated(index: TurnIndex) -> None:
    index.add_turns([_t("s", "me", "my secret recipe uses saffron", user="alice")])
    index.add_turns([_t("s", "me", "saffron is expensive", user="bob")])
    index.add_turns([_t("s", "me", "saffron without a user")])
    assert [h.text for h in index.search("saffron", user_id="alice")] == [
        "my secret recipe uses saffron"]
    assert [h.text for h in index.search("saffron", user_id="bob")] == ["saffron is expensive"]
    assert [h.text for h in index.search("saffron")] == ["saffron without a user"]
    assert (index.count("alice"), index.count("bob"), index.count()) == (1, 1, 1)
    assert index.search("saffron", user_id="carol") == []


def test_bad_input_is_refused_and_stores_nothing(index: TurnIndex) -> None:
    good = _t("s", "A", "fine text")
    for bad, words in [
        (_t("", "A", "x"), "session_id is empty"),
        (_t("s", "A", "x", float("nan")), "timestamp must be finite"),
        (_t("s", "A", "x", user=""), "user_id must be None"),
        (_t("s", "A", "nul\x00"), "NUL"),
    ]:
        with pytest.raises(ValueError, match=words):
            index.add_turns([good, bad])
    with pytest.raises(ValueError, match="expected a TurnInput"):
        index.add_turns([{"text": "x"}])  # type: ignore[list-item]
    assert index.count() == 0
    with pytest.raises(ValueError, match="limit must be an integer from 1"):
        index.search("x", limit=0)
    with pytest.raises(ValueError, match="weight when must be"):
        Weights(when=-1)


def test_queries_without_words_or_with_syntax_return_plainly(index: TurnIndex) -> None:
    index.add_turns([_t("s", "A", 'quotes " and (parens) AND OR NOT *')])
    assert index.search("the of and") == []
    assert index.search('"') == []
    assert index.search('parens) AND "quotes')[0].speaker == "A"


def test_migrations_have_their_own_namespace(tmp_path: Path) -> None:
    path = tmp_path / "holographic.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    conn.execute("INSERT INTO _migrations VALUES ('m001_turns', 0)")  # another component's
    conn.close()
    TurnIndex(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.applied(conn) == ["m001_turns", "m002_turn_vectors", "m003_turn_events",
                                    "m004_fts_automerge", "m005_turn_words"]
    assert schema.migrate(conn) == []  # reopening runs nothing
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"turns", "turn_blocks", "_turns_migrations", "_migrations"} <= tables
    conn.close()
    with TurnIndex(path) as again:
        again.add_turns([_t("s", "A", "persisted across opens")])
    with TurnIndex(path) as reopened:
        assert reopened.search("persisted")[0].text == "persisted across opens"
    with pytest.raises(ValueError, match="ledger table name"):
        schema.Ledger(sqlite3.connect(":memory:"), "bad name;")


def test_search_scores_a_bounded_number_of_candidates(index: TurnIndex) -> None:
    """Issue 12: when every session matches, only the ``MAIN_DEPTH`` best turns by BM25,
    their neighbours and the best blocks' turns are scored, not every match."""
    from memoryport.storage.turns.index import MAIN_DEPTH, SESSION_DEPTH

    turns = []
    for n in range(400):
        text = "sqlite sqlite sqlite schema" if n == 123 else f"the sqlite schema note {n}"
        turns += [_t(f"s{n}", "A", f"filler before {n}"), _t(f"s{n}", "B", text),
                  _t(f"s{n}", "A", f"filler after {n}")]
    index.add_turns(turns)
    rows, parts = index.candidates("sqlite schema")
    assert sum(1 for p in parts if p.main > 0) == MAIN_DEPTH < 400
    assert len(rows) <= 3 * MAIN_DEPTH + SESSION_DEPTH * 3
    assert len({r[0] for r in rows}) == len(rows)
    assert index.search("sqlite schema", limit=1)[0].text == "sqlite sqlite sqlite schema"


def test_turn_events_match_the_period_a_query_names(index: TurnIndex) -> None:
    """Issue 13: a turn's time words resolve at write time against its own time ("last
    Friday" said on Mon 8 May 2023 is Fri 5 May), and a query's relative dates resolve
    against the store's latest turn, not the clock: the turn about that day ranks first
    even though the other says the same words and was written closer to it."""
    import datetime as dt

    def at(*day: int) -> float:
        return dt.datetime(*day, 12).timestamp()

    index.add_turns([
        _t("s1", "Ana", "We went hiking in the hills.", at(2023, 4, 24)),
        _t("s2", "Ana", "We went hiking in the hills last Friday.", at(2023, 5, 8)),
        _t("s3", "Ana", "Nothing new today.", at(2023, 5, 20)),
    ])
    rows, parts = index.candidates("Where did Ana go hiking on 5 May 2023?")
    event_of = {row[4]: part.event for row, part in zip(rows, parts, strict=True)}
    assert event_of["We went hiking in the hills last Friday."] == 1.0
    assert event_of["We went hiking in the hills."] == 0.0
    top = index.search("Where did Ana go hiking two weeks ago?", limit=1)[0]
    assert top.text == "We went hiking in the hills last Friday."  # anchored on 20 May


def test_m003_backfills_events_of_turns_stored_before_it(tmp_path: Path) -> None:
    import datetime as dt

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema.migrate(conn, stop_before="m003_turn_events")
    conn.execute(
        "INSERT INTO turns(user_id, session_id, position, speaker, text, timestamp,"
        " source_id, recorded_at, temporal) VALUES ('', 's', 0, 'A', 'I left last week.',"
        " ?, '', 0, 1)", (dt.datetime(2023, 5, 8, 12).timestamp(),))
    conn.close()
    with TurnIndex(path) as index:
        rows = index._conn.execute("SELECT precision, words FROM turn_events").fetchall()
    assert rows == [("week", "last week")]
