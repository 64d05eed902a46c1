"""Content scan for text that ends up in a model's prompt (see ``docs/safety.md``).

Curated memory is injected into the system prompt and recalled provider context into the
user message, so both are scanned for prompt injection, role hijack, deception,
system-prompt overrides, exfiltration, persistence and secret-bearing paths.
:func:`scan` lists :class:`Finding` objects, :func:`check` raises
:class:`~memoryport.errors.UnsafeContent`, :func:`scan_lines` drops offending lines.

Only the first :data:`MAX_SCAN_CHARS` characters are scanned; a longer text also gets
``too_large_to_scan`` (category ``system_prompt_override``: unverifiable content must not
reach the prompt). Invisible characters are reported on the raw text, one finding per
distinct character, by code point. The rules then run on the per-line NFKC-normalized,
invisible-free, lower-cased text, and only where one of their anchor words occurs.
Order: invisible findings, then ``too_large_to_scan``, then by position, then id; each id
once.
"""

from __future__ import annotations

import bisect
import os
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memoryport._safety_rules import RULE_TABLE
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
)
"""Every category a :class:`Finding` can carry."""

MAX_SCAN_CHARS = 65_536
"""Only this many characters are scanned; a longer text is refused as ``too_large_to_scan``."""

INVISIBLE_CHARS: frozenset[str] = frozenset(
    [chr(c) for c in range(0x200B, 0x200E)]
    + ["\u2060", "\u2062", "\u2063", "\u2064", "\ufeff"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
"""Zero-width, word-joiner, invisible-operator, BOM and bidi embedding/override/isolate chars."""

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


# Rules run on lower-cased text: patterns are lower case, compiled without IGNORECASE
# (about 40% cheaper per match attempt).
_RULES = tuple(
    _Rule(rid, cat, tuple(anchors.split()), requires, re.compile(pattern), why)
    for rid, cat, anchors, requires, pattern, why in RULE_TABLE
)
_INVISIBLE_RE = re.compile("[" + "".join(sorted(INVISIBLE_CHARS)) + "]")
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
    word_set: frozenset[str]  # every word anchor and every ``requires`` word


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
                  frozenset(words).union(*(rule.requires for rule in rules)))


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


def _invisible_findings(text: str) -> list[Finding]:
    found = sorted(set(_INVISIBLE_RE.findall(text)))
    findings = []
    for char in found:
        code = f"U+{ord(char):04X}"
        at = text.index(char)
        around = text[max(0, at - 30) : at + 30].replace(char, f"<{code}>")
        around = _INVISIBLE_RE.sub("", around)
        findings.append(Finding(
            id=f"invisible_unicode_{code}", category="invisible_unicode",
            message=f"invisible unicode character {code} (possible hidden injection); "
                    "invisible and bidi-control characters are not allowed",
            excerpt=_excerpt(around, 0, len(around)),
        ))
    return findings


def _prepare(text: str) -> tuple[str, str]:
    """Return ``(display, lowered)``: the text NFKC-normalized per line, invisibles removed.

    ``lowered`` is what the rules run on; ``display`` (used for excerpts) is the normalized
    text when lower-casing kept its length, else ``lowered`` itself, so offsets agree.
    Neither normalization nor lower-casing adds or removes ``\n``, so lines correspond.
    """
    if text.isascii():
        return text, text.lower()
    normalized = "\n".join(
        _INVISIBLE_RE.sub("", unicodedata.normalize("NFKC", line)) for line in text.split("\n")
    )
    lowered = normalized.lower()
    return (normalized if len(normalized) == len(lowered) else lowered), lowered


def _index_for(home: str | os.PathLike[str] | None) -> _Index:
    if home is None:
        return _INDEX
    return _home_index(os.fspath(Path(home)), os.path.expanduser("~"))


def _matches(lowered: str, index: _Index) -> list[tuple[int, int, _Rule]]:
    """Every (start, end, rule) match in ``lowered``, sorted by position then id.

    Rules only run where one of their anchors occurs (a word anchor must start a word),
    and only when their ``requires`` gate is met, so benign text costs little.
    """
    ascii_text = lowered if lowered.isascii() else lowered.encode("ascii", "replace").decode()
    present = index.word_set.intersection(ascii_text.translate(_SEPARATORS).split())
    candidates = [(a, index.words[a], True) for a in present if a in index.words]
    candidates += [(a, rs, False) for a, rs in index.literals.items() if a in lowered]
    gates: dict[str, bool] = {}
    hits: dict[tuple[int, str], tuple[int, int, _Rule]] = {}
    for anchor, rules, is_word in candidates:
        live = []
        for rule in rules:
            if rule.id not in gates:
                gates[rule.id] = not rule.requires or not present.isdisjoint(rule.requires)
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


def _line_starts(text: str) -> list[int]:
    starts, offset = [], 0
    for line in text.split("\n"):
        starts.append(offset)
        offset += len(line) + 1
    return starts


def _finding(normalized: str, start: int, end: int, rule: _Rule) -> Finding:
    excerpt = _excerpt(normalized, start, end)
    return Finding(id=rule.id, category=rule.category,
                   message=f"{rule.why}: matched {excerpt!r}", excerpt=excerpt)


def _too_large(length: int) -> Finding:
    return Finding(
        id="too_large_to_scan", category="system_prompt_override",
        message=f"text is {length:,} characters; only {MAX_SCAN_CHARS:,} can be scanned, and "
                "unscanned content must not reach the prompt",
        excerpt=f"{length:,} chars",
    )


def scan(text: str, *, home: str | os.PathLike[str] | None = None) -> list[Finding]:
    """Return all findings for ``text`` (empty when it is clean).

    Order is deterministic: invisible-character findings first (by code point), then
    pattern findings by position, then id; each id appears once. ``home`` adds findings
    for ``<home>/.env`` and other secret files directly under the memoryport home.
    """
    findings: list[Finding] = []
    if len(text) > MAX_SCAN_CHARS:
        findings.append(_too_large(len(text)))
        text = text[:MAX_SCAN_CHARS]
    if not text.isascii():
        findings = _invisible_findings(text) + findings
    display, lowered = _prepare(text)
    seen = {f.id for f in findings}
    for start, end, rule in _matches(lowered, _index_for(home)):
        if rule.id not in seen:
            seen.add(rule.id)
            findings.append(_finding(display, start, end, rule))
    return findings


def _refusal_message(findings: list[Finding]) -> str:
    categories = list(dict.fromkeys(f.category for f in findings))
    details = "; ".join(f"{f.id}: {f.message}" for f in findings[:5])
    more = f" (+{len(findings) - 5} more)" if len(findings) > 5 else ""
    return (
        f"Blocked: content failed the safety scan ({', '.join(categories)}). {details}{more}. "
        "Memory content is injected into the model's prompt and must not contain injection, "
        "deception, exfiltration or persistence payloads, invisible characters or secrets."
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
    findings: list[Finding] = []
    if len(text) > MAX_SCAN_CHARS:
        findings.append(_too_large(len(text)))
        cut = text.rfind("\n", 0, MAX_SCAN_CHARS + 1)
        text = text[:cut] if cut >= 0 else ""
    lines = text.split("\n")
    bad: set[int] = set()
    if not text.isascii():
        findings = _invisible_findings(text) + findings
        bad.update(i for i, line in enumerate(lines) if _INVISIBLE_RE.search(line))
    display, lowered = _prepare(text)
    seen = {f.id for f in findings}
    starts: list[int] = []
    for start, end, rule in _matches(lowered, _index_for(home)):
        if not starts:
            starts = _line_starts(lowered)
        first = bisect.bisect_right(starts, start) - 1
        last = bisect.bisect_right(starts, max(start, end - 1)) - 1
        bad.update(range(first, last + 1))
        if rule.id not in seen:
            seen.add(rule.id)
            findings.append(_finding(display, start, end, rule))
    if not bad:
        return text, findings
    return "\n".join(line for i, line in enumerate(lines) if i not in bad), findings
