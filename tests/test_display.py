"""Terminal-safe display of stored text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryport.display import has_control, printable


def test_plain_text_is_returned_unchanged() -> None:
    text = "Ünïcode — tabs\tand\nnewlines stay"
    assert printable(text) is text
    assert not has_control(text)


def test_osc_csi_and_controls_are_escaped() -> None:
    hostile = "a\x1b]0;pwned\x07b\x1b[2Jc\x00d\x7fe\rf\x9bg"
    shown = printable(hostile)
    assert shown == "a\\e]0;pwned\\ab\\e[2Jc\\0d\\x7fe\\rf\\x9bg"
    assert has_control(hostile)


@given(st.text())
def test_output_never_holds_a_control_character(text: str) -> None:
    shown = printable(text)
    assert not has_control(shown)
    assert all(ch in "\t\n" or ch.isprintable() or ord(ch) > 0x9F for ch in shown)
