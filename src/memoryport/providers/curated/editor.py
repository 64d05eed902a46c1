"""Pure operations on one target's entry list: add, replace, remove, batches, budgets.

No I/O here: :class:`~memoryport.providers.curated.store.CuratedMemory` runs an
:class:`Editor` inside ``MarkdownFile.mutate`` on the freshly re-read entries.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memoryport.errors import MemoryStoreError
from memoryport.providers.curated.prompt import Usage
from memoryport.storage.markdown import entry_problem, parse_entries
from memoryport.types import valid_text

__all__ = [
    "Change",
    "Editor",
    "FileReview",
    "Operation",
    "TargetSpec",
    "WriteResult",
    "clean_content",
    "clean_old_text",
    "parse_operation",
    "review_file",
]

_PREVIEW_CHARS = 80
_ACTIONS = ("add", "replace", "remove")
_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation + "“”‘’«»…–—·", " "))


@dataclass(frozen=True)
class TargetSpec:
    """What differs between targets: file name, prompt title, budget and whether enabled."""

    name: str
    filename: str
    title: str
    char_limit: int
    enabled: bool = True


@dataclass(frozen=True)
class Change:
    """One applied mutation, as reported to write listeners.

    ``content`` is the new entry for ``add``/``replace`` and the removed entry for
    ``remove``; ``previous`` is the entry a ``replace`` overwrote.
    """

    action: str
    target: str
    content: str
    old_text: str = ""
    previous: str = ""


@dataclass(frozen=True)
class WriteResult:
    """The outcome of a successful call; ``changes`` is empty when nothing was written."""

    target: str
    message: str
    entry_count: int
    usage: Usage
    changes: tuple[Change, ...] = ()


@functools.lru_cache(maxsize=16384)
def _dedupe_key(text: str) -> str:
    """Text modulo case, whitespace and punctuation (falls back to the text itself)."""
    return " ".join(text.casefold().translate(_PUNCTUATION).split()) or text


def _preview(entry: str) -> str:
    return entry if len(entry) <= _PREVIEW_CHARS else entry[:_PREVIEW_CHARS] + "..."


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "..."


def _required_text(value: Any, what: str, needed: str) -> str:
    """``value`` stripped, surrogates replaced (``valid_text``); ``MemoryStoreError`` naming
    ``what`` when it is missing (``needed`` says what to give), not a string, or empty."""
    if value is None:
        raise MemoryStoreError(f"{what} is required: {needed}.")
    if not isinstance(value, str):
        raise MemoryStoreError(
            f"{what} must be a string, got {type(value).__name__} {_describe(value)}."
        )
    text = valid_text(value).strip()
    if not text:
        raise MemoryStoreError(f"{what} cannot be empty (got {_describe(value)}).")
    return text


def clean_content(content: Any, what: str = "content") -> str:
    """Strip ``content``; refuse it (``MemoryStoreError``) if missing, not a string or empty.

    Lone surrogates are replaced (``valid_text``) so the text is always valid UTF-8. Errors
    name ``what`` (the argument as the caller knows it) and the wrong value or type.
    """
    text = _required_text(content, what, "the text of the entry (a non-empty string)")
    problem = entry_problem(text)
    if problem is not None:
        raise MemoryStoreError(f"{what} cannot be stored as one entry: {problem}.")
    return text


def clean_old_text(old_text: Any) -> str:
    """Strip ``old_text``; refuse a missing, non-string or empty one (surrogates replaced)."""
    return _required_text(old_text, "old_text", "a short unique substring of the entry to change")


class Editor:
    """Applies operations to a working copy of one target's entries (no I/O)."""

    def __init__(
        self, spec: TargetSpec, entries: list[str], display: Callable[[list[str]], list[str]]
    ) -> None:
        self.spec = spec
        self.original = list(entries)
        self.entries = list(entries)
        self.changes: list[Change] = []
        self._display = display

    def error(self, message: str, **extra: Any) -> MemoryStoreError:
        """An error carrying the current entries and usage, so the caller can recover."""
        usage = str(Usage.of(self.original, self.spec.char_limit))
        return MemoryStoreError(
            message, current_entries=self._display(self.original), usage=usage, **extra
        )

    def duplicate_of(self, content: str, skip: int = -1) -> str | None:
        """The existing entry that ``content`` duplicates (modulo case/space/punctuation)."""
        if skip < 0 and content in self.entries:
            return content
        key = _dedupe_key(content)
        for index, entry in enumerate(self.entries):
            if index != skip and (entry == content or _dedupe_key(entry) == key):
                return entry
        return None

    def match(self, old_text: str) -> int:
        """Index of the one entry containing ``old_text`` (identical matches: the first)."""
        hits = [i for i, entry in enumerate(self.entries) if old_text in entry]
        if not hits:
            raise self.error(f"No entry in {self.spec.filename} matched '{old_text}'.")
        if len({self.entries[i] for i in hits}) > 1:
            previews = [_preview(self.entries[i]) for i in hits]
            raise self.error(
                f"Multiple entries matched '{old_text}'. Be more specific.", matches=previews
            )
        return hits[0]

    def add(self, content: str) -> bool:
        """Append ``content`` unless it duplicates an entry; True when appended."""
        if self.duplicate_of(content) is not None:
            return False
        self.entries.append(content)
        self.changes.append(Change("add", self.spec.name, content))
        return True

    def replace(self, old_text: str, content: str) -> bool:
        """Replace the entry matching ``old_text``; False when the text is unchanged."""
        index = self.match(old_text)
        previous = self.entries[index]
        if previous == content:
            return False
        other = self.duplicate_of(content, skip=index)
        if other is not None:
            raise self.error(
                f"The new text duplicates another entry ('{_preview(other)}'). Remove the "
                "entry instead of replacing it."
            )
        self.entries[index] = content
        self.changes.append(Change("replace", self.spec.name, content, old_text, previous))
        return True

    def remove(self, old_text: str) -> None:
        """Remove the entry matching ``old_text``."""
        removed = self.entries.pop(self.match(old_text))
        self.changes.append(Change("remove", self.spec.name, removed, old_text, removed))

    def check_budget(self, message: Callable[[int, int], str]) -> None:
        """Refuse when the result is over budget and not smaller than before.

        An entry that alone is larger than the whole budget gets its own message:
        consolidating other entries could never make room for it.
        """
        new = Usage.of(self.entries, self.spec.char_limit).used
        old = Usage.of(self.original, self.spec.char_limit).used
        if new > self.spec.char_limit and new >= old:
            self._check_entries_fit()
            raise self.error(message(new, old))

    def _check_entries_fit(self) -> None:
        limit = self.spec.char_limit
        for change in self.changes:
            if change.action == "remove" or change.content not in self.entries:
                continue
            size = Usage.of([change.content], limit).used
            if size > limit:
                raise self.error(
                    f"This entry ({size:,} chars) is larger than the whole "
                    f"{self.spec.filename} budget ({limit:,} chars). Shorten it or split it "
                    "into smaller entries, then retry."
                )

    def result(self, message: str) -> tuple[list[str] | None, WriteResult]:
        """The ``MarkdownFile.mutate`` return value: entries to write (None if unchanged)."""
        usage = Usage.of(self.entries, self.spec.char_limit)
        result = WriteResult(self.spec.name, message, len(self.entries), usage, tuple(self.changes))
        return (list(self.entries) if self.changes else None), result


