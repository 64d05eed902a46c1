"""Curated memory kept in a database, as the files ``memoryport export`` writes.

With ``storage.backend: postgres`` nothing lives under ``<home>/memories``; this module
renders every target of the home's profile (every user) as the file the file backend
would hold there -- ``MEMORY.md``, ``USER.md``, ``users/<safe-id>/...`` -- with its
revision history as ``.history/<name>.jsonl`` lines, so an export looks the same whatever
the backend and imports into a file home unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

from memoryport.providers.curated.backends import default_backend
from memoryport.providers.curated.store import safe_user_id
from memoryport.storage.curated_targets import FileBackend
from memoryport.storage.history import Revision

__all__ = ["database_curated_files"]

_FILES = {"memory": "MEMORY.md", "user": "USER.md"}


def _jsonl(revisions: list[Revision]) -> bytes:
    lines = []
    for revision in revisions:
        data = revision.to_dict()
        del data["applied"]
        lines.append(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines).encode("utf-8")


def database_curated_files(home: Path) -> list[tuple[str, bytes]] | None:
    """``[(path relative to the home, bytes)]`` of the database's curated files for
    ``home``'s profile, sorted; None when the home keeps its curated memory in files."""
    backend = default_backend(home)
    dump = getattr(backend, "dump", None)  # PostgresCuratedBackend.dump (no driver import here)
    if isinstance(backend, FileBackend) or dump is None:
        return None
    files: list[tuple[str, bytes]] = []
    for owner, target, text, revisions in dump():
        name = _FILES.get(target, f"{target.upper()}.md")
        folder = f"memories/users/{safe_user_id(owner)}" if owner else "memories"
        if text:
            files.append((f"{folder}/{name}", text.encode("utf-8")))
        if revisions:
            files.append((f"{folder}/.history/{name}.jsonl", _jsonl(revisions)))
    return sorted(files)
