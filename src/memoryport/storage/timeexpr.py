"""Resolve time expressions in text against an anchor time, without an LLM.

``resolve("Yesterday I took the dogs out", anchor)`` finds "Yesterday" and returns a
:class:`TimeExpr`: the event window (local-time epoch seconds, ``start`` inclusive,
``end`` exclusive), its ``precision`` (``day``, ``week``, ``month`` or ``year``) and the
original words. The anchor is the moment the words were said: a message's own timestamp
at write time, the store's latest timestamp at query time (never the wall clock).

Understood (case-insensitive, English):

* named days: today, tonight, this morning, yesterday, last night, tomorrow, the day
  before yesterday, the day after tomorrow, the other day (the week before);
* ``last/next/this/past/coming`` + week, weekend, month, year, a weekday, a month name or a
  season; "over the weekend", "earlier this week/month/year", "on Friday" (the last one);
* counts: "3 years ago", "a couple of weeks ago", "in two days", "5 days from now",
  "the past 3 weeks", "last few days";
* dates: "16 Nov 2023", "November 16th, 2023", "2023-11-16", "May 7" (the last May 7),
  "May 2023", "in May" (the last May), "in 2022";
* around a date: "the week/weekend/day/month/year before 16 Nov 2023", "the Monday
  after July 24, 2023", "the week of 3 March 2024";
* "since March", "since last week": from that window's start up to the anchor's day.

Why rules rather than ``dateparser`` (1.5.0): 13 MB of dependencies, ~2.7 ms per message in
running text (write time needs microseconds), points rather than windows, and no "the week
before 16 Nov 2023" or "since March".

Speed (~4.5 us per chat turn): a text's words (one byte translation) meet the time words in
one set lookup (:func:`may_hold` reuses the search lexemes' split); a text that passes runs
only the rules whose words it holds, as lower-case patterns on the lower-cased text. Text
whose lower-casing moves offsets, or with a dotless i, long s or non-ASCII digit, runs each
rule's gate and IGNORECASE pattern on the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal

__all__ = ["MONTHS", "PRECISIONS", "Precision", "TimeExpr", "has_time_words", "may_hold",
           "resolve"]  # fmt: skip

Precision = Literal["day", "week", "month", "year"]
PRECISIONS: tuple[Precision, ...] = ("day", "week", "month", "year")
"""Window precisions, finest first."""


@dataclass(frozen=True)
class TimeExpr:
    """One resolved expression: the event window, its precision and the original words.

    ``start``/``end`` are local-time epoch seconds (``end`` exclusive); ``span`` is the
    words' ``(start, end)`` offsets in the text; ``absolute`` is True when the words name
    the period on their own (a year is given), so the anchor did not matter.
    """

    words: str
    start: float
    end: float
    precision: Precision
    span: tuple[int, int]
    absolute: bool = False


_MONTH_NAMES = [
    ("january", "jan"),
    ("february", "feb"),
    ("march", "mar"),
    ("april", "apr"),
    ("may",),
    ("june", "jun"),
    ("july", "jul"),
    ("august", "aug"),
    ("september", "sept", "sep"),
    ("october", "oct"),
    ("november", "nov"),
    ("december", "dec"),
]
MONTHS = {name: n for n, names in enumerate(_MONTH_NAMES, start=1) for name in names}
"""Month name or abbreviation (lower case) -> month number, 1-12."""
_WEEKDAY_NAMES = [
    ("monday", "mon"), ("tuesday", "tues", "tue"), ("wednesday", "wed"),
    ("thursday", "thurs", "thu"), ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun"),
]
_WEEKDAYS = {name: n for n, names in enumerate(_WEEKDAY_NAMES) for name in names}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}


def _alt(names: object) -> str:
    return "|".join(sorted(map(str, names), key=len, reverse=True))  # type: ignore[call-overload]


_MON = rf"(?:{_alt(MONTHS)})\.?"
_WD_NAMES = frozenset(names[0] for names in _WEEKDAY_NAMES)
_WD = rf"(?:{_alt(_WD_NAMES)})"
_DAYN = r"(?:[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_NUM = rf"(?:\d{{1,3}}|{_alt(_NUMBERS)})"
_UNIT = r"(?:day|week|month|year)s?"
_FULL_DATE = (
    rf"(?:{_MON}\s+{_DAYN},?\s+{_YEAR}|{_DAYN}\s+(?:of\s+)?{_MON},?\s+{_YEAR}"
    rf"|{_YEAR}-[01]\d-[0-3]\d)"
)
_DATE = (
    rf"(?:{_FULL_DATE}|{_MON}\s+{_DAYN}\b|{_DAYN}\s+(?:of\s+)?{_MON}"
    rf"|{_MON},?\s+(?:of\s+)?{_YEAR})"
)

_WORDS = frozenset(
    [*MONTHS, *_WEEKDAYS, *_SEASONS, "today", "tonight", "yesterday", "tomorrow", "night",
     "morning", "afternoon", "evening", "ago", "week", "weeks", "weekend", "weekends", "month",
     "months", "year", "years", "day", "days", "since"]
)
"""The words (whole words, lower case) at least one of which every expression contains."""

_ISO_GATE = re.compile(r"-(?<=\d-)[01]\d-")  # = \d-[01]\d-, found by its literal "-"
"""The middle of an ISO date (``2023-11-16``)."""


def has_time_words(text: str) -> bool:
    """True when ``text`` has a word any expression needs (a fast pre-check)."""
    return _scan(text) is not None


def may_hold(text: str, words: Collection[bytes]) -> bool:
    """False when ASCII ``text`` holds no expression (``resolve`` gives ``[]``), judged from
    ``words``: the lower-cased words of ``text``, or of a text containing it, split at every
    byte not an ASCII letter or digit (``search_lexemes.ascii_words``)."""
    return not _NEEDLES.isdisjoint(words) or ("-" in text and _ISO_GATE.search(text) is not None)


# --------------------------------------------------------------------------- calendar
def _epoch(day: date) -> float:
    return datetime(day.year, day.month, day.day).timestamp()


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _day(day: date) -> tuple[date, date, Precision]:
    return day, day + timedelta(days=1), "day"


def _week(day: date) -> tuple[date, date, Precision]:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=7), "week"


def _weekend(day: date) -> tuple[date, date, Precision]:
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
    return saturday, saturday + timedelta(days=2), "week"


def _month(year: int, month: int) -> tuple[date, date, Precision]:
    first = date(year, month, 1)
    return first, _add_months(first, 1), "month"


def _year(year: int) -> tuple[date, date, Precision]:
    return date(year, 1, 1), date(year + 1, 1, 1), "year"


def _season(year: int, first_month: int) -> tuple[date, date, Precision]:
    first = date(year, first_month, 1)
    return first, _add_months(first, 3), "month"


def _unit(unit: str, day: date) -> tuple[date, date, Precision]:
    unit = unit.rstrip("s")
    if unit in ("day", "week", "weekend"):
        return {"day": _day, "week": _week, "weekend": _weekend}[unit](day)
    return _month(day.year, day.month) if unit == "month" else _year(day.year)


def _shift(day: date, unit: str, count: int) -> date:
    unit = unit.rstrip("s")
    if unit in ("day", "week", "weekend"):
        return day + timedelta(days=(1 if unit == "day" else 7) * count)
    if unit == "month":
        moved = _add_months(day, count)
        return moved.replace(day=min(day.day, 28))
    return date(day.year + count, day.month, min(day.day, 28))


def _number(words: str) -> int:
    words = " ".join(words.lower().split())
    return int(words) if words.isdigit() else _NUMBERS[words]


def _month_of(name: str) -> int:
    return MONTHS[name.lower().rstrip(".")]


def _date_in(words: str, anchor: date) -> tuple[date, date, Precision, bool] | None:
    """Parse one ``_DATE`` match: (start, end, precision, absolute)."""
    text = " ".join(words.lower().replace(",", " ").split())
    iso = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", text)
    if iso:
        start = date(int(iso[1]), int(iso[2]), int(iso[3]))
        return start, start + timedelta(days=1), "day", True
    parts = [p for p in text.split() if p != "of"]
    year = next((int(p) for p in parts if re.fullmatch(_YEAR, p)), None)
    month = next((_month_of(p) for p in parts if p.rstrip(".") in MONTHS), None)
    day_no = next(
        (int(re.sub(r"\D", "", p)) for p in parts if re.fullmatch(_DAYN, p) and len(p) <= 4
         and not re.fullmatch(_YEAR, p)),
        None,
    )
    if month is None:
        return None
    if day_no is None:
        if year is None:
            return None
        return (*_month(year, month), True)
    if year is not None:
        start = date(year, month, day_no)
        return start, start + timedelta(days=1), "day", True
    start = date(anchor.year, month, day_no)
    if start > anchor:
        start = date(anchor.year - 1, month, day_no)
    return start, start + timedelta(days=1), "day", False


def _last_weekday(day: date, weekday: int, *, strict: bool = True) -> date:
    back = (day.weekday() - weekday) % 7
    return day - timedelta(days=back or (7 if strict else 0))


def _next_weekday(day: date, weekday: int) -> date:
    return day + timedelta(days=(weekday - day.weekday()) % 7 or 7)


def _last_month(anchor: date, month: int, *, this_year_ok: bool) -> int:
    """The year of the last ``month`` (the current one counts when ``this_year_ok``)."""
    if month < anchor.month or (month == anchor.month and this_year_ok):
        return anchor.year
    return anchor.year - 1


# --------------------------------------------------------------------------- rules
Window = tuple[date, date, Precision]

_AROUND = re.compile(
    rf"\b(?:the\s+)?(?P<what>day|week|weekend|month|year|{_WD})\s+"
    rf"(?P<dir>before|after|prior\s+to|of)\s+(?P<ref>{_DATE})",
    re.I,
)
_DATE_RE = re.compile(rf"\b(?P<ref>{_DATE})\b", re.I)
_IN_YEAR = re.compile(
    rf"\b(?P<rel>in|since|during|of|by|back\s+in|early|late|mid-?|around|throughout)\s+"
    rf"(?P<y>{_YEAR})\b",
    re.I,
)
_FULL_MONTHS = _alt(names[0] for names in _MONTH_NAMES)
_IN_MONTH = re.compile(
    r"\b(?P<rel>in|since|during|early|late|mid-?|end\s+of|beginning\s+of|start\s+of|this\s+past"
    r"|this\s+coming|this|last|next|past|coming)\s+(?:the\s+month\s+of\s+)?"
    rf"(?P<m>{_FULL_MONTHS})\b(?!\s*,?\s*\d)",
    re.I,
)
_SEASON = re.compile(
    r"\b(?P<rel>this\s+past|last|this|next|past|coming|in\s+the|during\s+the|over\s+the)\s+"
    r"(?P<s>spring|summer|fall|autumn|winter)\b",
    re.I,
)
_REL_UNIT = re.compile(
    r"\b(?P<rel>this\s+past|this\s+coming|last|next|this|past|coming|previous|following)\s+"
    r"(?P<unit>week|weekend|month|year)\b",
    re.I,
)
_OVER_WEEKEND = re.compile(r"\b(?:over|during|on|at)\s+the\s+weekend\b", re.I)
_EARLIER = re.compile(r"\b(?P<rel>earlier|later)\s+this\s+(?P<unit>week|month|year)\b", re.I)
_WEEKDAY = re.compile(
    r"\b(?P<rel>this\s+past|this\s+coming|last|next|this|past|coming|on)\s+"
    rf"(?P<wd>{_WD})\b",
    re.I,
)
_NAMED = re.compile(
    r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|the\s+other\s+day"
    r"|(?:yesterday|tomorrow)(?:\s+(?:morning|afternoon|evening|night))?|last\s+night"
    r"|today|tonight|this\s+(?:morning|afternoon|evening))\b",
    re.I,
)
_AGO = re.compile(rf"\b(?P<n>{_NUM})\s+(?P<unit>{_UNIT})\s+ago\b", re.I)
_AHEAD = re.compile(
    rf"\b(?:in\s+(?P<n>{_NUM})\s+(?P<unit>{_UNIT})|(?P<n2>{_NUM})\s+(?P<unit2>{_UNIT})\s+from\s+now)\b",
    re.I,
)
_PAST_N = re.compile(rf"\b(?:the\s+)?(?:past|last)\s+(?P<n>{_NUM})\s+(?P<unit>{_UNIT})\b", re.I)
_SINCE = re.compile(r"\bsince\s+$", re.I)
_LOWER_MAY = re.compile(r"\bmay\b")  # the verb; the month is written "May"

_NAMED_OFFSETS = {"today": 0, "tonight": 0, "this": 0, "yesterday": -1, "last night": -1,
                  "tomorrow": 1, "the day before yesterday": -2, "the day after tomorrow": 2}


def _around(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    ref = _date_in(m["ref"], anchor)
    if ref is None:
        return None
    start, end, _, absolute = ref
    what, direction = m["what"].lower(), m["dir"].lower().split()[0]
    if direction == "of":
        if what in _WEEKDAYS:
            return None
        return _unit(what, start) if what != "day" else _day(start), absolute
    before = direction in ("before", "prior")
    if what in _WEEKDAYS:
        wd = _WEEKDAYS[what]
        day = _last_weekday(start, wd) if before else _next_weekday(end - timedelta(1), wd)
        return _day(day), absolute
    if what == "week":
        low = start - timedelta(days=7) if before else end
        return (low, low + timedelta(days=7), "week"), absolute
    if what == "day":
        return _day(start - timedelta(days=1) if before else end), absolute
    if what == "weekend":
        sat = _last_weekday(start, 5) if before else _next_weekday(end - timedelta(1), 5)
        return (sat, sat + timedelta(days=2), "week"), absolute
    return _unit(what, _shift(start, what, -1 if before else 1)), absolute


def _date_rule(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    ref = _date_in(m["ref"], anchor)
    return None if ref is None else (ref[:3], ref[3])


def _in_year(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    return _since(m, _year(int(m["y"])), anchor), True


def _since(m: re.Match[str], window: Window, anchor: date) -> Window:
    """``window`` itself, or from its start to the anchor's day after "since"."""
    if m["rel"].lower() != "since" or window[0] > anchor:
        return window
    return window[0], max(window[1], anchor + timedelta(days=1)), window[2]


