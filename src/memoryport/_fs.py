"""Private directories and durable directory entries: memoryport's state (chat history,
memories, secrets) is per user."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PRIVATE_DIR_MODE", "ensure_private_dir", "fsync_directory"]

PRIVATE_DIR_MODE = 0o700
"""Mode of every directory memoryport creates for its state."""


def ensure_private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and missing parents) with mode 0700; return it.

    Only directories created here get the mode: an existing directory keeps whatever
    permissions its owner chose.
    """
    target = Path(path).expanduser()
    missing: list[Path] = []
    probe = target
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # created concurrently; leave its mode alone
        os.chmod(directory, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask
    if not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a directory")
    return target


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a new or renamed entry of ``directory`` durable (skipped where directories
    cannot be opened, or cannot be synced)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
