"""Relative-date resolution: a table of expressions, anchors and expected event windows."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryport.storage.timeexpr import TimeExpr, has_time_words, resolve


def at(day: str, hour: int = 14) -> float:
    """Local epoch seconds of ``day`` (YYYY-MM-DD) at ``hour``."""
    return datetime.strptime(day, "%Y-%m-%d").replace(hour=hour).timestamp()


def ymd(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d")


THU = "2023-11-16"  # a Thursday
MON = "2022-04-11"  # a Monday
SUN = "2022-09-18"  # a Sunday

# text, anchor day, expected words, start, end (exclusive), precision
TABLE = [
    ("yesterday", THU, "yesterday", "2023-11-15", "2023-11-16", "day"),
    ("Yesterday I took my three dogs to the beach", "2022-08-10", "Yesterday",
     "2022-08-09", "2022-08-10", "day"),
    ("today", THU, "today", THU, "2023-11-17", "day"),
    ("tonight", THU, "tonight", THU, "2023-11-17", "day"),
    ("this morning", THU, "this morning", THU, "2023-11-17", "day"),
    ("last night", THU, "last night", "2023-11-15", THU, "day"),
    ("tomorrow", THU, "tomorrow", "2023-11-17", "2023-11-18", "day"),
    ("tomorrow evening", THU, "tomorrow evening", "2023-11-17", "2023-11-18", "day"),
    ("the day before yesterday", THU, "the day before yesterday", "2023-11-14",
     "2023-11-15", "day"),
    ("the day after tomorrow", THU, "the day after tomorrow", "2023-11-18", "2023-11-19", "day"),
    ("the other day", THU, "the other day", "2023-11-09", THU, "week"),
    ("last Friday", THU, "last Friday", "2023-11-10", "2023-11-11", "day"),
    ("last Thursday", THU, "last Thursday", "2023-11-09", "2023-11-10", "day"),
    ("next Friday", THU, "next Friday", "2023-11-17", "2023-11-18", "day"),
    ("this Monday", THU, "this Monday", "2023-11-13", "2023-11-14", "day"),
    ("we met on Saturday", MON, "on Saturday", "2022-04-09", "2022-04-10", "day"),
    ("what did we talk about last Tuesday?", THU, "last Tuesday", "2023-11-14",
     "2023-11-15", "day"),
    ("last week", THU, "last week", "2023-11-06", "2023-11-13", "week"),
    ("Dyed my hair last week - come see!", "2022-04-15", "last week", "2022-04-04",
     "2022-04-11", "week"),
    ("next week", THU, "next week", "2023-11-20", "2023-11-27", "week"),
    ("this week", THU, "this week", "2023-11-13", "2023-11-20", "week"),
    ("last weekend", THU, "last weekend", "2023-11-11", "2023-11-13", "week"),
    ("this weekend", THU, "this weekend", "2023-11-18", "2023-11-20", "week"),
    ("over the weekend", MON, "over the weekend", "2022-04-09", "2022-04-11", "week"),
    ("over the weekend", SUN, "over the weekend", "2022-09-17", "2022-09-19", "week"),
    ("next month", THU, "next month", "2023-12-01", "2024-01-01", "month"),
    ("next month", "2023-12-20", "next month", "2024-01-01", "2024-02-01", "month"),
    ("last month", "2023-01-05", "last month", "2022-12-01", "2023-01-01", "month"),
    ("this month", THU, "this month", "2023-11-01", "2023-12-01", "month"),
    ("last year", THU, "last year", "2022-01-01", "2023-01-01", "year"),
    ("next year", THU, "next year", "2024-01-01", "2025-01-01", "year"),
    ("3 years ago", THU, "3 years ago", "2020-01-01", "2021-01-01", "year"),
    ("two months ago", THU, "two months ago", "2023-09-01", "2023-10-01", "month"),
    ("a week ago", THU, "a week ago", "2023-11-06", "2023-11-13", "week"),
    ("a couple of weeks ago", THU, "a couple of weeks ago", "2023-10-30", "2023-11-06", "week"),
    ("5 days ago", THU, "5 days ago", "2023-11-11", "2023-11-12", "day"),
    ("in two days", THU, "in two days", "2023-11-18", "2023-11-19", "day"),
    ("3 weeks from now", THU, "3 weeks from now", "2023-12-04", "2023-12-11", "week"),
    ("the past 3 days", THU, "the past 3 days", "2023-11-13", "2023-11-17", "day"),
    ("earlier this week", THU, "earlier this week", "2023-11-13", "2023-11-17", "week"),
    ("later this month", THU, "later this month", "2023-11-17", "2023-12-01", "month"),
    ("the week before 16 Nov 2023", "2024-01-01", "the week before 16 Nov 2023",
     "2023-11-09", "2023-11-16", "week"),
    ("the weekend before 16 Nov 2023", "2024-01-01", "the weekend before 16 Nov 2023",
     "2023-11-11", "2023-11-13", "week"),
    ("the Monday before July 24, 2023", "2024-01-01", "the Monday before July 24, 2023",
     "2023-07-17", "2023-07-18", "day"),
    ("the Friday after 3 March 2024", "2024-05-01", "the Friday after 3 March 2024",
     "2024-03-08", "2024-03-09", "day"),
    ("the day before 1 Jan 2024", "2024-05-01", "the day before 1 Jan 2024", "2023-12-31",
     "2024-01-01", "day"),
    ("the month after May 2023", "2024-05-01", "the month after May 2023", "2023-06-01",
     "2023-07-01", "month"),
    ("the week of 3 March 2024", "2024-05-01", "the week of 3 March 2024", "2024-02-26",
     "2024-03-04", "week"),
    ("16 Nov 2023", "2024-05-01", "16 Nov 2023", THU, "2023-11-17", "day"),
    ("November 16th, 2023", "2024-05-01", "November 16th, 2023", THU, "2023-11-17", "day"),
    ("on 2023-11-16", "2024-05-01", "2023-11-16", THU, "2023-11-17", "day"),
    ("May 7", THU, "May 7", "2023-05-07", "2023-05-08", "day"),
    ("December 24", THU, "December 24", "2022-12-24", "2022-12-25", "day"),
    ("May 2023", "2024-05-01", "May 2023", "2023-05-01", "2023-06-01", "month"),
    ("in May", THU, "in May", "2023-05-01", "2023-06-01", "month"),
    ("in December", THU, "in December", "2022-12-01", "2023-01-01", "month"),
    ("next March", THU, "next March", "2024-03-01", "2024-04-01", "month"),
    ("last November", THU, "last November", "2022-11-01", "2022-12-01", "month"),
    ("since March", THU, "since March", "2023-03-01", "2023-11-17", "month"),
    ("since 2020", THU, "since 2020", "2020-01-01", "2023-11-17", "year"),
    ("since last week", THU, "since last week", "2023-11-06", "2023-11-17", "week"),
    ("in 2022", THU, "in 2022", "2022-01-01", "2023-01-01", "year"),
    ("last summer", THU, "last summer", "2023-06-01", "2023-09-01", "month"),
    ("last summer", "2023-07-10", "last summer", "2022-06-01", "2022-09-01", "month"),
    ("next winter", THU, "next winter", "2023-12-01", "2024-03-01", "month"),
]


@pytest.mark.parametrize(("text", "anchor", "words", "start", "end", "precision"), TABLE)
def test_table(text: str, anchor: str, words: str, start: str, end: str, precision: str) -> None:
    found = resolve(text, at(anchor))
    assert [(e.words, ymd(e.start), ymd(e.end), e.precision) for e in found] == [
        (words, start, end, precision)
    ]


def test_table_is_large_enough() -> None:
    assert len(TABLE) >= 40


def test_words_and_span_point_into_the_text() -> None:
    text = "So, the week before 16 Nov 2023 I moved; yesterday I unpacked."
    found = resolve(text, at(THU))
    assert [e.words for e in found] == ["the week before 16 Nov 2023", "yesterday"]
    assert all(text[e.span[0] : e.span[1]] == e.words for e in found)
    assert found[0].absolute and not found[1].absolute


@pytest.mark.parametrize(
    "text",
    [
        "I may go to the gym",  # the verb "may" is not the month
        "this may be hard",
        "no time words here at all",
        "the meeting lasted for hours",
        "February 30, 2023",  # no such day
        "",
    ],
)
def test_no_expression(text: str) -> None:
    assert resolve(text, at(THU)) == []


def test_fast_precheck() -> None:
    assert not has_time_words("plain words about dogs and beaches")
    assert has_time_words("Yesterday was fun")


@pytest.mark.parametrize("anchor", [float("nan"), float("inf"), 1e20])
def test_bad_anchor_is_a_clear_error(anchor: float) -> None:
    with pytest.raises(ValueError, match="anchor must be a finite epoch time"):
        resolve("yesterday", anchor)


def test_result_type() -> None:
    (expr,) = resolve("yesterday", at(THU))
    assert isinstance(expr, TimeExpr) and expr.end - expr.start == pytest.approx(86400, abs=3600)


# --------------------------------------------------------------------------- fast paths
# resolve() rejects most text with one byte translation and a set lookup, picks rules by
# the whole words a text holds, and runs lower-case patterns on lower-cased text. These
# tests pin that the results equal the plain reading: every rule's gate on the lower-cased
# text, then its IGNORECASE pattern on the text itself.


def reference(text: str, anchor: float) -> list[tuple[str, float, float, str, tuple[int, int]]]:
    """resolve() without the fast paths (gates and IGNORECASE patterns on every text)."""
    from memoryport.storage import timeexpr as te

    day = datetime.fromtimestamp(anchor).date()
    if not text or not any(g[0].search(text.lower()) for g in te._GATES):
        return []
    cands = []
    for gate, _words, _also, pattern, _lower, handler in te._GATES:
        if not gate.search(text.lower()):
            continue
        for m in pattern.finditer(text):
            if te._LOWER_MAY.search(m.group(0)):
                continue
            try:
                got = handler(m, day)
            except (ValueError, OverflowError, KeyError):
                continue
            if got is not None:
                cands.append((m.start(), m.end(), got[0]))
    chosen: list[tuple[int, int, tuple[object, ...]]] = []
    for c in sorted(cands, key=lambda c: (c[0] - c[1], c[0])):
        if all(c[1] <= o[0] or o[1] <= c[0] for o in chosen):
            chosen.append(c)
    out = []
    for begin, finish, (low, high, precision) in sorted(chosen, key=lambda c: c[0]):
        since = te._SINCE.search(text, 0, begin)
        if since and low <= day:
            begin, high = since.start(), max(high, day + te.timedelta(days=1))
        out.append((text[begin:finish], te._epoch(low), te._epoch(high), precision,
                    (begin, finish)))
    return out


def variants() -> list[str]:
    import random

    rng = random.Random(3)
    phrases = [row[0] for row in TABLE] + [
        "I may go", "May 7", "this  morning", "this\nmorning", "in  two\n days", "since\nMarch",
        "2023-11-16", "x2023-11-16", "wedding", "sunny", "the day before 3 decks", "Sept 3rd",
    ]
    fillers = ["the", "we", "went", ",", ".", "caf\u00e9", "\u2019", "\u6771\u4eac",
               "\u0130stanbul", "\u017fince", "\u0131n", "\u212aelvin", "in", "last", "this",
               "ago", "day", "1999", "20\u0662\u0663", "\u0663"]
    out = []
    for _ in range(3000):
        parts = [rng.choice(fillers) if rng.random() < 0.5 else rng.choice(phrases)
                 for _ in range(rng.randint(1, 6))]
        text = rng.choice([" ", "  ", "\n", ", "]).join(parts)
        out.append(rng.choice([text, text.upper(), text.title()]))
    return out


@pytest.mark.parametrize("anchor", [THU, MON, SUN, "2024-02-29"])
def test_fast_paths_equal_the_plain_reading(anchor: str) -> None:
    for text in variants():
        got = [(e.words, e.start, e.end, e.precision, e.span) for e in resolve(text, at(anchor))]
        assert got == reference(text, at(anchor)), text


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("caf\u00e9 \u2013 yesterday we met", ["yesterday"]),  # not ASCII, lines up
        ("\u0130stanbul last week, then yesterday", ["last week", "yesterday"]),  # İ -> i̇
        ("\u017fince March", ["\u017fince March"]),  # IGNORECASE reads ſ as s
        ("\u0131n 2022", ["\u0131n 2022"]),  # ... and ı as i
        ("\u212aELVIN: LAST WEEK", ["LAST WEEK"]),
        ("ON 2023-11-16 AND SINCE  MARCH", ["2023-11-16", "SINCE  MARCH"]),
        ("the wedding was sunny", []),  # "wed", "sun" are not weekdays here
        ("in 20\u0662\u0663", ["in 20\u0662\u0663"]),  # \d reads other digits: a year
        ("caf\u00e9 since 19\u0669\u0669, in \u0663 days", ["since 19\u0669\u0669",
                                                          "in \u0663 days"]),
    ],
)
def test_case_and_unicode_spans(text: str, words: list[str]) -> None:
    found = resolve(text, at(THU))
    assert [e.words for e in found] == words
    assert all(text[e.span[0] : e.span[1]] == e.words for e in found)
    assert [(e.words, e.start, e.end) for e in found] == [
        (r[0], r[1], r[2]) for r in reference(text, at(THU))
    ]


@pytest.mark.parametrize("anchor", [0.0, 1e10, 1_700_000_000, -86400.0 * 400])
def test_anchors_outside_the_common_range_still_resolve(anchor: float) -> None:
    (expr,) = resolve("yesterday", anchor)
    day = datetime.fromtimestamp(anchor).date()
    assert ymd(expr.end) == day.isoformat()


def test_bad_anchor_is_an_error_even_without_time_words() -> None:
    with pytest.raises(ValueError, match="anchor must be a finite epoch time"):
        resolve("no time words here", float("nan"))
    with pytest.raises(ValueError, match="anchor must be a finite epoch time"):
        resolve("", "yesterday")  # type: ignore[arg-type]


def test_import_writes_each_sessions_events_once_on_its_own_messages(tmp_path: Path) -> None:
    import io

    from memoryport.storage.sessions.sqlite import SQLiteSessionStore

    source = SQLiteSessionStore(tmp_path / "a.db")
    for n, (first, second) in enumerate([("yesterday we met", "plain"), ("x", "last week")]):
        sid = source.create_session(f"s{n}", source="cli").id
        source.append_messages(sid, [
            {"role": "user", "content": first, "timestamp": at(THU)},
            {"role": "assistant", "content": second, "timestamp": at(THU) + 1},
        ])
    out = io.StringIO()
    source.export_jsonl(out)
    target = SQLiteSessionStore(tmp_path / "b.db")
    for _ in range(2):  # the second import replaces both sessions: no events left behind
        target.import_jsonl(out.getvalue().splitlines(), on_conflict="replace")
    rows = target.conn.execute(
        "SELECT m.content, e.words, e.precision FROM message_events e"
        " JOIN messages m ON m.id = e.message_id ORDER BY m.id"
    ).fetchall()
    assert [tuple(r) for r in rows] == [("yesterday we met", "yesterday", "day"),
                                       ("last week", "last week", "week")]
    assert target.conn.execute("SELECT count(*) FROM message_events").fetchone()[0] == 2
    source.close()
    target.close()


# --------------------------------------------------------------------------- property
# Text built from the pieces the rules look for (time words, numbers, dates, relative
# words, look-alike letters that IGNORECASE folds, other digits, CJK), joined by any
# separators and cased at random, plus arbitrary text: the fast paths (word pre-check,
# rules picked by the words held, lower-case patterns) find exactly what the plain
# reading finds, and has_time_words is never False for a text with an expression.
_PIECES = [
    "yesterday", "Today", "tonight", "this morning", "last night", "the other day", "ago",
    "since", "week", "weekend", "month", "year", "days", "last", "next", "this", "past",
    "coming", "previous", "on", "in", "of", "the", "before", "after", "prior to", "by",
    "early", "mid-", "earlier", "later", "from now", "a couple of", "few", "two", "3", "12",
    "16", "1999", "2023", "2023-11-16", "1-02-", "May", "may", "Sept", "Nov.", "March",
    "mar", "Friday", "fri", "wed", "sunday", "summer", "fall", "16th", "3rd", "\u017fince",
    "\u0131n", "\u212aelvin", "\u0130stanbul", "caf\u00e9", "\u6771\u4eac", "20\u0662\u0663",
    "\u0663", "x2023", "_week", "week_", "dogs", ",", ".", "-", "'",
]  # fmt: skip
_SEPARATORS = st.sampled_from([" ", "  ", "\n", ", ", "", "-", "\t", "/"])
_TEXTS = st.one_of(
    st.lists(st.tuples(st.sampled_from(_PIECES), _SEPARATORS), max_size=10).map(
        lambda parts: "".join(p + s for p, s in parts)),
    st.text(max_size=40),
).flatmap(lambda t: st.sampled_from([t, t.upper(), t.title(), t.swapcase()]))
_ANCHORS = st.floats(min_value=at("1990-01-01"), max_value=at("2035-12-31"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS, anchor=_ANCHORS)
def test_property_fast_paths_equal_the_plain_reading(text: str, anchor: float) -> None:
    got = [(e.words, e.start, e.end, e.precision, e.span) for e in resolve(text, anchor)]
    expected = reference(text, anchor)
    assert got == expected
    if expected:
        assert has_time_words(text)