def _in_month(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    rel, month = " ".join(m["rel"].lower().split()), _month_of(m["m"])
    if rel in ("next", "coming", "this coming"):
        year = anchor.year if month > anchor.month else anchor.year + 1
    elif rel == "this":
        year = anchor.year
    else:
        year = _last_month(anchor, month, this_year_ok=rel not in ("last", "past", "this past"))
    return _since(m, _month(year, month), anchor), False


def _season_rule(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    rel, first = " ".join(m["rel"].lower().split()), _SEASONS[m["s"].lower()]
    year = anchor.year if date(anchor.year, first, 1) <= anchor else anchor.year - 1
    current = _season(year, first)  # the last one that has started
    ongoing = current[1] > anchor
    if rel in ("next", "coming"):
        year += 1
    elif rel in ("last", "past", "this past") and ongoing:
        year -= 1
    return _season(year, first), False


def _rel_unit(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    rel, unit = " ".join(m["rel"].lower().split()), m["unit"].lower()
    step = {"this": 0, "next": 1, "coming": 1, "this coming": 1, "following": 1}.get(rel, -1)
    if unit == "weekend" and step == -1:
        sat = _last_weekday(anchor, 5)
        return (sat, sat + timedelta(days=2), "week"), False
    return _unit(unit, _shift(anchor, unit, step)), False


def _over_weekend(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    sat = anchor - timedelta(days=anchor.weekday() - 5) if anchor.weekday() >= 5 else (
        _last_weekday(anchor, 5))
    return (sat, sat + timedelta(days=2), "week"), False


def _earlier(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    low, high, precision = _unit(m["unit"].lower(), anchor)
    if m["rel"].lower() == "earlier":
        return (low, anchor + timedelta(days=1), precision), False
    return (anchor + timedelta(days=1), high, precision), False


def _weekday(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    rel, wd = " ".join(m["rel"].lower().split()), _WEEKDAYS[m["wd"].lower()]
    if rel in ("next", "coming", "this coming"):
        return _day(_next_weekday(anchor, wd)), False
    if rel == "this":
        return _day(anchor - timedelta(days=anchor.weekday() - wd)), False
    return _day(_last_weekday(anchor, wd)), False


def _named(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    words = " ".join(m["w"].lower().split())
    if words == "the other day":
        return (anchor - timedelta(days=7), anchor, "week"), False
    key = words if words in _NAMED_OFFSETS else words.split()[0]
    return _day(anchor + timedelta(days=_NAMED_OFFSETS[key])), False


def _ago(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    unit = m["unit"].lower()
    return _unit(unit, _shift(anchor, unit, -_number(m["n"]))), False


def _ahead(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    count, unit = (m["n"], m["unit"]) if m["n"] else (m["n2"], m["unit2"])
    return _unit(unit.lower(), _shift(anchor, unit.lower(), _number(count))), False


def _past_n(m: re.Match[str], anchor: date) -> tuple[Window, bool] | None:
    unit = m["unit"].lower()
    low = _shift(anchor, unit, -_number(m["n"]))
    precision: Precision = "day" if unit.startswith("day") else _unit(unit, anchor)[2]
    return (low, anchor + timedelta(days=1), precision), False


_MONTH_WORD = rf"\b(?:{_alt(MONTHS)})\b"
_WD_WORD = rf"\b(?:{_alt(_WEEKDAYS)})"
_UNITS = frozenset({"day", "days", "week", "weeks", "month", "months", "year", "years"})
_YEARS = frozenset(str(year) for year in range(1900, 2100))
_RELS = frozenset({"this", "last", "next", "past", "coming"})
_ISO = "0-00-"
"""Stands in the word set of a text with an ISO date middle (a string no word can be)."""
_DATED = frozenset({*MONTHS, _ISO})
_ALSO = True  # in ``_RULES``: ASCII text must pass the gate as well as hold the words
_HandlerT = Callable[[re.Match[str], date], tuple[Window, bool] | None]
# (gate, words, also, pattern, handler). Any text: the rule runs when its gate matches the
# lower-cased text. ASCII text: when the text holds one word of each set of ``words`` (whole
# words, lower case; every match of the pattern contains them, and they imply the gate
# unless ``also``), and the pattern runs without IGNORECASE on the lower-cased text.
_RULES: list[tuple[str, tuple[frozenset[str], ...], bool, re.Pattern[str], _HandlerT]] = [
    (rf"{_MONTH_WORD}|\d-[01]\d-", (_DATED, frozenset({"before", "after", "prior", "of"}),
     frozenset({"day", "week", "weekend", "month", "year", *_WD_NAMES})), False, _AROUND, _around),
    (rf"{_MONTH_WORD}|\d-[01]\d-", (_DATED,), False, _DATE_RE, _date_rule),
    (_YEAR, (_YEARS, frozenset({"in", "since", "during", "of", "by", "early", "late", "mid",
                                "around", "throughout"})), False, _IN_YEAR, _in_year),
    (_MONTH_WORD, (frozenset(names[0] for names in _MONTH_NAMES), _RELS | {
        "in", "since", "during", "early", "late", "mid", "end", "beginning", "start"}),
     False, _IN_MONTH, _in_month),
    (r"spring|summer|fall|autumn|winter", (frozenset(_SEASONS), _RELS | {"in", "during", "over"}),
     False, _SEASON, _season_rule),
    (r"\b(?:week|month|year)", (frozenset({"week", "weekend", "month", "year"}), _RELS | {
        "previous", "following"}), False, _REL_UNIT, _rel_unit),
    (r"the weekend", (frozenset({"weekend"}), frozenset({"the"})), _ALSO, _OVER_WEEKEND,
     _over_weekend),
    (r"(?:earlier|later) this", (frozenset({"week", "month", "year"}), frozenset({
        "earlier", "later"})), _ALSO, _EARLIER, _earlier),
    (_WD_WORD, (_WD_NAMES, _RELS | {"on"}), False, _WEEKDAY, _weekday),
    (r"yesterday|today|tonight|tomorrow|night|this (?:morn|after|even)|other day", (frozenset({
        "yesterday", "tomorrow", "day", "night", "today", "tonight", "morning", "afternoon",
        "evening"}),), _ALSO, _NAMED, _named),
    (r"\bago\b", (frozenset({"ago"}), _UNITS), False, _AGO, _ago),
    (r"\bin\b|from now", (_UNITS, frozenset({"in", "now"})), _ALSO, _AHEAD, _ahead),
    (r"\b(?:past|last)\b", (_UNITS, frozenset({"past", "last"})), False, _PAST_N, _past_n),
]
_SINCE_WORD = frozenset({"since"})
_NEED_BITS = {
    need: 1 << bit
    for bit, need in enumerate(dict.fromkeys([_SINCE_WORD, *(n for r in _RULES for n in r[1])]))
}
_VOCAB = {
    word.encode(): sum(b for need, b in _NEED_BITS.items() if word in need)
    for word in frozenset().union(*_NEED_BITS)
}
"""Each word any rule needs (bytes, lower case) and the bits of the word sets it belongs to."""
_GATES = [
    (re.compile(gate), sum(_NEED_BITS[n] for n in needs), also, pattern,
     re.compile(pattern.pattern), handler)
    for gate, needs, also, pattern, handler in _RULES
]
"""Per rule: gate, the bits of its word sets, also, the pattern, the same for lower-cased ASCII."""

# ASCII text, lower-cased with every non-word character made a space, splits into its words
_ASCII_WORDS = bytes(
    ord(chr(c).lower()) if c < 128 and re.match(r"\w", chr(c)) else 32 for c in range(256)
)
_NEEDLES = frozenset(w.encode() for w in _WORDS | _YEARS)
_WORD_RUN = re.compile(r"\w+")
_NEEDLES_STR = _WORDS | _YEARS
_VOCAB_STR = {word.decode(): bits for word, bits in _VOCAB.items()}
_ISO_BIT = _VOCAB[_ISO.encode()]
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
_YEAR_WORD = re.compile(rf"\b{_YEAR}\b")
_FOLDS_TO_ASCII = ("\u0131", "\u017f")
"""Lower-case letters that IGNORECASE matches to another letter (dotless i, long s)."""


def _scan(text: str) -> tuple[str, int | None] | None:
    """``(lower, held)`` when ``text`` may hold an expression, else None (one cheap pass).

    ``held`` has the bit of every word set (``_NEED_BITS``) the text has a whole word of,
    counting an ISO date middle as the word ``_ISO``. It is None when the lower-cased text
    does not line up with the text character for character, or holds a letter that
    IGNORECASE matches to another one: only then do rules run on the text as it is.
    """
    if text.isascii():
        words = text.encode().translate(_ASCII_WORDS).split()
        iso = "-" in text and _ISO_GATE.search(text) is not None
        if not iso and _NEEDLES.isdisjoint(words):
            return None
        held = _ISO_BIT if iso else 0
        for word in _VOCAB.keys() & words:
            held |= _VOCAB[word]
        return text.lower(), held
    lower = text.lower()
    runs = _WORD_RUN.findall(lower)
    iso = "-" in lower and _ISO_GATE.search(lower) is not None
    digits = _OTHER_DIGIT.search(lower) is not None  # "20\u0662\u0663" is a year too
    if not iso and _NEEDLES_STR.isdisjoint(runs) and not (digits and _YEAR_WORD.search(lower)):
        return None
    if digits or len(lower) != len(text) or any(c in lower for c in _FOLDS_TO_ASCII):
        return lower, None
    held = _ISO_BIT if iso else 0
    for run in _VOCAB_STR.keys() & runs:
        held |= _VOCAB_STR[run]
    return lower, held


def _candidates(
    text: str, lower: str, held: int | None, anchor: date
) -> list[tuple[int, int, Window, bool]]:
    found = []
    may = "may" in text
    for gate, needs, also, pattern, lower_pattern, handler in _GATES:
        if held is None:
            if not gate.search(lower):
                continue
            matches = pattern.finditer(text)
        else:
            if held & needs != needs or (also and not gate.search(lower)):
                continue
            matches = lower_pattern.finditer(lower)
        for match in matches:
            if may and _LOWER_MAY.search(text[match.start() : match.end()]):
                continue
            try:
                resolved = handler(match, anchor)
            except (ValueError, OverflowError, KeyError):
                continue  # "February 30", a year out of range
            if resolved is not None:
                found.append((match.start(), match.end(), resolved[0], resolved[1]))
    return found


_SAFE_ANCHORS = (86400.0 * 2, 2.0**31 - 1)
"""Epoch seconds (1970-2038) that name a local date on every platform: checked lazily."""


def _day_of(anchor: float) -> date:
    try:
        return datetime.fromtimestamp(anchor).date()
    except (OverflowError, OSError, ValueError, TypeError) as exc:
        raise ValueError(
            f"anchor must be a finite epoch time in seconds (got {anchor!r})"
        ) from exc


def resolve(text: str, anchor: float) -> list[TimeExpr]:
    """Every time expression in ``text``, resolved against ``anchor`` (epoch seconds).

    Overlapping readings keep the longest ("the week before 16 Nov 2023" over "16 Nov
    2023"); "since X" runs from X's start to the end of the anchor's day. Returns the
    expressions in text order. Raises ``ValueError`` when ``anchor`` is not a finite
    time that local dates can represent.
    """
    if type(anchor) not in (float, int) or not _SAFE_ANCHORS[0] < anchor < _SAFE_ANCHORS[1]:
        _day_of(anchor)  # raises for an anchor that is not a usable time
    scanned = _scan(text) if text else None
    if scanned is None:
        return []
    lower, held = scanned
    day = _day_of(anchor)
    chosen: list[tuple[int, int, Window, bool]] = []
    for cand in sorted(_candidates(text, lower, held, day), key=lambda c: (c[0] - c[1], c[0])):
        if all(cand[1] <= c[0] or c[1] <= cand[0] for c in chosen):
            chosen.append(cand)
    out = []
    maybe_since = held is None or held & _NEED_BITS[_SINCE_WORD]
    for begin, finish, (low, high, precision), absolute in sorted(chosen, key=lambda c: c[0]):
        since = _SINCE.search(text, 0, begin) if maybe_since else None
        if since and low <= day:
            begin, high = since.start(), max(high, day + timedelta(days=1))
        try:
            window = _epoch(low), _epoch(high)
        except (ValueError, OverflowError, OSError):
            continue
        out.append(TimeExpr(text[begin:finish], *window, precision, (begin, finish), absolute))
    return out
