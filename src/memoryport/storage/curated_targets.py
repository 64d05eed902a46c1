"""Where one curated-memory target lives: the protocols a backend implements.

:class:`~memoryport.providers.curated.store.CuratedMemory` knows targets, budgets, the
scan and prompts; it reads and changes each target through a :class:`TargetFile` and
reads its history through a :class:`RevisionLog`, both made by a :class:`CuratedBackend`.
Two backends exist: :class:`FileBackend` (``MEMORY.md``/``USER.md`` with a JSON-lines
history beside each, the default) and
:class:`~memoryport.storage.postgres_curated.PostgresCuratedBackend` (rows in PostgreSQL,
for ``storage.backend: postgres``). Nothing above this module branches on the backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from memoryport.storage.history import HistoryLog, Revision
from memoryport.storage.markdown import FileState, MarkdownFile, RevisionNote

__all__ = ["CuratedBackend", "FileBackend", "RevisionLog", "TargetFile", "TargetPlace"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class TargetPlace:
    """Everything a backend needs to open one target.

    ``path`` is the target's file under the home (the file itself for :class:`FileBackend`;
    where ``memoryport export`` writes it for a database backend). ``owner`` is the user the
    target belongs to (``""``: the home's shared or single-user file), ``target`` its name,
    ``scope`` the user the store acts for (a database backend scopes its connection to it).
    """

    path: Path
    target: str
    owner: str
    scope: str
    char_limit: int
    lock_timeout: float = 10.0
    drift_hint: str = ""
    history: bool = True
    max_age_days: int = 90
    max_revisions: int = 1000


class TargetFile(Protocol):
    """One target's live text: read without a lock, change under the backend's lock."""

    @property
    def path(self) -> Path:
        """The target's file (or its export location for a database backend)."""
        ...

    def read_raw(self) -> str:
        """The stored text (``""`` when nothing is stored yet)."""
        ...

    def read_entries(self) -> list[str]:
        """The parsed entries of :meth:`read_raw`."""
        ...

    def drift_reason(self, raw: str, entries: Sequence[str] | None = None) -> str | None:
        """Why ``raw`` would lose data if rewritten, or None when it is clean."""
        ...

    def mutate(
        self,
        change: Callable[[FileState], tuple[list[str] | None, _T]],
        *,
        allow_drift: bool = False,
        describe: Callable[[_T], RevisionNote] | None = None,
    ) -> _T:
        """Run ``change`` on freshly read entries under an exclusive per-target lock and
        persist its result with its revision, all or nothing (see ``MarkdownFile.mutate``)."""
        ...


class RevisionLog(Protocol):
    """One target's revision history."""

    @property
    def path(self) -> Path:
        """The history file (or its export location for a database backend)."""
        ...

    def revisions(self) -> list[Revision]:
        """Every kept revision, oldest first."""
        ...

    def latest_rev(self) -> int | None:
        """The number of the last revision, or None."""
        ...

    def get(self, rev: int) -> Revision:
        """Revision ``rev``; ``MemoryStoreError`` naming the kept range when unknown."""
        ...


class CuratedBackend(Protocol):
    """Opens the storage of curated-memory targets."""

    def open_target(self, place: TargetPlace) -> tuple[TargetFile, RevisionLog]:
        """The live text and the history of the target ``place`` describes."""
        ...


class FileBackend:
    """Targets as ``§``-delimited Markdown files with a JSON-lines history beside each."""

    def __repr__(self) -> str:
        return "FileBackend()"

    def open_target(self, place: TargetPlace) -> tuple[TargetFile, RevisionLog]:
        """A :class:`MarkdownFile` and its :class:`HistoryLog` (``.history/<name>.jsonl``)."""
        log = HistoryLog.beside(
            place.path, max_age_days=place.max_age_days, max_revisions=place.max_revisions
        )
        file = MarkdownFile(
            place.path,
            char_limit=place.char_limit,
            lock_timeout=place.lock_timeout,
            drift_hint=place.drift_hint,
            history=log if place.history else None,
        )
        return file, log
