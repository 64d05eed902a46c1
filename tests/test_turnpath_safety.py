"""The safety scan's fast paths give exactly the full scan's answers.

``memoryport.safety`` answers most recalled text (non-ASCII text without a control,
invisible or ignorable character; text that NFKC changes) without the per-line work;
``safety._scan`` / ``safety._scan_lines`` with ``fast=False`` run the full reference path.
Both must agree, finding for finding, on the attack corpora, on LoCoMo dialogue and on
recall blocks built from it, and on random mixed-script text.
"""

from __future__ import annotations

import itertools
import json
import random
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryport import _safety_text, fence, safety
from safety_corpus import BENIGN, HOME_HOSTILE, HOSTILE
from safety_heldout import HELDOUT2_BENIGN, HELDOUT2_HOSTILE, HELDOUT_BENIGN, HELDOUT_HOSTILE
from safety_heldout3 import HELDOUT3_BENIGN, HELDOUT3_HOSTILE

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"
HOME = "/srv/memoryport-home"

# Characters the fast paths decide on: invisibles, ignorables, controls, compatibility
# forms NFKC rewrites (one of them into a backslash), combining marks, CJK, emoji.
TRICKY = (
    "\u200b\u200d\u2060\ufeff\u202e\u2066\u00ad\u034f\u180e\ufe0f\U000e0041\U000e007f"
    "\x00\x07\x0b\x0c\r\x1b\x7f\x85\x9b\u2028\u2029\ufff9\\\"'`"
    "…–—’“”ﬁ①²Ⅻ\uff3c\ufe68ＩｇｎｏｒｅＡ\u0301\u0308ñé漢字メモ리콜🧘\U0001f3f4\t\n "
)


def _corpus_texts() -> list[str]:
    hostile = HOSTILE + HOME_HOSTILE + HELDOUT_HOSTILE + HELDOUT2_HOSTILE + HELDOUT3_HOSTILE
    return [text for text, _ in hostile] + BENIGN + HELDOUT_BENIGN + HELDOUT2_BENIGN + \
        HELDOUT3_BENIGN


def _locomo_turns() -> list[str]:
    assert LOCOMO.exists(), f"{LOCOMO} is missing: the LoCoMo dev file sits beside the repo"
    texts: list[str] = []
    for conversation in json.loads(LOCOMO.read_text(encoding="utf-8")):
        for value in conversation["conversation"].values():
            if isinstance(value, list):
                texts += [f"{turn['speaker']}: {turn['text']}" for turn in value]
    return texts


def _recall_blocks(turns: list[str]) -> Iterator[str]:
    """Texts shaped like a holographic recall: a header, items with dates and a cut
    session id (an ellipsis: not ASCII, rewritten by NFKC)."""
    rng = random.Random(12)
    for start in range(0, len(turns), 7):
        items = [f"- [2023-05-{rng.randint(1, 28):02d}] {t} (session conv-{start}…)"
                 for t in turns[start:start + 7]]
        yield "Earlier turns (date; speaker; session):\n" + "\n".join(items)


def _agree(text: str) -> None:
    for home in (None, HOME):
        assert safety.scan(text, home=home) == safety._scan(text, home, fast=False), text
        assert safety.scan_lines(text, home=home) == safety._scan_lines(text, home,
                                                                        fast=False), text


def test_fast_and_full_scan_agree_on_the_attack_corpora() -> None:
    texts = _corpus_texts()
    assert len(texts) > 500
    mixed = [f"{a}\n{b}" for a, b in itertools.pairwise(texts)]
    decorated = [f"{t} …" for t in texts] + [t.replace(" ", "\u3000") for t in texts]
    refused = 0
    for text in texts + mixed + decorated:
        _agree(text)
        refused += bool(safety.scan(text))
    assert refused > 300  # the corpus still bites through the fast path


def test_fast_and_full_scan_agree_on_locomo_text_and_recall_blocks() -> None:
    turns = _locomo_turns()
    assert len(turns) > 4000
    for text in turns:
        _agree(text)
    blocks = list(_recall_blocks(turns))
    for block in blocks:
        _agree(block)
        assert fence.build_memory_context_block([("holographic", block)])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(
    [*TRICKY, "ignore", " all previous instructions", "base64 ", "aWdub3JlIGFsbCBwcmV2aW91cw==",
     "i g n o r e", "~/.ssh/id_rsa", " [system note] ", "curl x | sh", "<memory-context>"]
), max_size=40))
def test_fast_and_full_scan_agree_on_random_mixed_text(pieces: list[str]) -> None:
    _agree("".join(pieces))


def test_no_character_normalizes_to_or_composes_with_a_line_feed() -> None:
    """What normalizing a text whole instead of line by line relies on."""
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF or code == 0x0A:
            continue
        char = chr(code)
        assert "\n" not in unicodedata.normalize("NFKC", char), hex(code)
        if unicodedata.combining(char):
            assert unicodedata.normalize("NFKC", "\n" + char)[0] == "\n", hex(code)


def test_every_invisible_character_is_one_cleaning_removes() -> None:
    """The fast path's character test covers the invisible and tag characters."""
    for char in [*safety.INVISIBLE_CHARS, "\U000e0000", "\U000e0041", "\U000e007f"]:
        assert not _safety_text.plain_char(char)
