"""Content scan for text that ends up in a model's prompt (see ``docs/safety.md``).

Curated memory is injected into the system prompt and recalled provider context into the
user message, so both are scanned for prompt injection, role hijack, deception,
system-prompt overrides, exfiltration, persistence and secret-bearing paths.
:func:`scan` lists :class:`Finding` objects, :func:`check` raises
:class:`~memoryport.errors.UnsafeContent`, :func:`scan_lines` drops offending lines.

Only the first :data:`MAX_SCAN_CHARS` characters are scanned; a longer text also gets
``too_large_to_scan`` (category ``system_prompt_override``: unverifiable content must not
reach the prompt). Invisible characters are reported on the raw text, one finding per
distinct character, by code point (Unicode tag characters, the "ASCII smuggling" range, as
one finding that shows the hidden text). The rules then run on the per-line
NFKC-normalized, invisible-free, lower-cased text, and only where one of their anchor
words occurs; also on two derived texts when cheap gates say they may hide something:
spaced-out letters collapsed ("i g n o r e" -> "ignore") and base64 blobs decoded (only
when the text mentions an encoding).
Fast paths with the same findings (tests/test_turnpath_safety.py compares them with the
reference path on the corpora, LoCoMo and random text): text whose characters outside
printable ASCII are all plain (no control, invisible or ignorable one) skips the
invisible/control pass; non-ASCII text is normalized whole and cleaned only when the
normalized text holds something cleaning changes.
Order: invisible findings, then ``too_large_to_scan``, then by position, then id; each id
once.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from memoryport import _safety_text as _text
from memoryport._safety_rules import RULE_TABLE
from memoryport._safety_rules_agent import AGENT_RULES
from memoryport.display import printable
from memoryport.errors import UnsafeContent

__all__ = [
    "CATEGORIES",
    "INVISIBLE_CHARS",
    "MAX_SCAN_CHARS",
    "Finding",
    "check",
    "scan",
    "scan_lines",
]

CATEGORIES: tuple[str, ...] = (
    "invisible_unicode",
    "prompt_injection",
    "role_hijack",
    "deception",
    "system_prompt_override",
    "exfiltration",
    "persistence",
    "secret_path",
    "terminal_control",
    "too_large",
)
"""Every category a :class:`Finding` can carry."""

MAX_SCAN_CHARS = 65_536
"""Only this many characters are scanned; a longer text is refused as ``too_large_to_scan``."""

INVISIBLE_CHARS: frozenset[str] = frozenset(
    [chr(c) for c in range(0x200B, 0x200E)]
    + ["\u180e", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064", "\ufeff"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
"""Zero-width, word-joiner, invisible-operator, BOM and bidi embedding/override/isolate chars.

