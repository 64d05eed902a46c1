"""A BERT WordPiece tokenizer's ids of a short text, word by word from a cache.

Why: the query encoder (:mod:`.query_encoder`) tokenizes each search's query. After the
idle time between an agent's turns, one call into the tokenizer (the ``tokenizers``
package) costs 0.25 ms of CPU on this 2-core VM, seven times its warm cost, because its
tables are out of the caches; a query's words were mostly seen before.

For printable ASCII text, BERT's normalizer lower-cases, its pre-tokenizer splits on
whitespace and makes every other character that is not a letter or digit a word of its
own, and WordPiece then splits each word alone. So the ids of such a text are its words'
ids one after the other, and each word's ids are asked of the tokenizer once, then kept
(at most :data:`WORDS_KEPT`). Other text goes to the tokenizer whole, and so does all
text of a tokenizer for which this does not hold (checked on :data:`PROBES` when built:
a cased or SentencePiece tokenizer, say).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PROBES", "WORDS_KEPT", "WordTokens"]

WORDS_KEPT = 50_000
"""How many words' ids are kept (all dropped when full)."""
PROBES = (
    "What did Melanie paint last Tuesday?",
    "Caroline's LGBTQ+ support group (est. 2019) meets at 7:30pm -- e-mail: a_b@c.org!",
    "unaffable unbelievably Xeonoblade 12345678901234 $40/hr [image] {x} ~`^|\\\"<>",
    "  tabs\tand\nnew lines\r\n ok  ",
)
"""Texts whose ids word by word must equal the tokenizer's for the cache to be used."""

_PLAIN = re.compile(r"[\x20-\x7e\t\n\r]*")
_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")


class WordTokens:
    """The ids of texts by a ``tokenizers.Tokenizer`` (without special tokens); thread-safe
    (the cache is a dict, each operation atomic)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._ids: dict[str, tuple[int, ...]] = {}
        self.by_word = all(self._by_word(p) == self._whole(p) for p in PROBES)
        """Whether ASCII texts are tokenized word by word (the probes agreed)."""
        self._ids.clear()

    def ids(self, text: str) -> list[int]:
        """The token ids of ``text`` (as ``tokenizer.encode(text, add_special_tokens=False)``)."""
        if self.by_word and _PLAIN.fullmatch(text):
            return self._by_word(text)
        return self._whole(text)

    def _whole(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _by_word(self, text: str) -> list[int]:
        known, out = self._ids, list[int]()
        for word in _WORD.findall(text.lower()):
            found = known.get(word)
            if found is None:
                if len(known) >= WORDS_KEPT:
                    known.clear()
                found = known[word] = tuple(self._whole(word))
            out.extend(found)
        return out
