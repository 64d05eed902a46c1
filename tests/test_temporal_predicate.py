"""``has_temporal_expression``'s ASCII fast path gives the regex's answer on every text.

The reference is the predicate as it was before the fast path: the module's ``_TEMPORAL``
regex searched in the lower-cased text. The corpus: every string of the LoCoMo dev file
(turns, dates, questions, answers), crafted dates, times, relative expressions, edge
cases of word boundaries, CJK and other non-ASCII text, and seeded random mixtures of
those pieces.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

from memoryport.storage.sessions import temporal
from memoryport.storage.sessions.temporal import has_temporal_expression
from memoryport.storage.timeexpr import MONTHS

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"

CRAFTED = [
    "", " ", "\n", "a", "0", "00", "1/2", "1.2", "12/05", "9.30", "123/456", "1/", "/2",
    "3 / 4", "3./4", "v1.0", "1.", ".5", "12:30", "2022", "1999", "1899", "2100", "20222",
    "202", "2022a", "a2022", "_2022", "2022_", "2022-05-01", "May 2023", "MAY", "may-be",
    "mayday", "Mar.", "marching", "in sept", "SEPT.", "sep", "on Jan 3rd", "jan_", "_week",
    "week_end", "weekend", "WEEKS", "last", "LaSt", "lasting", "next-door", "sinceR",
    "yesterday's", "Tomorrow!", "tonight?", "2 days ago", "agog", "Recently,", "lately",
    "earlier", "later", "Monday", "tues", "Sunday", "sundays", "a year", "years", "month",
    "months", "the week before 16 Nov 2023", "8:56 pm on 20 July, 2023", "1:14 pm",
    "I took my dogs to the beach", "Yesterday I took my dogs to the beach",
    "see you on 12/05", "back in sept", "decide", "doctor", "octopus", "oct", "dec.",
    "tab\tweek\x0bnext", "nul\x00may\x1fjun", "x\x7flast", "我们明天去东京塔看看",
    "東京タワーに行きました", "서울에서 만나요 내일", "今天 2023 年", "京都 5/6", "Ünïcödé week",
    "İstanbul last year", "İ", "ǅungla may", "٢٠٢٢", "١/٢", "２０２２", "１.２", "week\u00a0end",
    "caf\u00e9 yesterday", "naïve", "emoji 🎉 today", "😀", "\u0301may", "may\u0301",
    "\u2019s july", "it\u2019s 1999", "mañana", "STRASSE", "ß", "ﬁ", "Ⅻ", "x²2022",
]

PIECES = [
    *MONTHS, "week", "weeks", "weekend", "ago", "last", "since", "sunday", "today",
    "1999", "2023", "2100", "19", "20", "5", "12", "123", "a", "the", "went", "x", "_",
    " ", " ", " ", ".", "/", ":", "-", ",", "'", "\u2019", "\n", "é", "京", "٢", "２", "İ",
    "MAY", "Last", "Jan.", "Sept",
]


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


def _reference(text: str) -> bool:
    return temporal._TEMPORAL.search(text.lower()) is not None


def _corpus() -> list[str]:
    assert LOCOMO.exists(), f"{LOCOMO} is missing: the LoCoMo dev file sits beside the repo"
    texts = list(_strings(json.loads(LOCOMO.read_text())))
    rng = random.Random(19)
    mixed = [
        "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12))) for _ in range(20_000)
    ]
    return [*CRAFTED, *texts, *mixed]


def test_fast_path_matches_the_regex_on_every_text() -> None:
    corpus = _corpus()
    assert len(corpus) > 30_000
    wrong = [t for t in corpus if has_temporal_expression(t) != _reference(t)]
    assert wrong == []
    answers = [has_temporal_expression(t) for t in corpus]
    assert answers.count(True) > 5_000 and answers.count(False) > 5_000
    assert sum(t.isascii() for t in corpus) > 25_000  # the fast path is what was compared


def test_known_answers() -> None:
    assert has_temporal_expression("Yesterday I took my dogs to the beach")
    assert has_temporal_expression("see you on 12/05")
    assert has_temporal_expression("it was 2022, I think")
    assert has_temporal_expression("back in Sept.")
    assert not has_temporal_expression("I took my dogs to the beach")
    assert not has_temporal_expression("the doctor decided to go on")
    assert not has_temporal_expression("item zq00002x, version 1-2")
    assert not has_temporal_expression("")
    assert has_temporal_expression("東京 last week")
    assert not has_temporal_expression("東京タワーに行きました")
