"""Curated memory (``MEMORY.md`` / ``USER.md``) for shells: read it, and change it the way
the model's ``memory`` tool does.

History (``history_rows``, ``revision_diff``) reads the revision logs beside the files;
``restore_revision`` restores one through the built-in provider like ``save_edit``.

Reads (``open_curated``, ``target_info``, ``usage_summary``) open the files directly with
the limits from ``config.yaml``, so listings work without starting any provider. Every
change goes through ``memoryport.open()``: ``call_memory_tool`` runs the ``memory`` tool
and ``save_edit`` saves a reviewed whole-file edit through the built-in provider, so the
scan, the budget, the drift guard and every provider's ``on_memory_write`` apply to both.
"""

from __future__ import annotations

import contextlib
import difflib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryport.admin.pause import check_writes
from memoryport.config import MemorySettings, load_config
from memoryport.errors import MemoryportError, MemoryStoreError
from memoryport.providers.curated.backends import location
from memoryport.providers.curated.editor import FileReview
from memoryport.providers.curated.store import (
    CuratedMemory,
    Revision,
    WriteResult,
    curated_options,
)
from memoryport.storage.markdown import parse_entries

if TYPE_CHECKING:
    from memoryport.api import Memory

__all__ = [
    "CuratedMemory",
    "FileReview",
    "WriteResult",
    "call_memory_tool",
    "history_rows",
    "memory_settings",
    "open_curated",
    "parse_revision_id",
    "restore_revision",
    "review_edit",
    "revision_diff",
    "revision_row",
    "save_edit",
    "target_info",
    "target_paths",
    "usage_summary",
]

SOURCE = "cli"
"""The ``source`` shell writes report in ``on_memory_write`` metadata by default."""


def memory_settings(home: Path) -> MemorySettings:
    """The ``memory`` section of ``<home>/config.yaml`` (``ConfigError`` when invalid)."""
    return load_config(home).memory


def open_curated(
    home: Path, user_id: str = "", settings: MemorySettings | None = None
) -> CuratedMemory:
    """The curated-memory files of ``home`` (``user_id``'s own with a user id), for reading.

    ``settings`` defaults to ``config.yaml``'s; pass ``MemorySettings()`` to read with the
    defaults when the config is broken. ``MemoryportError``/``ValueError`` for a bad user id.
    """
    chosen = settings if settings is not None else memory_settings(home)
    return CuratedMemory(home, user_id=user_id, **curated_options(chosen))


def target_info(store: CuratedMemory, target: str) -> dict[str, Any]:
    """One target as JSON: path, location (where it really lives: the file, or the
    PostgreSQL row), enabled, entries, usage and the entries the scan blocks.

    ``blocked`` maps 1-based entry numbers (as strings) to the scan's finding ids.
    """
    entries = store.entries(target)
    return {
        "target": target,
        "path": str(store.path(target)),
        "location": location(store, target),
        "enabled": store.is_enabled(target),
        "entries": entries,
        "entry_count": len(entries),
        "usage": store.usage(target).to_dict(),
        "blocked": {str(i + 1): ids for i, ids in store.blocked(target).items()},
    }


def target_paths(store: CuratedMemory, target: str | None = None) -> dict[str, str]:
    """``{target: file path}`` for ``target`` or every target (the files may not exist)."""
    return {name: str(store.path(name)) for name in ([target] if target else store.targets)}


def usage_summary(home: Path, settings: MemorySettings) -> dict[str, Any]:
    """Per target: path, location (where it really lives), enabled, entry count and
    budget use (``memoryport status``).

    An unreadable file is reported in ``entries`` as ``"unreadable: ..."``, not raised.
    """
    store = CuratedMemory(home, **curated_options(settings))
    targets: dict[str, Any] = {}
    for target in store.targets:
        try:
            usage = store.usage(target)
            entries: int | str = len(store.entries(target))
            used, limit, percent = usage.used, usage.limit, usage.percent
        except (MemoryportError, OSError) as exc:
            entries, used, limit, percent = f"unreadable: {exc}", 0, 0, 0
        targets[target] = {
            "path": str(store.path(target)),
            "location": location(store, target),
            "enabled": store.is_enabled(target),
            "entries": entries,
            "used": used,
            "limit": limit,
            "percent": percent,
        }
    return {"active": True, "targets": targets}


def review_edit(store: CuratedMemory, target: str, text: str, original: str) -> FileReview:
    """Check ``text`` as the new whole content of ``target``, which held ``original``.

    ``problems`` empty means ``save_edit`` may save ``entries``; ``notes`` never block.
    """
    return store.review(target, text, parse_entries(original))


@contextlib.contextmanager
def _shell_memory(home: Path, user_id: str, source: str) -> Iterator[Memory]:
    """``memoryport.open()`` for one shell write, its (draft) session started and closed."""
    from memoryport.api import open_memory

    memory = open_memory(home, user_id=user_id or None, platform=source)
    try:
        memory.start_session(source=source)
        yield memory
    finally:
        memory.close()


