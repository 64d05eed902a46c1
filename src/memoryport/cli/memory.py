"""``memoryport memory``: list and edit curated memory (``MEMORY.md`` / ``USER.md``).

Writes (``add``, ``replace``, ``remove``, and the checked ``edit``) go through the public
API exactly like the model's ``memory`` tool (:mod:`memoryport.admin.curated`:
``memoryport.open(...)``, then ``Memory.call_tool("memory", ...)`` or the built-in
provider's whole-file save), so the scan, budget, drift guard and every provider's
``on_memory_write`` apply. Reads (``list``, ``path``) open the files directly and still
work, with a warning, when ``config.yaml`` is invalid. Refused writes exit with status 1
and a message on stderr (or a JSON object on stdout with ``--json``); nothing is changed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from memoryport.admin.curated import call_memory_tool, target_info, target_paths
from memoryport.cli._common import audited, get_home, is_terminal, make_console, plural
from memoryport.cli.memory_common import TARGETS, open_store, store_options
from memoryport.cli.memory_edit import edit_command
from memoryport.cli.memory_history import diff_command, history_command, restore_command
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["memory_group"]

_F = TypeVar("_F", bound=Callable[..., Any])
_TARGETS = TARGETS


def _json_flag(func: _F) -> _F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def _error_lines(payload: dict[str, Any]) -> str:
    """The human message for a failed tool result: error, matches, usage, how to fix."""
    lines = [str(payload.get("error", "the write failed"))]
    lines.extend(f"  matches: {match}" for match in payload.get("matches", []) or [])
    if payload.get("usage"):
        lines.append(f"Usage: {payload['usage']}")
    if payload.get("remediation"):
        lines.append(f"How to fix: {payload['remediation']}")
    return printable("\n".join(lines))


def _fail(message: str, as_json: bool, **extra: Any) -> NoReturn:
    """Exit 1: JSON ``{"success": false, ...}`` on stdout, or the message on stderr."""
    if as_json:
        click.echo(json.dumps({"success": False, "error": message, **extra}, ensure_ascii=False))
        raise SystemExit(1)
    raise click.ClickException(printable(message))


def _read_content(content: str, as_json: bool) -> str:
    """``-`` reads the content from stdin, which must be UTF-8."""
    if content != "-":
        return content
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(
            f"stdin is not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "cannot be decoded. Nothing was written. Convert the text to UTF-8 first "
            "(for example `iconv -f latin1 -t utf-8`).",
            as_json,
        )


def _write(
    home: Path | None, user_id: str, as_json: bool, action: str, args: dict[str, Any]
) -> None:
    try:
        payload = call_memory_tool(get_home(None, home), user_id, {"action": action, **args})
    except (MemoryportError, ValueError, OSError) as exc:
        _fail(f"{exc}. Nothing was written.", as_json)
    payload["action"] = action
    if not payload.get("success"):
        if as_json:
            click.echo(json.dumps(payload, ensure_ascii=False))
            raise SystemExit(1)
        raise click.ClickException(_error_lines(payload))
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    count = plural(int(payload.get("entry_count", 0)), "entry")
    click.echo(f"{payload['message']} {payload['target']}: {payload['usage']}, {count}")


def _print_plain(info: dict[str, Any]) -> None:
    usage = info["usage"]
    state = "" if info["enabled"] else ", disabled"
    click.echo(
        f"{info['target']}: {printable(info['location'])} ({usage['percent']}% - "
        f"{usage['used']:,}/{usage['limit']:,} chars, "
        f"{plural(len(info['entries']), 'entry')}{state})"
    )
    for number, entry in enumerate(info["entries"], start=1):
        flag = info["blocked"].get(str(number))
        text = printable(entry).replace("\n", "\n    ")
        click.echo(f"{number:>2}. {text}" + (f"  [unsafe: {', '.join(flag)}]" if flag else ""))


def _print_table(info: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    usage = info["usage"]
    title = (
        f"{info['target']} — {printable(info['location'])}\n{usage['percent']}% - "
        f"{usage['used']:,}/{usage['limit']:,} chars" + ("" if info["enabled"] else " (disabled)")
    )
    table = Table(title=Text(title), show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("entry", overflow="fold")
    table.add_column("scan")
    for number, entry in enumerate(info["entries"], start=1):
        flag = info["blocked"].get(str(number))
        table.add_row(str(number), Text(printable(entry)), ", ".join(flag) if flag else "ok")
    make_console().print(table)


@click.group("memory")
def memory_group() -> None:
    """Curated memory: agent notes (MEMORY.md) and the user profile (USER.md)."""


@memory_group.command("list")
@click.option("--target", type=_TARGETS, default=None, help="Only this target [default: both].")
@_json_flag
@store_options
@audited("read", "memory list", target="target")
def list_command(home: Path | None, user_id: str, target: str | None, as_json: bool) -> None:
    """Show the live entries and budget usage.

    JSON: {"targets": [{"target", "path", "location", "enabled", "entries", "entry_count",
    "usage", "blocked"}], "count": N}. Works with a broken config.yaml (default settings, a
    warning).
    """
    store = open_store(home, user_id, degrade=True)
    try:
        infos = [target_info(store, name) for name in ([target] if target else store.targets)]
    except MemoryportError as exc:
        raise click.ClickException(printable(str(exc))) from exc
    if as_json:
        click.echo(json.dumps({"targets": infos, "count": len(infos)}, ensure_ascii=False))
        return
    show = _print_table if is_terminal() else _print_plain
    for index, info in enumerate(infos):
        if index:
            click.echo()
        show(info)


@memory_group.command("add")
@click.argument("content")
@click.option("--target", type=_TARGETS, default="memory", show_default=True)
@_json_flag
@store_options
def add_command(home: Path | None, user_id: str, target: str, content: str, as_json: bool) -> None:
    """Add CONTENT as a new entry (use - to read it from stdin)."""
    text = _read_content(content, as_json)
    _write(home, user_id, as_json, "add", {"target": target, "content": text})


@memory_group.command("replace")
@click.argument("old_text")
@click.argument("content")
@click.option("--target", type=_TARGETS, default="memory", show_default=True)
@_json_flag
@store_options
def replace_command(
    home: Path | None, user_id: str, target: str, old_text: str, content: str, as_json: bool
) -> None:
    """Replace the one entry containing OLD_TEXT with CONTENT (- reads stdin)."""
    text = _read_content(content, as_json)
    args = {"target": target, "old_text": old_text, "content": text}
    _write(home, user_id, as_json, "replace", args)


@memory_group.command("remove")
@click.argument("old_text")
@click.option("--target", type=_TARGETS, default="memory", show_default=True)
@_json_flag
@store_options
def remove_command(
    home: Path | None, user_id: str, target: str, old_text: str, as_json: bool
) -> None:
    """Remove the one entry containing OLD_TEXT (works on a hand-edited file too)."""
    _write(home, user_id, as_json, "remove", {"target": target, "old_text": old_text})


@memory_group.command("path")
@click.option("--target", type=_TARGETS, default=None, help="Only this target [default: both].")
@_json_flag
@store_options
def path_command(home: Path | None, user_id: str, target: str | None, as_json: bool) -> None:
    """Print the file path of each target (the files may not exist yet)."""
    store = open_store(home, user_id, degrade=True)
    paths = target_paths(store, target)
    if as_json:
        click.echo(json.dumps(paths))
    elif target:
        click.echo(printable(paths[target]))
    else:
        for name, path in paths.items():
            click.echo(f"{name}: {printable(path)}")


memory_group.add_command(edit_command)
memory_group.add_command(history_command)
memory_group.add_command(diff_command)
memory_group.add_command(restore_command)