@dataclass(frozen=True)
class Operation:
    """One validated operation of a batch (``index`` is 1-based, for error messages)."""

    index: int
    action: str
    content: str
    old_text: str

    def apply(self, editor: Editor) -> None:
        """Apply to ``editor``; a failure names the operation and says nothing was applied."""
        steps: dict[str, Callable[[], object]] = {
            "add": lambda: editor.add(self.content),
            "replace": lambda: editor.replace(self.old_text, self.content),
            "remove": lambda: editor.remove(self.old_text),
        }
        try:
            steps[self.action]()
        except MemoryStoreError as exc:
            raise MemoryStoreError(
                f"Operation {self.index} ({self.action}): {exc} No operations were applied "
                "(batch is all-or-nothing).",
                **exc.details,
            ) from exc


def parse_operation(index: int, op: Mapping[str, Any]) -> Operation:
    """Validate one batch operation; errors name the operation and write nothing."""
    if not isinstance(op, Mapping):
        raise MemoryStoreError(f"Operation {index} must be an object, got {type(op).__name__}.")
    action = op.get("action")
    if action not in _ACTIONS:
        raise MemoryStoreError(
            f"Operation {index}: unknown action {action!r}. Use: {', '.join(_ACTIONS)}."
        )
    try:
        content = clean_content(op.get("content"), "content") if action != "remove" else ""
        old_text = clean_old_text(op.get("old_text")) if action != "add" else ""
    except MemoryStoreError as exc:
        raise MemoryStoreError(
            f"Operation {index} ({action}): {exc} No operations were applied."
        ) from exc
    return Operation(index, str(action), content, old_text)


@dataclass(frozen=True)
class FileReview:
    """The check of a whole hand-edited file: its entries, what refuses it, what to know.

    ``problems`` empty means the text may be saved; ``notes`` never block (duplicates that
    will be dropped, unchanged entries that still fail the safety scan).
    """

    entries: list[str]
    problems: list[str]
    notes: list[str]


def review_file(
    spec: TargetSpec,
    text: str,
    previous: Sequence[str],
    finding_ids: Callable[[str], list[str]],
) -> FileReview:
    """Check ``text`` as the new content of ``spec``'s file (what ``memory edit`` saves).

    Refused: an entry larger than the whole budget, a file over budget, and a new or
    changed entry that fails the safety scan. Entries kept unchanged from ``previous`` that
    fail the scan are only noted (they stay hidden from the prompt, as before).
    """
    entries = parse_entries(valid_text(text))
    problems: list[str] = []
    notes: list[str] = []
    raw_count = len([part for part in text.split("\n§\n") if part.strip()])
    if raw_count > len(entries):
        notes.append(f"{raw_count - len(entries)} duplicate entr(y/ies) will be dropped.")
    old = set(previous)
    for number, entry in enumerate(entries, start=1):
        size = Usage.of([entry], spec.char_limit).used
        if size > spec.char_limit:
            problems.append(
                f"entry {number} is {size:,} chars, larger than the whole {spec.filename} "
                f"budget of {spec.char_limit:,}: split it with a line holding only '§' "
                f"({_preview(entry)!r})"
            )
        ids = finding_ids(entry)
        if ids and entry not in old:
            problems.append(
                f"entry {number} was refused by the safety scan ({', '.join(ids)}): "
                f"{_preview(entry)!r}"
            )
        elif ids:
            notes.append(
                f"entry {number} still fails the safety scan ({', '.join(ids)}) and stays "
                "hidden from the prompt."
            )
    usage = Usage.of(entries, spec.char_limit)
    if usage.used > spec.char_limit:
        problems.append(
            f"the file would be {usage.used:,}/{spec.char_limit:,} chars: shorten or remove entries"
        )
    return FileReview(entries, problems, notes)