def call_memory_tool(
    home: Path, user_id: str, args: dict[str, Any], *, source: str = SOURCE
) -> dict[str, Any]:
    """Run one ``memory`` tool call as the model would; return its JSON result as a dict.

    Providers see the write (``on_memory_write`` with ``source`` in the metadata). A
    refused write is a result with ``"success": false``; ``MemoryportError`` only when
    memory itself cannot be opened (e.g. an invalid ``config.yaml``).
    """
    with _shell_memory(home, user_id, source) as memory:
        text = memory.call_tool("memory", args, source=source)
    result: dict[str, Any] = json.loads(text)
    return result


def save_edit(
    home: Path,
    user_id: str,
    target: str,
    entries: Sequence[str],
    *,
    expected_raw: str,
    source: str = SOURCE,
) -> WriteResult:
    """Save reviewed ``entries`` as ``target``'s whole content, if it still holds
    ``expected_raw``; every provider's ``on_memory_write`` sees each removed and added entry.

    ``MemoryStoreError`` (nothing written) when the file changed meanwhile, the target is
    disabled, memory writes are paused or the write fails.
    """
    check_writes(home, "the edit")
    with _shell_memory(home, user_id, source) as memory:
        provider = memory.curated
        if provider is None:
            raise MemoryStoreError(
                "curated memory is disabled in config.yaml (memory.memory_enabled and "
                "memory.user_profile_enabled are both false); nothing was saved"
            )
        return provider.rewrite(target, list(entries), expected_raw=expected_raw, source=source)


# ---------------------------------------------------------------------- history


def parse_revision_id(rev_id: str, default_target: str = "memory") -> tuple[str, int]:
    """``"user:12"`` -> ``("user", 12)``; a bare ``"12"`` uses ``default_target``.

    ``MemoryStoreError`` naming the expected form for anything else.
    """
    target, _, number = str(rev_id).strip().rpartition(":")
    target = target or default_target
    if target not in ("memory", "user") or not number.isdigit() or int(number) < 1:
        raise MemoryStoreError(
            f"Invalid revision {rev_id!r}: expected TARGET:N such as 'memory:12' or 'user:3' "
            "(or N with --target), as listed by `memoryport memory history`."
        )
    return target, int(number)


def revision_row(target: str, revision: Revision, *, texts: bool = False) -> dict[str, Any]:
    """One revision as JSON: ``id`` (``target:rev``), time, action, provenance, changes,
    ``applied``; with ``texts`` also the whole file ``before`` and ``after``."""
    row = revision.to_dict()
    if not texts:
        del row["before"], row["after"]
    restored = revision.restored_from
    row["restored_from"] = f"{target}:{restored}" if restored is not None else None
    return {"id": f"{target}:{revision.rev}", "target": target, **row}


def history_rows(store: CuratedMemory, target: str | None = None) -> list[dict[str, Any]]:
    """The revisions of ``target`` (or both targets), newest first (``revision_row``)."""
    rows: list[tuple[float, int, dict[str, Any]]] = []
    for name in [target] if target else store.targets:
        for revision in store.history(name):
            rows.append((revision.ts, revision.rev, revision_row(name, revision)))
    rows.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [row for _, _, row in rows]


def revision_diff(
    store: CuratedMemory, rev_id: str, default_target: str = "memory"
) -> dict[str, Any]:
    """``{"revision": row with before/after, "diff": unified diff of the file}`` for one
    revision; ``MemoryStoreError`` when the id is malformed or not kept."""
    target, number = parse_revision_id(rev_id, default_target)
    revision = store.revision(target, number)
    name = store.path(target).name
    diff = difflib.unified_diff(
        revision.before.splitlines(keepends=True),
        revision.after.splitlines(keepends=True),
        fromfile=f"{name} before {target}:{number}",
        tofile=f"{name} after {target}:{number}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
    return {"revision": revision_row(target, revision, texts=True), "diff": text}


def restore_revision(
    home: Path,
    user_id: str,
    rev_id: str,
    *,
    before: bool = False,
    default_target: str = "memory",
    source: str = SOURCE,
) -> dict[str, Any]:
    """Restore the file text after revision ``rev_id`` (``before``: before it) through
    ``memoryport.open()``'s built-in provider: budget and safety scan apply, every
    provider's ``on_memory_write`` hears each removed and re-added entry, and the restore
    is a new revision. Returns ``{"success", "target", "message", "usage", "entry_count",
    "restored_from", "revision"}``; ``MemoryStoreError`` (nothing changed) on refusal.
    """
    check_writes(home, "the restore")
    target, number = parse_revision_id(rev_id, default_target)
    with _shell_memory(home, user_id, source) as memory:
        provider = memory.curated
        if provider is None or provider.store is None:
            raise MemoryStoreError(
                "curated memory is disabled in config.yaml; nothing was restored"
            )
        result = provider.restore(target, number, before=before, source=source)
        latest = provider.store.history(target)
    return {
        "success": True,
        "target": target,
        "message": result.message,
        "usage": str(result.usage),
        "entry_count": result.entry_count,
        "restored_from": f"{target}:{number}",
        "revision": f"{target}:{latest[-1].rev}" if latest and result.changes else None,
    }
