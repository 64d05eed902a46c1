"""``CuratedMemory``: the plain-Python API over ``MEMORY.md`` and ``USER.md``.

Layout under ``home``::

    memories/MEMORY.md                    agent notes (shared by every user)
    memories/USER.md                      user profile (single-user layout)
    memories/users/<safe-id>/USER.md      user profile when a ``user_id`` is given
    memories/users/<safe-id>/MEMORY.md    agent notes with ``agent_notes="per_user"``

Each target is one :class:`~memoryport.storage.markdown.MarkdownFile` plus a
:class:`TargetSpec`; nothing branches on target names. Mutations scan the new content first
(``memoryport.safety``; nothing is persisted when it fails), then run under the file lock on
freshly re-read entries with the drift guard. Errors are raised as ``MemoryStoreError``,
``DriftError`` or ``UnsafeContent``; the tool layer turns them into JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from memoryport import safety
from memoryport.config import (
    AGENT_NOTES_MODES,
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    MemorySettings,
)
from memoryport.errors import MemoryStoreError
from memoryport.providers.curated.backends import default_backend
from memoryport.providers.curated.editor import (
    Change,
    Editor,
    FileReview,
    TargetSpec,
    WriteResult,
    clean_content,
    clean_old_text,
    parse_operation,
    review_file,
)
from memoryport.providers.curated.prompt import Usage, compose_prompt, render_block
from memoryport.storage.curated_targets import CuratedBackend, RevisionLog, TargetFile, TargetPlace
from memoryport.storage.history import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_REVISIONS,
    Provenance,
    Revision,
    mark_applied,
)
from memoryport.storage.markdown import FileState, RevisionNote, parse_entries

__all__ = [
    "Change",
    "CuratedMemory",
    "CuratedOptions",
    "Provenance",
    "Revision",
    "Snapshot",
    "TargetSpec",
    "WriteResult",
    "curated_options",
    "safe_user_id",
]

log = logging.getLogger(__name__)


class CuratedOptions(TypedDict, total=False):
    """The ``memory:`` settings that shape curated memory (``CuratedMemory`` keywords);
    :func:`curated_options` reads them from a :class:`MemorySettings`."""

    memory_char_limit: int
    user_char_limit: int
    memory_enabled: bool
    user_profile_enabled: bool
    agent_notes: str
    history_enabled: bool
    history_max_age_days: int
    history_max_revisions: int


def curated_options(settings: MemorySettings) -> CuratedOptions:
    """The curated-memory keywords of a ``memory:`` block: the one mapping from
    ``config.yaml`` to ``CuratedMemory`` / ``create_builtin_provider``."""
    return CuratedOptions(
        memory_char_limit=settings.memory_char_limit,
        user_char_limit=settings.user_char_limit,
        memory_enabled=settings.memory_enabled,
        user_profile_enabled=settings.user_profile_enabled,
        agent_notes=settings.agent_notes,
        history_enabled=settings.history_enabled,
        history_max_age_days=settings.history_max_age_days,
        history_max_revisions=settings.history_max_revisions,
    )


_SAFE_ID = re.compile(r"[a-z0-9_-]{1,64}")
_RESERVED_IDS = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)


def safe_user_id(user_id: str) -> str:
    """The directory name for ``user_id``: the id itself when it is already safe, else hashed.

    Ids of 1-64 characters from ``[a-z0-9_-]`` (not a Windows device name) are used as is.
    Anything else (``../x``, ``/etc``, ``a/b``, ``.``, NUL bytes, upper case, very long ids)
    becomes ``<cleaned>.<sha256 prefix>``; the dot never occurs in a pass-through id, so two
    different user ids never share a directory. Raises ``ValueError`` for an empty id.
    """
    if not user_id:
        raise ValueError("user_id must be a non-empty string")
    if _SAFE_ID.fullmatch(user_id) and user_id not in _RESERVED_IDS:
        return user_id
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", user_id.lower()).strip("_")[:40] or "user"
    digest = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{cleaned}.{digest}"


@dataclass(frozen=True)
class Snapshot:
    """The frozen system-prompt text captured by :meth:`CuratedMemory.load`."""

    text: str = ""
    blocks: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def _whole_file(
    spec: TargetSpec, state: FileState, new: list[str], saved: str
) -> tuple[list[str] | None, WriteResult]:
    """The change of a whole-file save (edit, restore): ``new`` replaces the entries."""
    removed = [Change("remove", spec.name, e, e, e) for e in state.entries if e not in new]
    added = [Change("add", spec.name, e) for e in new if e not in state.entries]
    unchanged = new == state.entries and state.drift_backup is None
    message = "No changes." if unchanged else saved + _drift_note(state)
    usage = Usage.of(new, spec.char_limit)
    result = WriteResult(spec.name, message, len(new), usage, (*removed, *added))
    return (None if unchanged else new), result


def _drift_note(state: FileState) -> str:
    if state.drift_backup is None:
        return ""
    return (
        " The file had been edited outside memoryport; its previous text is saved at "
        f"{state.drift_backup}."
    )


class CuratedMemory:
    """Agent notes (``memory``) and user profile (``user``) under ``<home>/memories``.

    Reads take no lock and never create anything. Every mutation is scanned, locked,
    re-read, drift-checked and written atomically; see the module docstring for the layout.
    ``load()`` captures the frozen system-prompt snapshot; ``snapshot`` returns it until
    the next ``load()``.

    ``backend`` says where the targets live (a ``CuratedBackend``); by default the home's
    ``config.yaml`` decides: files, or PostgreSQL rows with ``storage.backend: postgres``
    (:func:`~memoryport.providers.curated.backends.default_backend`).
    """

    def __init__(
        self,
        home: Path | str,
        *,
        user_id: str = "",
        memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT,
        user_char_limit: int = DEFAULT_USER_CHAR_LIMIT,
        memory_enabled: bool = True,
        user_profile_enabled: bool = True,
        lock_timeout: float = 10.0,
        agent_notes: str = "shared",
        history_enabled: bool = True,
        history_max_age_days: int = DEFAULT_MAX_AGE_DAYS,
        history_max_revisions: int = DEFAULT_MAX_REVISIONS,
        backend: CuratedBackend | None = None,
    ) -> None:
        if agent_notes not in AGENT_NOTES_MODES:
            raise ValueError(
                f"agent_notes must be one of {', '.join(AGENT_NOTES_MODES)}, got {agent_notes!r}"
            )
        self.home = Path(home).expanduser()
        self.user_id = user_id
        self.agent_notes = agent_notes
        memories = self.home / "memories"
        user_dir = memories / "users" / safe_user_id(user_id) if user_id else memories
        notes_dir = user_dir if agent_notes == "per_user" else memories
        layout = (
            (TargetSpec("memory", "MEMORY.md", "MEMORY (your personal notes)",
                        memory_char_limit, memory_enabled), notes_dir),
            (TargetSpec("user", "USER.md", "USER PROFILE (who the user is)",
                        user_char_limit, user_profile_enabled), user_dir),
        )  # fmt: skip
        self._specs = {spec.name: spec for spec, _ in layout}
        self.history_enabled = history_enabled
        self.backend = backend if backend is not None else default_backend(self.home)
        opened = {
            spec.name: self.backend.open_target(TargetPlace(
                path=directory / spec.filename, target=spec.name,
                owner=user_id if directory != memories else "", scope=user_id,
                char_limit=spec.char_limit, lock_timeout=lock_timeout,
                drift_hint=self._drift_hint(spec), history=history_enabled,
                max_age_days=history_max_age_days, max_revisions=history_max_revisions,
            ))
            for spec, directory in layout
        }  # fmt: skip
        self._files: dict[str, TargetFile] = {name: pair[0] for name, pair in opened.items()}
        self._logs: dict[str, RevisionLog] = {name: pair[1] for name, pair in opened.items()}
        self._snapshot = Snapshot()

    def _drift_hint(self, spec: TargetSpec) -> str:
        user = f" --user {shlex.quote(self.user_id)}" if self.user_id else ""
        return (
            f"Run `memoryport memory edit --target {spec.name}{user}` to fix the file in your "
            "editor (it is checked when you save and nothing is lost), or restore the backup. "
            f"Removing an entry always works: `memoryport memory remove --target {spec.name}"
            f"{user} TEXT`."
        )

    def __repr__(self) -> str:
        return f"CuratedMemory({str(self.home)!r}, user_id={self.user_id!r})"

    # ------------------------------------------------------------------ targets
    @property
    def targets(self) -> tuple[str, ...]:
        """All target names, enabled or not: ``("memory", "user")``."""
        return tuple(self._specs)

    def spec(self, target: str) -> TargetSpec:
        """The :class:`TargetSpec` of ``target``; ``MemoryStoreError`` for an unknown one."""
        try:
            return self._specs[target]
        except (KeyError, TypeError):
            names = "' or '".join(self._specs)
            raise MemoryStoreError(
                f"Invalid target {target!r} ({type(target).__name__}). Use '{names}'."
            ) from None

    def is_enabled(self, target: str) -> bool:
        """True when ``target`` accepts writes and appears in the snapshot."""
        return self.spec(target).enabled

    def path(self, target: str) -> Path:
        """The file backing ``target`` (it may not exist yet)."""
        self.spec(target)
        return self._files[target].path

    # ------------------------------------------------------------------ reads
    def raw(self, target: str) -> str:
        """The stored text of ``target`` (the file's, or the database row's), ``""`` when
        nothing is stored yet."""
        self.spec(target)
        return self._files[target].read_raw()

    def entries(self, target: str) -> list[str]:
        """The live entries of ``target`` as on disk now (``[]`` for a missing file)."""
        self.spec(target)
        return self._files[target].read_entries()

    def usage(self, target: str) -> Usage:
        """Characters used by ``target`` against its budget."""
        return Usage.of(self.entries(target), self.spec(target).char_limit)

    def blocked(self, target: str) -> dict[int, list[str]]:
        """Entries of ``target`` that fail the safety scan: ``{index: [finding ids]}``."""
        return {
            index: ids
            for index, entry in enumerate(self.entries(target))
            if (ids := self._finding_ids(entry))
        }

    # ------------------------------------------------------------------ writes
    def add(
        self, target: str, content: str, *, provenance: Provenance | None = None
    ) -> WriteResult:
        """Add one entry. A (near-)duplicate is a success that writes nothing.

        ``provenance`` (every write method takes it) is recorded in the revision history;
        the default is ``Provenance(source="api")`` with this store's user id.
        """
        spec, text = self.writable(target), clean_content(content)
        self._scan(text)

        def change(state: FileState) -> tuple[list[str] | None, WriteResult]:
            editor = self._editor(spec, state)
            if not editor.add(text):
                return editor.result("Entry already exists (no duplicate added).")
            editor.check_budget(
                lambda _new, old: (
                    f"{spec.filename} is at {old:,}/{spec.char_limit:,} chars. Adding this "
                    f"entry ({len(text):,} chars) would exceed the limit. Consolidate now: "
                    "replace or remove stale or mergeable entries, then retry this add."
                )
            )
            return editor.result("Entry added.")

        return self._files[target].mutate(change, describe=self._note("add", provenance))

    def replace(
        self, target: str, old_text: str, content: str, *, provenance: Provenance | None = None
    ) -> WriteResult:
        """Replace the one entry containing ``old_text`` with ``content``."""
        spec, old = self.writable(target), clean_old_text(old_text)
        text = clean_content(content)
        self._scan(text)

        def change(state: FileState) -> tuple[list[str] | None, WriteResult]:
            editor = self._editor(spec, state)
            if not editor.replace(old, text):
                return editor.result("Entry unchanged (the new text equals the current entry).")
            editor.check_budget(
                lambda new, _old: (
                    f"Replacement would put {spec.filename} at {new:,}/{spec.char_limit:,} "
                    "chars. Shorten the new text or remove other entries first."
                )
            )
            return editor.result("Entry replaced.")

        return self._files[target].mutate(change, describe=self._note("replace", provenance))

    def remove(
        self, target: str, old_text: str, *, provenance: Provenance | None = None
    ) -> WriteResult:
        """Remove the one entry containing ``old_text``."""
        spec, old = self.writable(target), clean_old_text(old_text)

        def change(state: FileState) -> tuple[list[str] | None, WriteResult]:
            editor = self._editor(spec, state)
            editor.remove(old)
            return editor.result("Entry removed." + _drift_note(state))

        note = self._note("remove", provenance)
        return self._files[target].mutate(change, allow_drift=True, describe=note)

    def apply_batch(
        self,
        target: str,
        operations: Sequence[Mapping[str, Any]],
        *,
        provenance: Provenance | None = None,
    ) -> WriteResult:
        """Apply several operations all-or-nothing; only the final size is budget-checked.

        Each operation is ``{"action": "add"|"replace"|"remove", "content", "old_text"}``.
        A duplicate add inside the batch is skipped. Any failure writes nothing.
        """
        spec = self.writable(target)
        ops = [parse_operation(i, op) for i, op in enumerate(operations, start=1)]
        if not ops:
            raise MemoryStoreError("operations cannot be empty.")
        for op in ops:
            if op.content:
                self._scan(op.content)

        def change(state: FileState) -> tuple[list[str] | None, WriteResult]:
            editor = self._editor(spec, state)
            for op in ops:
                op.apply(editor)
            editor.check_budget(
                lambda new, _old: (
                    f"After applying all {len(ops)} operations, {spec.filename} would be at "
                    f"{new:,}/{spec.char_limit:,} chars. No operations were applied (batch "
                    "is all-or-nothing)."
                )
            )
            applied = f"Applied {len(editor.changes)} operation(s)."
            return editor.result(applied + _drift_note(state))

        only_removes = all(op.action == "remove" for op in ops)
        note = self._note("batch", provenance)
        return self._files[target].mutate(change, allow_drift=only_removes, describe=note)

    # ------------------------------------------------------------------ whole-file edit
    def review(self, target: str, text: str, previous: Sequence[str] = ()) -> FileReview:
        """Check ``text`` as the whole new content of ``target`` (see ``review_file``)."""
        return review_file(self.spec(target), text, previous, self._finding_ids)

    def rewrite(
        self,
        target: str,
        entries: Sequence[str],
        *,
        expected_raw: str,
        provenance: Provenance | None = None,
    ) -> WriteResult:
        """Replace ``target``'s entries with ``entries`` if the file still holds ``expected_raw``.

        For ``memoryport memory edit``: the caller reviewed ``entries`` (``review``) against
        the text it read. A drifted file is backed up first. ``MemoryStoreError`` (nothing
        written) when the file changed in the meantime or the write fails. Recorded in the
        history as an ``edit``.
        """
        spec = self.writable(target)
        new = list(entries)

        def change(state: FileState) -> tuple[list[str] | None, WriteResult]:
            if state.raw.strip() != expected_raw.strip():
                raise MemoryStoreError(
                    f"{spec.filename} was changed by another writer while you were editing "
                    "it; nothing was saved. Run the edit again."
                )
            return _whole_file(spec, state, new, "File saved.")

        note = self._note("edit", provenance)
        return self._files[target].mutate(change, allow_drift=True, describe=note)

    # ------------------------------------------------------------------ history
    def history(self, target: str) -> list[Revision]:
        """``target``'s recorded revisions, oldest first, each marked ``applied`` (False
        for a write whose writer was killed before the file was replaced)."""
        self.spec(target)
        return mark_applied(self._logs[target].revisions(), self._files[target].read_raw())

    def latest_rev(self, target: str) -> int | None:
        """The number of ``target``'s last revision (read from the log's tail), or None."""
        self.spec(target)
        return self._logs[target].latest_rev()

    def revision(self, target: str, rev: int) -> Revision:
        """Revision ``rev`` of ``target``; ``MemoryStoreError`` when it is not kept."""
        self.spec(target)
        return self._logs[target].get(rev)

    def history_path(self, target: str) -> Path:
        """The revision log of ``target`` (it may not exist yet)."""
        self.spec(target)
        return self._logs[target].path

    def restore(
        self,
        target: str,
        rev: int,
        *,
        before: bool = False,
        provenance: Provenance | None = None,
    ) -> WriteResult:
        """Make ``target`` hold the file text right after revision ``rev`` (``before``:
        right before it, i.e. undo it). The restore is itself a new revision.

        The restored text is checked like ``memory edit`` (budget of the live content,
        safety scan of entries not in the current file); ``MemoryStoreError`` (nothing
        written) when it fails, the revision is unknown or history is disabled.
        """
        spec = self.writable(target)
        if not self.history_enabled:
            raise MemoryStoreError(
                "Curated-memory history is disabled (memory.history_enabled: false); "
                "nothing was restored. Enable it with `memoryport config set "
                "memory.history_enabled true`."
            )
        revision = self.revision(target, rev)
        text = revision.before if before else revision.after
        which = f"the text before revision {target}:{rev}" if before else f"revision {target}:{rev}"

        def change(state: FileState) -> tuple[list[str] | None, WriteResult]:
            review = self.review(target, text, state.entries)
            if review.problems:
                raise MemoryStoreError(
                    f"Cannot restore {which} of {spec.filename}: "
                    + "; ".join(review.problems)
                    + ". Nothing was changed."
                )
            return _whole_file(spec, state, review.entries, f"Restored {which}.")

        note = self._note("restore", provenance, restored_from=rev)
        return self._files[target].mutate(change, allow_drift=True, describe=note)

    def _note(
        self, action: str, provenance: Provenance | None, restored_from: int | None = None
    ) -> Callable[[WriteResult], RevisionNote]:
        origin = provenance or Provenance()
        if not origin.user_id and self.user_id:
            origin = dataclasses.replace(origin, user_id=self.user_id)

        def describe(result: WriteResult) -> RevisionNote:
            changes = tuple(
                {"action": c.action, "content": c.content, "previous": c.previous}
                for c in result.changes
            )
            return RevisionNote(action, origin, changes, restored_from)

        return describe

    # ------------------------------------------------------------------ snapshot
    def load(self) -> Snapshot:
        """Read every enabled target and capture the frozen system-prompt snapshot.

        Entries failing the safety scan are left out of the prompt (with a warning and a
        notice naming the finding ids); they stay on disk and in ``entries()``.
        """
        blocks: dict[str, str] = {}
        notices: list[str] = []
        warnings: list[str] = []
        for name, spec in self._specs.items():
            if not spec.enabled:
                continue
            file = self._files[name]
            raw = file.read_raw()
            drift = file.drift_reason(raw)
            if drift is not None:
                warnings.append(
                    f"{file.path} was edited outside memoryport: {drift}. Writes to it will "
                    "be refused (with a backup) until it is fixed."
                )
            block, notice, blocked = self._render_target(spec, raw)
            blocks[name] = block
            notices.extend(notice)
            warnings.extend(blocked)
        for warning in warnings:
            log.warning("curated memory: %s", warning)
        text = compose_prompt(list(blocks.values()), notices) if blocks else ""
        self._snapshot = Snapshot(text=text, blocks=blocks, warnings=tuple(warnings))
        return self._snapshot

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot captured by the last ``load()`` (empty before the first one)."""
        return self._snapshot

    # ------------------------------------------------------------------ internals
    def _render_target(self, spec: TargetSpec, raw: str) -> tuple[str, list[str], list[str]]:
        entries = parse_entries(raw)
        visible: list[str] = []
        found: list[str] = []
        for entry in entries:
            ids = self._finding_ids(entry)
            if ids:
                found.extend(i for i in ids if i not in found)
            else:
                visible.append(entry)
        block = render_block(spec.title, visible, Usage.of(entries, spec.char_limit))
        hidden = len(entries) - len(visible)
        if not hidden:
            return block, [], []
        ids_text = ", ".join(found)
        warning = (
            f"{hidden} entr{'y' if hidden == 1 else 'ies'} in {self._files[spec.name].path} "
            f"failed the safety scan ({ids_text}) and {'was' if hidden == 1 else 'were'} left out "
            "of the system prompt"
        )
        notice = (
            f"[{spec.filename}: {hidden} entr{'y' if hidden == 1 else 'ies'} left out of this "
            f"prompt because {'it' if hidden == 1 else 'they'} failed the safety scan "
            f"({ids_text}). "
            f"The user can review them with `memoryport memory list --target {spec.name}`; "
            'remove them with memory(action="remove").]'
        )
        return block, [notice], [warning]

    def writable(self, target: str) -> TargetSpec:
        """The spec of ``target`` if it accepts writes; ``MemoryStoreError`` otherwise."""
        spec = self.spec(target)
        if not spec.enabled:
            raise MemoryStoreError(
                f"Memory target '{spec.name}' ({spec.filename}) is disabled in this "
                "configuration; nothing was written."
            )
        return spec

    def _editor(self, spec: TargetSpec, state: FileState) -> Editor:
        return Editor(spec, state.entries, self._display)

    def display_entries(self, target: str) -> list[str]:
        """Live entries as echoed to a model: entries failing the scan become a marker."""
        return self._display(self.entries(target))

    def _display(self, entries: list[str]) -> list[str]:
        shown = []
        for entry in entries:
            ids = self._finding_ids(entry)
            shown.append(
                f"[BLOCKED: entry failed the safety scan ({', '.join(ids)}); hidden]"
                if ids
                else entry
            )
        return shown

    def _finding_ids(self, text: str) -> list[str]:
        return [finding.id for finding in safety.scan(text, home=self.home)]

    def _scan(self, text: str) -> None:
        safety.check(text, home=self.home)
