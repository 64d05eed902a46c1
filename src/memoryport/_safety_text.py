"""Text preparation for ``memoryport.safety``: what is removed before the rules run.

Every default-ignorable and format code point (soft hyphen, combining grapheme joiner,
Arabic letter mark, Hangul fillers, variation selectors, Mongolian free variation
selectors, Khmer inherent vowels, interlinear annotation marks, tags...) and every C0/C1
control is removed, so a word split by one still matches. Controls that act as
whitespace (VT, FF, CR, the file/group/record/unit separators, NEL, U+2028 and U+2029)
and the interlinear annotation marks (U+FFF9-U+FFFB, which delimit text) become a space
instead, so two words they separate stay two words. A backslash before a
quote (a shell-escaped ``\\"``) is dropped. Line feeds are kept: lines still correspond.

Terminal control characters (C0 except TAB and LF, a CR not ending a line, DEL and C1)
are refused on their own: printed raw, they retitle or clear a terminal or set the
clipboard.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "IGNORABLE_RANGES",
    "clean",
    "control_name",
    "needs_clean",
    "plain_char",
    "terminal_controls",
    "unusual_chars",
]

IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1345F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Inclusive code-point ranges removed before matching: every character of Unicode's
Default_Ignorable_Code_Point property and of general category Cf (format)."""

_SPACE_CONTROLS = "\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029\ufff9\ufffa\ufffb"
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_IGNORABLE_CLASS = "".join(
    re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
    for a, b in IGNORABLE_RANGES
)
_SPACES = str.maketrans({c: " " for c in _SPACE_CONTROLS})
_REMOVE_RE = re.compile(f"[{_CONTROLS}{_IGNORABLE_CLASS}]")
_ESCAPED_QUOTE_RE = re.compile(r"\\+(?=[\"'`])")
# One character class (a plain search is several times faster than an alternation): a
# backslash not before a quote only costs a needless ``clean``.
_NEEDS_CLEAN_ASCII_RE = re.compile(rf"[{_CONTROLS}\\]")
# A CR ends a line (CRLF, or a CR at the very end) or is a bare CR that overwrites one.
_TERMINAL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n|\\Z)")
_NAMES = {
    "\x00": "NUL", "\x07": "BEL", "\x08": "BS", "\x0b": "VT", "\x0c": "FF", "\r": "CR",
    "\x1b": "ESC", "\x7f": "DEL", "\x9b": "CSI", "\x9d": "OSC", "\x90": "DCS",
}


def needs_clean(text: str) -> bool:
    """True when ASCII ``text`` may hold a control or an escaped quote for :func:`clean`."""
    return _NEEDS_CLEAN_ASCII_RE.search(text) is not None


# Everything but tab, line feed and printable ASCII other than the backslash: the only
# characters that can make ``clean`` change a text (one simple class: a fast search).
_UNUSUAL_RE = re.compile(r"[^\t\n\x20-\x5b\x5d-\x7e]")


def unusual_chars(text: str) -> set[str]:
    """The distinct characters of ``text`` other than tab, line feed and printable ASCII
    (a backslash included): only these can be controls, ignorables or invisible."""
    return set(_UNUSUAL_RE.findall(text))


@lru_cache(maxsize=4096)
def plain_char(char: str) -> bool:
    """True when :func:`clean` keeps ``char`` as it is (not a control, not a default-
    ignorable or format character, not a whitespace-like control, not a backslash)."""
    return char != "\\" and char not in _SPACE_CONTROLS and _REMOVE_RE.match(char) is None


def clean(text: str) -> str:
    """``text`` with whitespace-like controls as spaces, the other ignorables removed, and
    shell-escaped quotes unescaped. ``\\n`` is never added or removed."""
    return _ESCAPED_QUOTE_RE.sub("", _REMOVE_RE.sub("", text.translate(_SPACES)))


def terminal_controls(text: str) -> list[tuple[int, str]]:
    """``(position, char)`` of every terminal control character in ``text``."""
    return [(m.start(), m.group(0)) for m in _TERMINAL_RE.finditer(text)]


def control_name(char: str) -> str:
    """A short name such as ``ESC (U+001B)`` for a control character."""
    code = f"U+{ord(char):04X}"
    name = _NAMES.get(char)
    return f"{name} ({code})" if name else code