Unicode tag characters (U+E0000-U+E007F) are refused too, as one ``invisible_unicode_tags``
finding; only an emoji tag sequence (a subdivision flag such as England's) may use them.
"""

_EXCERPT_MAX = 80


@dataclass(frozen=True)
class Finding:
    """One reason a text was refused.

    Attributes:
        id: stable identifier, e.g. ``"prompt_injection"`` or ``"invisible_unicode_U+200B"``.
        category: one of :data:`CATEGORIES`.
        message: human-readable: what matched and why it is refused.
        excerpt: a short excerpt (at most 80 characters) of the matching text.
    """

    id: str
    category: str
    message: str
    excerpt: str


@dataclass(frozen=True)
class _Rule:
    id: str
    category: str
    anchors: tuple[str, ...]
    requires: tuple[str, ...]
    regex: re.Pattern[str]
    why: str
    # ``requires`` split once: words (looked up in the text's word set), other substrings
    gate_words: frozenset[str] = field(init=False, repr=False, compare=False)
    gate_text: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = tuple(r for r in self.requires if r.isascii() and r.isalnum())
        object.__setattr__(self, "gate_words", frozenset(words))
        object.__setattr__(self, "gate_text", tuple(r for r in self.requires if r not in words))


# Rules run on lower-cased text: patterns are lower case, compiled without IGNORECASE
# (about 40% cheaper per match attempt).
_RULES = tuple(
    _Rule(rid, cat, tuple(anchors.split()), requires, re.compile(pattern), why)
    for rid, cat, anchors, requires, pattern, why in RULE_TABLE + AGENT_RULES
)
_TAG_CLASS = "\U000e0000-\U000e007f"
_INVISIBLE_RE = re.compile("[" + "".join(sorted(INVISIBLE_CHARS)) + _TAG_CLASS + "]")
# A subdivision flag (U+1F3F4, tag letters, U+E007F) is the one legitimate use of tag
# characters, and a zero-width joiner between two pictographs builds one emoji (🧘‍♀️,
# 👩‍💻); the first alternatives consume those so only stray invisibles land in group 1.
_PICTO = "\u2190-\u21ff\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
_HIDDEN_RE = re.compile(
    "\U0001f3f4[\U000e0020-\U000e007e]{1,8}\U000e007f|"
    f"[{_PICTO}\ufe0f]\u200d(?=[{_PICTO}])|(" + _INVISIBLE_RE.pattern + ")"
)
_TAGS_ID = "invisible_unicode_tags"
# Spaced-out letters ("i g n o r e"): single letters joined by one separator, 3 or more.
_SPACED_RE = re.compile(r"(?<![a-z0-9])[a-z](?:[ .*_|-][a-z]){2,}(?![a-z0-9])")
_SPACED_LETTERS = frozenset("bcdefghjklmnopqrstuvwxyz")  # single-letter tokens ("a", "i" are words)
_SPACED_MIN_LETTERS = 6
# Base64 blobs are decoded only when one of these words occurs (the model would need a hint).
_B64_HINTS = frozenset({"base64", "b64", "b64decode", "atob", "encoded", "decode", "decoded"})
_B64_RE = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![\w+/=-])")
_B64_MAX_BLOBS = 20
_HOME_SECRET_NAMES = r"(?:\.env|auth\.json|credentials(?:\.json)?|secrets?)\b"
# Every ASCII character that is not a letter or digit becomes a word separator.
_SEPARATORS = str.maketrans(
    {c: " " for c in map(chr, range(128)) if not c.isalnum() and not c.isspace()}
)


@dataclass(frozen=True)
class _Index:
    """Rules grouped by anchor: word anchors are found via a token set, the rest by substring."""

    rules: tuple[_Rule, ...]
    words: dict[str, tuple[_Rule, ...]]
    literals: dict[str, tuple[_Rule, ...]]
    word_set: frozenset[str]  # every word anchor and ``requires`` word, and the derived-text gates


def _build_index(rules: tuple[_Rule, ...]) -> _Index:
    words: dict[str, list[_Rule]] = {}
    literals: dict[str, list[_Rule]] = {}
    for rule in rules:
        for anchor in rule.anchors:
            if anchor.isascii() and anchor.isalnum():
                words.setdefault(anchor, []).append(rule)
            else:  # a literal; a trailing "*" marks a word prefix looked up as a substring
                literals.setdefault(anchor.rstrip("*") or anchor, []).append(rule)
    return _Index(rules, {k: tuple(v) for k, v in words.items()},
                  {k: tuple(v) for k, v in literals.items()},
                  frozenset(words).union(*(_gate_words(rule) for rule in rules),
                                         _SPACED_LETTERS, _B64_HINTS))


def _gate_words(rule: _Rule) -> tuple[str, ...]:
    """The alphanumeric ``requires`` entries of ``rule`` (looked up in the word set)."""
    return tuple(r for r in rule.requires if r.isascii() and r.isalnum())


def _gate_open(rule: _Rule, present: frozenset[str], lowered: str) -> bool:
    """True when ``rule`` may match: no ``requires``, or one of them occurs (a word in
    ``present``, any other entry as a substring of ``lowered``)."""
    return not rule.requires or not rule.gate_words.isdisjoint(present) or any(
        r in lowered for r in rule.gate_text)


_INDEX = _build_index(_RULES)


@lru_cache(maxsize=32)
def _home_index(home: str, user_home: str) -> _Index:
    """The default rules plus one for secret files directly under ``home``.

    ``user_home`` (the current ``~``) adds the ``~/...`` and ``$HOME/...`` spellings.
    """
    root = home.rstrip("/\\")
    if not root:
        return _INDEX
    spellings = {root}
    user_home = user_home.rstrip("/\\")
    if user_home and root.startswith(user_home + os.sep):
        rest = root[len(user_home):]
        spellings |= {"~" + rest, "$HOME" + rest, "${HOME}" + rest}
    ordered = sorted({s.lower() for s in spellings}, key=len, reverse=True)
    alternatives = "|".join(re.escape(s) for s in ordered)
    regex = re.compile(rf"(?:{alternatives})[/\\]+{_HOME_SECRET_NAMES}")
    rule = _Rule("home_secret", "secret_path", tuple(ordered), (), regex,
                 "a reference to a secret file in the memoryport home directory")
    return _build_index((*_RULES, rule))


def _excerpt(text: str, start: int, end: int) -> str:
    snippet = " ".join(text[start:end].split())
    return snippet if len(snippet) <= _EXCERPT_MAX else snippet[: _EXCERPT_MAX - 1] + "…"


def _hidden(text: str) -> list[tuple[int, str]]:
    """``(position, char)`` of every invisible character not part of an emoji tag sequence."""
    return [(m.start(1), m.group(1)) for m in _HIDDEN_RE.finditer(text) if m.group(1)]


def _is_tag(char: str) -> bool:
    return 0xE0000 <= ord(char) <= 0xE007F


def _invisible_findings(text: str) -> list[Finding]:
    hidden = _hidden(text)
    first: dict[str, int] = {}
    for at, char in hidden:
        first.setdefault(char, at)
    findings = []
    for char in sorted(c for c in first if not _is_tag(c)):
        code = f"U+{ord(char):04X}"
        at = first[char]
        around = text[max(0, at - 30) : at + 30].replace(char, f"<{code}>")
        around = _INVISIBLE_RE.sub("", around)
        findings.append(Finding(
            id=f"invisible_unicode_{code}", category="invisible_unicode",
            message=f"invisible unicode character {code} (possible hidden injection); "
                    "invisible and bidi-control characters are not allowed",
            excerpt=_excerpt(around, 0, len(around)),
        ))
    tags = [char for _, char in hidden if _is_tag(char)]
    if tags:
        smuggled = "".join(chr(ord(c) - 0xE0000) for c in tags if 0xE0020 <= ord(c) <= 0xE007E)
        findings.append(Finding(
            id=_TAGS_ID, category="invisible_unicode",
            message=f"{len(tags)} invisible Unicode tag characters (U+E0000-U+E007F) hiding "
                    f"the text {smuggled[:200]!r}; tag characters are only allowed in flag emoji",
            excerpt=_excerpt(smuggled, 0, len(smuggled)),
        ))
    return findings


def _prepare(text: str, dirty: bool, fast: bool = True) -> tuple[str, str]:
    """Return ``(display, lowered)``: the text NFKC-normalized per line, then cleaned.

    Cleaning (``memoryport._safety_text.clean``) removes every default-ignorable, format
    and control character (whitespace-like controls become spaces) and unescapes ``\\"``.

    ``lowered`` is what the rules run on; ``display`` (used for excerpts) is the normalized
    text when lower-casing kept its length, else ``lowered`` itself, so offsets agree.
    Neither normalization nor lower-casing adds or removes ``\n``, so lines correspond.

    ``fast`` (the same result): the text is normalized whole (no character's NFKC form
    holds a line feed, and a line feed never composes with a neighbour, so this is the
    per-line result) and cleaned only when the normalized text holds a character that
    cleaning changes (cleaning works per character, so whole or per line is the same).
    ``fast=False`` is the reference the tests compare against.
    """
    if text.isascii():
        normalized = _text.clean(text) if dirty else text
        return normalized, normalized.lower()
    if fast:
        normalized = unicodedata.normalize("NFKC", text)
        if not all(map(_text.plain_char, _text.unusual_chars(normalized))):
            normalized = _text.clean(normalized)
    else:
        normalized = "\n".join(
            _text.clean(unicodedata.normalize("NFKC", line)) for line in text.split("\n")
        )
    lowered = normalized.lower()
    return (normalized if len(normalized) == len(lowered) else lowered), lowered


def _index_for(home: str | os.PathLike[str] | None) -> _Index:
    if home is None:
        return _INDEX
    return _home_index(os.fspath(Path(home)), os.path.expanduser("~"))


def _present(lowered: str, index: _Index) -> frozenset[str]:
    """The words of ``index.word_set`` (anchors, gates, hints) that occur in ``lowered``."""
    ascii_text = lowered if lowered.isascii() else lowered.encode("ascii", "replace").decode()
    return index.word_set.intersection(ascii_text.translate(_SEPARATORS).split())


def _matches(
    lowered: str, index: _Index, present: frozenset[str] | None = None
) -> list[tuple[int, int, _Rule]]:
    """Every (start, end, rule) match in ``lowered``, sorted by position then id.

    Rules only run where one of their anchors occurs (a word anchor must start a word),
    and only when their ``requires`` gate is met, so benign text costs little.
    """
    if present is None:
        present = _present(lowered, index)
    candidates = [(a, index.words[a], True) for a in present if a in index.words]
    candidates += [(a, rs, False) for a, rs in index.literals.items() if a in lowered]
    gates: dict[str, bool] = {}
    hits: dict[tuple[int, str], tuple[int, int, _Rule]] = {}
    for anchor, rules, is_word in candidates:
        live = []
        for rule in rules:
            if rule.id not in gates:
                gates[rule.id] = _gate_open(rule, present, lowered)
            if gates[rule.id]:
                live.append(rule)
        pos = lowered.find(anchor) if live else -1
        while pos >= 0:
            if not (is_word and pos and lowered[pos - 1].isalnum()):
                for rule in live:
                    match = rule.regex.match(lowered, pos)
                    if match:
                        hits[(pos, rule.id)] = (pos, match.end(), rule)
            pos = lowered.find(anchor, pos + 1)
    return sorted(hits.values(), key=lambda h: (h[0], h[2].id))


# A hit: (start, end) in the scanned text, the rule, the text to excerpt and a note. Direct
# matches excerpt the scanned text at (start, end); a match in a derived text excerpts the
# derived text, and (start, end) then covers what it was derived from.
_Hit = tuple[int, int, _Rule, str, str]


def _despaced(lowered: str) -> str:
    """``lowered`` with spaced-out letters joined: "i g n o r e   a l l" -> "ignore   all"."""
    return _SPACED_RE.sub(lambda m: m.group(0)[::2], lowered)


def _hinted_spans(lowered: str, hints: frozenset[str]) -> list[tuple[int, int]]:
    """Line spans holding one of ``hints`` (as a word), each with the line after it."""
    spans: list[tuple[int, int]] = []
    for hint in hints:
        pos = lowered.find(hint)
        while pos >= 0:
            start = lowered.rfind("\n", 0, pos) + 1
            end = lowered.find("\n", pos)
            end = len(lowered) if end < 0 else lowered.find("\n", end + 1)
            spans.append((start, len(lowered) if end < 0 else end))
            pos = lowered.find(hint, spans[-1][1])
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _decoded_blobs(raw: str) -> list[str]:
    """The text of each base64 (or base64url) blob in ``raw`` that decodes to text."""
    out: list[str] = []
    for tried, match in enumerate(_B64_RE.finditer(raw)):
        if tried >= _B64_MAX_BLOBS:
            break
        blob = match.group(0).rstrip("=")
        if len(blob) % 4 == 1:
            continue
        urlsafe = "-" in blob or "_" in blob
        if urlsafe and ("+" in blob or "/" in blob):
            continue
        padded = blob + "=" * (-len(blob) % 4)
        try:
            data = base64.b64decode(padded, altchars=b"-_" if urlsafe else None, validate=True)
            decoded = data.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        printable = sum(c.isprintable() or c in "\n\t" for c in decoded)
        if " " in decoded and printable >= 0.95 * len(decoded):
            out.append(" ".join(decoded.split()).lower())
    return out


def _hits(raw: str, display: str, lowered: str, index: _Index) -> list[_Hit]:
    """All rule matches in ``lowered`` and in the texts derived from it, by position, id.

    ``raw`` is the text ``display`` and ``lowered`` were prepared from (same lines); base64
    blobs are decoded from it, case intact. A derived match covers the lines it came from.
    """
    present = _present(lowered, index)
    hits: list[_Hit] = [
        (s, e, rule, display, "") for s, e, rule in _matches(lowered, index, present)
    ]
    if len(present & _SPACED_LETTERS) >= _SPACED_MIN_LETTERS:
        despaced = _despaced(lowered)
        if despaced != lowered:
            starts, dstarts = _line_starts(lowered), _line_starts(despaced)
            for s, e, rule in _matches(despaced, index):
                first = bisect.bisect_right(dstarts, s) - 1
                last = bisect.bisect_right(dstarts, max(s, e - 1)) - 1
                end = starts[last + 1] - 1 if last + 1 < len(starts) else len(lowered)
                excerpt = despaced[s:e]
                hits.append((starts[first], end, rule, excerpt, " in spaced-out letters"))
    hints = present & _B64_HINTS
    if hints:
        raw_lines, starts = raw.split("\n"), _line_starts(lowered)
        for span_start, span_end in _hinted_spans(lowered, hints):
            first = bisect.bisect_right(starts, span_start) - 1
            last = bisect.bisect_right(starts, max(span_start, span_end - 1)) - 1
            for decoded in _decoded_blobs("\n".join(raw_lines[first : last + 1])):
                for s, e, rule in _matches(decoded, index):
                    hits.append((span_start, span_end, rule, decoded[s:e], " in decoded base64"))
    hits.sort(key=lambda h: (h[0], h[2].id))
    return hits


def _line_starts(text: str) -> list[int]:
    starts, offset = [], 0
    for line in text.split("\n"):
        starts.append(offset)
        offset += len(line) + 1
    return starts


def _finding(hit: _Hit) -> Finding:
    start, end, rule, source, note = hit
    excerpt = _excerpt(source, start, end) if not note else _excerpt(source, 0, len(source))
    return Finding(id=rule.id, category=rule.category,
                   message=f"{rule.why}: matched {excerpt!r}{note}", excerpt=excerpt)


def _too_large(length: int) -> Finding:
    return Finding(
        id="too_large_to_scan", category="too_large",
        message=f"too large to scan: text is {length:,} characters and at most "
                f"{MAX_SCAN_CHARS:,} can be scanned; unscanned content must not reach the "
                "prompt. Split it into smaller entries",
        excerpt=f"{length:,} chars",
    )


def _terminal_findings(text: str) -> list[Finding]:
    """One ``terminal_control`` finding naming each distinct control character, or none."""
    found = _text.terminal_controls(text)
    if not found:
        return []
    names = ", ".join(_text.control_name(c) for c in dict.fromkeys(c for _, c in found))
    at = found[0][0]
    return [Finding(
        id="terminal_control", category="terminal_control",
        message=f"terminal control characters {names}: printed on a terminal they can "
                "retitle or clear it, set the clipboard or overwrite a line; remove them",
        excerpt=_excerpt(printable(text[max(0, at - 30) : at + 30]), 0, 80),
    )]


def _dirty(text: str, fast: bool = True) -> bool:
    """False when ``text`` holds no control, backslash, invisible or ignorable character
    (nothing for :func:`_leading` to report or for cleaning to remove): the fast path.

    Plain ASCII is answered by one regex; other text by the distinct characters outside
    printable ASCII (``fast``; without it every non-ASCII text is dirty, the reference).
    """
    if text.isascii():
        return _text.needs_clean(text)
    return not fast or not all(map(_plain, _text.unusual_chars(text)))


def _plain(char: str) -> bool:
    """A character cleaning keeps that is neither invisible nor a tag character (each of
    those is also an ignorable, which ``plain_char`` refuses: checked here all the same)."""
    return _text.plain_char(char) and char not in INVISIBLE_CHARS and not _is_tag(char)


def _leading(text: str, dirty: bool) -> list[Finding]:
    """The findings on the raw text: invisible characters, then terminal controls."""
    if not dirty:
        return []
    if text.isascii():
        return _terminal_findings(text)
    return _invisible_findings(text) + _terminal_findings(text)


def scan(text: str, *, home: str | os.PathLike[str] | None = None) -> list[Finding]:
    """Return all findings for ``text`` (empty when it is clean).

    Order is deterministic: invisible-character findings first (by code point), then
    pattern findings by position, then id; each id appears once. ``home`` adds findings
    for ``<home>/.env`` and other secret files directly under the memoryport home.
    """
    return _scan(text, home, fast=True)


def _scan(text: str, home: str | os.PathLike[str] | None, *, fast: bool) -> list[Finding]:
    """:func:`scan`; ``fast=False`` skips the fast paths (the reference for the tests)."""
    findings: list[Finding] = []
    if len(text) > MAX_SCAN_CHARS:
        findings.append(_too_large(len(text)))
        text = text[:MAX_SCAN_CHARS]
    dirty = _dirty(text, fast)
    findings = _leading(text, dirty) + findings
    display, lowered = _prepare(text, dirty, fast)
    seen = {f.id for f in findings}
    for hit in _hits(text, display, lowered, _index_for(home)):
        if hit[2].id not in seen:
            seen.add(hit[2].id)
            findings.append(_finding(hit))
    return findings


def _refusal_message(findings: list[Finding]) -> str:
    too_large = next((f for f in findings if f.id == "too_large_to_scan"), None)
    if too_large is not None:
        return f"Blocked: content is {too_large.message}."
    categories = list(dict.fromkeys(f.category for f in findings))
    details = "; ".join(f"{f.id}: {f.message}" for f in findings[:5])
    more = f" (+{len(findings) - 5} more)" if len(findings) > 5 else ""
    return (
        f"Blocked: content failed the safety scan ({', '.join(categories)}). {details}{more}. "
        "Memory content is injected into the model's prompt and must not contain injection, "
        "deception, exfiltration or persistence payloads, invisible or terminal control "
        "characters, or secrets."
    )


def check(text: str, *, home: str | os.PathLike[str] | None = None) -> None:
    """Raise :class:`~memoryport.errors.UnsafeContent` if :func:`scan` finds anything.

    The message names every category found; ``findings`` holds the finding ids.
    """
    findings = scan(text, home=home)
    if findings:
        raise UnsafeContent(_refusal_message(findings), findings=[f.id for f in findings])


def scan_lines(
    text: str, *, home: str | os.PathLike[str] | None = None
) -> tuple[str, list[Finding]]:
    """Drop every line of untrusted ``text`` that has a finding; return ``(clean, findings)``.

    Lines are ``\\n``-separated. A pattern that spans several lines drops all of them. A
    line holding an invisible character is dropped. Text beyond :data:`MAX_SCAN_CHARS` is
    dropped too (with a ``too_large_to_scan`` finding), so nothing unscanned is returned.
    """
    return _scan_lines(text, home, fast=True)


def _scan_lines(
    text: str, home: str | os.PathLike[str] | None, *, fast: bool
) -> tuple[str, list[Finding]]:
    """:func:`scan_lines`; ``fast=False`` skips the fast paths (the tests' reference)."""
    findings: list[Finding] = []
    if len(text) > MAX_SCAN_CHARS:
        findings.append(_too_large(len(text)))
        cut = text.rfind("\n", 0, MAX_SCAN_CHARS + 1)
        text = text[:cut] if cut >= 0 else ""
    lines = text.split("\n")
    bad: set[int] = set()
    dirty = _dirty(text, fast)
    leading = _leading(text, dirty)
    if leading:
        findings = leading + findings
        bad.update(i for i, line in enumerate(lines) if _hidden(line))
        raw_starts = _line_starts(text)
        bad.update(bisect.bisect_right(raw_starts, at) - 1
                   for at, _ in _text.terminal_controls(text))
    display, lowered = _prepare(text, dirty, fast)
    seen = {f.id for f in findings}
    starts: list[int] = []
    for hit in _hits(text, display, lowered, _index_for(home)):
        start, end, rule = hit[0], hit[1], hit[2]
        if not starts:
            starts = _line_starts(lowered)
        first = bisect.bisect_right(starts, start) - 1
        last = bisect.bisect_right(starts, max(start, end - 1)) - 1
        bad.update(range(first, last + 1))
        if rule.id not in seen:
            seen.add(rule.id)
            findings.append(_finding(hit))
    if not bad:
        return text, findings
    return "\n".join(line for i, line in enumerate(lines) if i not in bad), findings
