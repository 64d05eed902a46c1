"""The ``memory`` tool for a target whose local write another provider suppresses.

A provider's ``capabilities()`` may declare ``suppresses_local_writes`` for ``memory``,
``user`` or both (the seed-01 proposal; e.g. a backend that owns the user profile). The
manager hands the curated provider the suppressed targets (``set_suppressed_targets``);
for those, a tool call is checked exactly like a local write (action, required fields,
the safety scan) but ``MEMORY.md``/``USER.md`` is not touched: the write is only reported
to the write listener, so every other provider's ``on_memory_write`` still receives it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryport import safety
from memoryport.errors import MemoryportError, MemoryStoreError
from memoryport.providers.curated.editor import Change, clean_content, clean_old_text

__all__ = ["SUPPRESSED_NOTE", "suppressed_target", "suppressed_write"]

SUPPRESSED_NOTE = (
    "Sent to the memory provider that handles this target; the local file is not written "
    "for it. This update is complete — do not repeat it."
)
_ACTIONS = ("add", "replace", "remove")


def suppressed_target(args: Any, suppressed: frozenset[str]) -> str:
    """The call's target when its local write is suppressed, else ``""``."""
    if not suppressed or not isinstance(args, Mapping):
        return ""
    target = args.get("target") or "memory"
    return target if isinstance(target, str) and target in suppressed else ""


def _change(target: str, op: Mapping[str, Any]) -> Change:
    action = op.get("action")
    if action not in _ACTIONS:
        raise MemoryStoreError(f"Unknown action {action!r}. Use: add, replace, remove")
    old_text = clean_old_text(op.get("old_text")) if action != "add" else ""
    content = clean_content(op.get("content")) if action != "remove" else ""
    return Change(str(action), target, content, old_text)


def _changes(target: str, args: Mapping[str, Any]) -> list[Change]:
    operations = args.get("operations")
    if operations is None:
        return [_change(target, args)]
    if not isinstance(operations, list) or not all(isinstance(op, Mapping) for op in operations):
        raise MemoryStoreError(
            "'operations' must be a list of {action, content, old_text} objects."
        )
    return [_change(target, op) for op in operations]


def suppressed_write(
    target: str, args: Mapping[str, Any], home: Path | None
) -> tuple[str, list[Change]]:
    """Check a suppressed write; return the tool's JSON answer and the changes to report.

    Invalid calls answer ``{"success": false, "error": ...}`` and report nothing.
    """
    try:
        changes = _changes(target, args)
        for change in changes:
            if change.content:
                safety.check(change.content, home=home)
    except MemoryportError as exc:
        return json.dumps({"success": False, **exc.to_dict()}, ensure_ascii=False), []
    payload = {
        "success": True,
        "done": True,
        "target": target,
        "local_write": False,
        "message": f"{len(changes)} change(s) sent to the provider that handles '{target}'.",
        "note": SUPPRESSED_NOTE,
    }
    return json.dumps(payload, ensure_ascii=False), changes
