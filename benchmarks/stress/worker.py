"""The writer processes the stress scenarios start, killed and throttled.

Run as ``python -m benchmarks.stress.worker MODE HOME TAG [options]`` from the repository
root. Only the public API is used (``memoryport.open``, ``Memory.call_tool("memory", ...)``,
``Memory.begin_turn`` / ``end_turn``). The protocol is one line per event on stdout,
flushed at once, so a parent that SIGKILLs the worker still reads every line written:

``READY``                     imported and (unless ``--open-after-go``) opened
``SESSION <id>``              the session the turns go to
``ACK <json>``                a write the API reported as done (the *acknowledged* count)
``ERR <json>``                a write the API refused or failed (never counted as acked)
``DONE``                      the loop finished

With ``--wait-go`` the worker reads one line from stdin after ``READY`` before writing, so
that the parent can release many workers at once. ``--fsize-headroom BYTES`` lowers
RLIMIT_FSIZE to (size of the store file the mode writes) + BYTES after opening, with
SIGXFSZ ignored, so writes past it fail with EFBIG: a disk filling up under the writer.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

import memoryport

PAD = " | café 東京 ✓ naïve — " + "0123456789abcdef" * 6
"""Appended to every written text: a mangled byte or a truncated line shows up as a mismatch."""


def curated_text(tag: str, index: int) -> str:
    """The curated entry writer ``tag`` adds as its ``index``-th write."""
    return f"{tag} entry {index}{PAD}"


def turn_texts(tag: str, index: int) -> tuple[str, str]:
    """The (user, assistant) messages of writer ``tag``'s ``index``-th turn."""
    return f"{tag} user {index}{PAD}", f"{tag} assistant {index}{PAD}"


def emit(kind: str, payload: Any = None) -> None:
    """Write one protocol line and flush it."""
    line = kind if payload is None else f"{kind} {json.dumps(payload, ensure_ascii=False)}"
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _limit_file_size(home: Path, headroom: int, mode: str) -> int:
    """Lower RLIMIT_FSIZE to the size of the mode's store file plus ``headroom``."""
    store = home / "memories" / "MEMORY.md" if mode == "curated" else home / "state.db"
    limit = (store.stat().st_size if store.exists() else 0) + headroom
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    return limit


def _curated_loop(memory: memoryport.Memory, args: argparse.Namespace) -> None:
    errors_in_a_row = 0
    index = 0
    while args.count == 0 or index < args.count:
        content = curated_text(args.tag, index)
        try:
            raw = memory.call_tool(
                "memory", {"action": "add", "target": "memory", "content": content}
            )
            result = json.loads(raw)
        except Exception as exc:  # a crash of the write path is reported, not hidden
            result = {"success": False, "error": f"{type(exc).__name__}: {exc}"}
        if result.get("success"):
            emit("ACK", {"i": index})
            errors_in_a_row = 0
        else:
            emit("ERR", {"i": index, "error": str(result.get("error", result))[:300]})
            errors_in_a_row += 1
            if errors_in_a_row >= args.max_errors:
                return
        index += 1


def _session_loop(memory: memoryport.Memory, args: argparse.Namespace) -> None:
    errors_in_a_row = 0
    index = 0
    while args.count == 0 or index < args.count:
        user, assistant = turn_texts(args.tag, index)
        try:
            turn = memory.begin_turn(user)
            memory.end_turn(turn, assistant)
        except Exception as exc:  # StoreError is the documented failure
            emit("ERR", {"i": index, "error": f"{type(exc).__name__}: {exc}"[:300]})
            errors_in_a_row += 1
            if errors_in_a_row >= args.max_errors:
                return
        else:
            emit("ACK", {"i": index, "session": turn.session_id})
            errors_in_a_row = 0
        index += 1


def _both(memory: memoryport.Memory, args: argparse.Namespace) -> None:
    """First open: one curated add and one turn, each acknowledged separately."""
    args.count = 1
    _curated_loop(memory, args)
    _session_loop(memory, args)


MODES = {"curated": _curated_loop, "session": _session_loop, "both": _both}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("home", type=Path)
    parser.add_argument("tag")
    parser.add_argument("--count", type=int, default=0, help="writes to make (0: until killed)")
    parser.add_argument("--max-errors", type=int, default=20, help="stop after N errors in a row")
    parser.add_argument("--wait-go", action="store_true", help="read a stdin line before writing")
    parser.add_argument("--open-after-go", action="store_true", help="open only after the go")
    parser.add_argument("--fsize-headroom", type=int, default=0, help="lower RLIMIT_FSIZE")
    return parser.parse_args(argv)


def _open(args: argparse.Namespace) -> memoryport.Memory:
    memory = memoryport.open(args.home, platform="cli", load_provider=False)
    memory.start_session(source="cli", title=args.tag)
    emit("SESSION", {"session": memory.session_id})
    return memory


def main(argv: list[str] | None = None) -> int:
    """Entry point: open, (maybe) wait for the go, write, report each write on stdout."""
    args = _parse(argv)
    try:
        memory = None if args.open_after_go else _open(args)
        emit("READY")
        if args.wait_go:
            sys.stdin.readline()
        if memory is None:
            memory = _open(args)
    except Exception as exc:
        emit("ERR", {"i": -1, "error": f"open: {type(exc).__name__}: {exc}"[:500]})
        return 1
    if args.fsize_headroom:
        emit("LIMIT", {"bytes": _limit_file_size(args.home, args.fsize_headroom, args.mode)})
    MODES[args.mode](memory, args)
    emit("DONE")
    try:
        memory.close()
    except Exception as exc:
        emit("ERR", {"i": -1, "error": f"close: {type(exc).__name__}: {exc}"[:300]})
    os._exit(0)  # no atexit work after a filled disk: what was acknowledged is what counts


if __name__ == "__main__":
    sys.exit(main())
