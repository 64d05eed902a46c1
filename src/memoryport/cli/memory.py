"""``memoryport memory``: list and edit curated memory (``MEMORY.md`` / ``USER.md``).

A thin shell over :class:`memoryport.providers.builtin.CuratedMemory`: every rule (scan,
budget, duplicates, matching, drift guard, locking) lives in the store. Refused writes exit
with status 1 and a message on stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memoryport.cli._common import get_home, home_option, is_terminal, make_console, plural
from memoryport.config import load_config
from memoryport.errors import MemoryportError
from memoryport.providers.builtin.store import CuratedMemory, WriteResult

__all__ = ["memory_group"]

_F = TypeVar("_F", bound=Callable[..., Any])
_TARGETS = click.Choice(["memory", "user"])


def _store_options(func: _F) -> _F:
    """``--home`` and ``--user``, shared by every command of the group."""
    func = click.option(
        "--user",
        "user_id",
        default="",
        metavar="USER_ID",
        help="Use this user's own profile (memories/users/<id>/USER.md).",
    )(func)
    return home_option(func)


def _open_store(home: Path | None, user_id: str) -> CuratedMemory:
    """Open the store with the limits and switches from ``<home>/config.yaml``.

    ``home`` is this command's ``--home``; without it the root ``memoryport --home/--profile``
    choice (or ``$MEMORYPORT_HOME``, or ``~/.memoryport``) applies.
    """
    try:
        resolved = get_home(None, home)
        settings = load_config(resolved).memory
        return CuratedMemory(
            resolved,
            user_id=user_id,
            memory_char_limit=settings.memory_char_limit,
            user_char_limit=settings.user_char_limit,
            memory_enabled=settings.memory_enabled,
            user_profile_enabled=settings.user_profile_enabled,
        )
    except (MemoryportError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


def _fail(exc: MemoryportError) -> click.ClickException:
    """A ClickException (exit 1) whose message carries the useful error details."""
    details = exc.to_dict()
    lines = [str(exc)]
    for match in details.get("matches", []):
        lines.append(f"  matches: {match}")
    if details.get("usage"):
        lines.append(f"Usage: {details['usage']}")
    if details.get("remediation"):
        lines.append(f"How to fix: {details['remediation']}")
    return click.ClickException("\n".join(lines))


def _report(result: WriteResult) -> None:
    count = plural(result.entry_count, "entry")
    click.echo(f"{result.message} {result.target}: {result.usage}, {count}")


def _run_write(action: Callable[[], WriteResult]) -> None:
    try:
        _report(action())
    except MemoryportError as exc:
        raise _fail(exc) from exc


def _read_content(content: str) -> str:
    """``-`` reads the content from stdin."""
    return sys.stdin.read() if content == "-" else content


def _target_info(store: CuratedMemory, target: str) -> dict[str, Any]:
    entries = store.entries(target)
    return {
        "target": target,
        "path": str(store.path(target)),
        "enabled": store.is_enabled(target),
        "entries": entries,
        "usage": store.usage(target).to_dict(),
        "blocked": {str(i + 1): ids for i, ids in store.blocked(target).items()},
    }


def _print_plain(info: dict[str, Any]) -> None:
    usage = info["usage"]
    state = "" if info["enabled"] else ", disabled"
    click.echo(
        f"{info['target']}: {info['path']} ({usage['percent']}% - {usage['used']:,}/"
        f"{usage['limit']:,} chars, {plural(len(info['entries']), 'entry')}{state})"
    )
    for number, entry in enumerate(info["entries"], start=1):
        flag = info["blocked"].get(str(number))
        text = entry.replace("\n", "\n   ")
        click.echo(f"{number:>2}. {text}" + (f"  [unsafe: {', '.join(flag)}]" if flag else ""))


def _print_table(info: dict[str, Any]) -> None:
    from rich.table import Table

    usage = info["usage"]
    title = (
        f"{info['target']} — {info['path']}\n{usage['percent']}% - {usage['used']:,}/"
        f"{usage['limit']:,} chars" + ("" if info["enabled"] else " (disabled)")
    )
    table = Table(title=title, show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("entry", overflow="fold")
    table.add_column("scan")
    for number, entry in enumerate(info["entries"], start=1):
        flag = info["blocked"].get(str(number))
        table.add_row(str(number), entry, ", ".join(flag) if flag else "ok")
    make_console().print(table)


@click.group("memory")
def memory_group() -> None:
    """Curated memory: agent notes (MEMORY.md) and the user profile (USER.md)."""


@memory_group.command("list")
@click.option("--target", type=_TARGETS, default=None, help="Only this target [default: both].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_store_options
def list_command(home: Path | None, user_id: str, target: str | None, as_json: bool) -> None:
    """Show the live entries and budget usage."""
    store = _open_store(home, user_id)
    try:
        infos = [_target_info(store, name) for name in ([target] if target else store.targets)]
    except MemoryportError as exc:
        raise _fail(exc) from exc
    if as_json:
        click.echo(json.dumps({info["target"]: info for info in infos}, ensure_ascii=False))
        return
    show = _print_table if is_terminal() else _print_plain
    for index, info in enumerate(infos):
        if index:
            click.echo()
        show(info)


@memory_group.command("add")
@click.argument("content")
@click.option("--target", type=_TARGETS, default="memory", show_default=True)
@_store_options
def add_command(home: Path | None, user_id: str, target: str, content: str) -> None:
    """Add CONTENT as a new entry (use - to read it from stdin)."""
    store = _open_store(home, user_id)
    _run_write(lambda: store.add(target, _read_content(content)))


@memory_group.command("replace")
@click.argument("old_text")
@click.argument("content")
@click.option("--target", type=_TARGETS, default="memory", show_default=True)
@_store_options
def replace_command(
    home: Path | None, user_id: str, target: str, old_text: str, content: str
) -> None:
    """Replace the one entry containing OLD_TEXT with CONTENT (- reads stdin)."""
    store = _open_store(home, user_id)
    _run_write(lambda: store.replace(target, old_text, _read_content(content)))


@memory_group.command("remove")
@click.argument("old_text")
@click.option("--target", type=_TARGETS, default="memory", show_default=True)
@_store_options
def remove_command(home: Path | None, user_id: str, target: str, old_text: str) -> None:
    """Remove the one entry containing OLD_TEXT."""
    store = _open_store(home, user_id)
    _run_write(lambda: store.remove(target, old_text))


@memory_group.command("path")
@click.option("--target", type=_TARGETS, default=None, help="Only this target [default: both].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_store_options
def path_command(home: Path | None, user_id: str, target: str | None, as_json: bool) -> None:
    """Print the file path of each target (the files may not exist yet)."""
    store = _open_store(home, user_id)
    paths = {name: str(store.path(name)) for name in ([target] if target else store.targets)}
    if as_json:
        click.echo(json.dumps(paths))
    elif target:
        click.echo(paths[target])
    else:
        for name, path in paths.items():
            click.echo(f"{name}: {path}")
