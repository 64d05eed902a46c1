"""Make stored text safe to print on a terminal.

Text in memory comes from a model or a user and may hold terminal control sequences (an OSC
``ESC ] … BEL`` that sets the window title or the clipboard, a CSI that clears the screen) or
other control characters (NUL, BEL, DEL, a bare CR that overwrites the line). Every shell that
prints stored text (CLI listings, search results, the web inspector) passes it through
:func:`printable` first, so what a person sees is exactly what is stored, escaped.
"""

from __future__ import annotations

import re

__all__ = ["has_control", "printable"]

# C0 controls except TAB and LF, DEL, and the C1 range (U+0080-U+009F): ESC, CSI (U+009B),
# OSC (U+009D) and friends all live here. Unicode line/paragraph separators also redraw lines.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\x1b": "\\e", "\r": "\\r", "\x00": "\\0", "\x07": "\\a", "\x08": "\\b"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """Return ``text`` with every terminal control character shown as a visible escape.

    TAB and LF are kept; ESC becomes ``\\e``, CR ``\\r``, NUL ``\\0``, BEL ``\\a``, other
    controls ``\\xNN`` / ``\\uNNNN``. Plain text is returned unchanged (same object).
    """
    if not _CONTROL_RE.search(text):
        return text
    return _CONTROL_RE.sub(_escape, text)


def has_control(text: str) -> bool:
    """True when ``text`` holds a character :func:`printable` would escape."""
    return _CONTROL_RE.search(text) is not None
