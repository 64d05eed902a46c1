"""``timeexpr.may_hold``, the ingest path's precheck: when it says a text holds no time
expression, ``resolve`` finds none, for every anchor.

It judges from the words ``search_lexemes.ascii_words`` split for the lexemes (at every
byte that is not an ASCII letter or digit, ``_`` included), not from the time parser's own
split (which keeps ``_`` inside words), and of a text that may be longer than the content
(content, tool name and tool calls joined). The corpus: every string of the LoCoMo dev file,
crafted edge cases and seeded random mixtures of time words, digits, ``_``, ``-`` and
punctuation; each also inside a longer text, as the ingest path sees it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

from memoryport.storage.search_lexemes import ascii_words
from memoryport.storage.timeexpr import MONTHS, has_time_words, may_hold, resolve

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"
ANCHORS = (1.6e9, 1.7e9, 86400.0 * 3)

# fmt: off
CRAFTED = [
    "", " ", "_", "2023-11-16", "x2023-11-16", "2023-1-16", "12-05-", "1-05-2023", "a-05-",
    "may_be", "_may", "may_", "week_end", "yester_day", "2022_", "_2022", "in_2022", "MAY",
    "last-week", "the weekend", "Tomorrow!", "3 days ago", "3_days_ago", "since_March",
    "2 days_ago", "ago", "sun", "sat_", "dec.", "x" * 600 + " may", "tab\tweek", "nul\x00may",
]
PIECES = [
    *MONTHS, "week", "weeks", "weekend", "ago", "last", "since", "sunday", "today", "night",
    "1999", "2023", "2100", "19", "20", "05", "5", "12", "a", "the", "went", "x", "_", "__",
    " ", " ", "-", "-", ".", "/", ":", ",", "'", "\n", "MAY", "Last", "Jan.", "Sept", "in",
]
# fmt: on


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _corpus() -> list[str]:
    assert LOCOMO.exists(), f"{LOCOMO} is missing: the LoCoMo dev file sits beside the repo"
    rng = random.Random(23)
    mixed = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14))) for _ in range(20_000)]
    return [*CRAFTED, *_strings(json.loads(LOCOMO.read_text())), *mixed]


def test_no_time_words_means_no_expression_for_any_anchor() -> None:
    corpus = _corpus()
    checked = skipped = 0
    for text in corpus:
        for whole in (text, f"{text} search [{text}]"):  # content alone, or inside more
            words = ascii_words(whole)
            if words is None:
                continue
            checked += 1
            if not may_hold(text, words):
                skipped += 1
                assert not has_time_words(text), text
                assert all(resolve(text, anchor) == [] for anchor in ANCHORS), text
    assert checked > 60_000
    assert skipped > checked // 4  # most chat text has no time word: the parser is skipped


def test_the_precheck_lets_every_expression_through() -> None:
    for text in _corpus():
        words = ascii_words(text)
        if words is not None and resolve(text, 1.7e9):
            assert may_hold(text, words), text
