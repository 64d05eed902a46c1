"""``memoryport memory edit``: fix ``MEMORY.md`` / ``USER.md`` by hand, checked on save.

The file is copied to a private temporary file, ``$VISUAL``/``$EDITOR`` opens it, and the
saved text is checked (:func:`memoryport.admin.curated.review_edit`): no entry larger than
the whole budget, the file within budget, no new or changed entry that fails the safety
scan. When the check fails nothing is written, every problem is shown and the edited text
is kept. A file that another writer changed meanwhile is never overwritten. The save goes
through ``memoryport.open()`` like a tool write: every provider's ``on_memory_write`` gets
each removed entry as ``remove`` and each new one as ``add`` (``source`` ``cli``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import click

from memoryport.admin.curated import CuratedMemory, review_edit, save_edit
from memoryport.cli._common import get_home, plural
from memoryport.cli.memory_common import TARGETS, open_store, store_options
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["edit_command"]


def _read_original(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{path} is not valid UTF-8 (byte offset {exc.start}); memoryport cannot edit it. "
            "Convert it to UTF-8 (for example `iconv -f latin1 -t utf-8`) first."
        ) from exc
    except OSError as exc:
        raise click.ClickException(f"Cannot read {path}: {exc}") from exc


def _work_file(name: str, text: str) -> Path:
    """A private (0600) temporary copy named after the file, so editors highlight it."""
    fd, work = tempfile.mkstemp(prefix=f"memoryport-{Path(name).stem}-", suffix=".md")
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.encode("utf-8"))
    return Path(work)


def _run_editor(work: Path) -> None:
    try:
        click.edit(filename=str(work))
    except click.ClickException as exc:
        raise click.ClickException(
            f"{exc.format_message()} (set $EDITOR to your editor). Nothing was changed; the "
            f"text is kept at {work}."
        ) from exc


def _check(store: CuratedMemory, target: str, work: Path, original: str) -> list[str] | str:
    """The entries to save, or the report of what refused the edited text."""
    data = work.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"  - the file is not valid UTF-8 (byte offset {exc.start})"
    review = review_edit(store, target, text, original)
    for note in review.notes:
        click.echo(f"note: {printable(note)}", err=True)
    if not review.problems:
        return review.entries
    return "\n".join(f"  - {printable(problem)}" for problem in review.problems)


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command("edit")
@click.option("--target", type=TARGETS, default="memory", show_default=True)
@store_options
def edit_command(home: Path | None, user_id: str, target: str) -> None:
    """Edit the target's file in $EDITOR; it is checked when you save.

    Entries are separated by a line holding only '§'. When the check fails nothing is
    written: each problem (an entry over the budget, a file over budget, an entry the
    safety scan refuses) is shown and the edited text is kept. This is the way to repair
    a file that writes refuse because it was changed outside memoryport.
    """
    store = open_store(home, user_id)
    try:
        store.writable(target)
    except MemoryportError as exc:
        raise click.ClickException(printable(str(exc))) from exc
    path = store.path(target)
    original = _read_original(path) if path.exists() else store.raw(target)  # a database row
    work = _work_file(path.name, original)
    click.echo(f"Editing {printable(str(path))} (entries are separated by a line '§').", err=True)
    while True:
        _run_editor(work)
        checked = _check(store, target, work, original)
        if isinstance(checked, list):
            break
        click.echo(f"The edited text was refused:\n{checked}", err=True)
        if _interactive() and click.confirm("Edit again?", default=True, err=True):
            continue
        raise click.ClickException(
            f"Nothing was changed. Your edited text is kept at {work}; fix it and copy it over "
            f"{path}, or run `memoryport memory edit` again."
        )
    try:
        result = save_edit(get_home(None, home), user_id, target, checked, expected_raw=original)
    except MemoryportError as exc:
        raise click.ClickException(
            f"{printable(str(exc))} Your edited text is kept at {work}."
        ) from exc
    with contextlib.suppress(OSError):
        work.unlink()
    count = plural(result.entry_count, "entry")
    click.echo(f"{result.message} {result.target}: {result.usage}, {count}")
