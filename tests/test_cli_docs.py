"""Every command on the click tree (including groups other modules register) is documented
in docs/cli.md and has help text."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from memoryport.cli import main
from memoryport.cli._common import iter_commands

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def _documented() -> set[str]:
    text = DOCS.read_text(encoding="utf-8")
    headings = {m.group(1).strip() for m in re.finditer(r"^#+\s+(memoryport[^\n]*)$", text, re.M)}
    code = set(re.findall(r"`(memoryport [a-z][a-z0-9_ -]*)", text))
    code |= {line.strip() for line in text.splitlines() if line.startswith("memoryport ")}
    return headings | {c.strip() for c in code}


def _command(path: str) -> click.Command:
    command: click.Command = main
    for part in path.split()[1:]:
        assert isinstance(command, click.Group)
        command = command.commands[part]
    return command


@pytest.mark.parametrize("path", list(iter_commands(main)))
def test_command_is_documented(path: str) -> None:
    documented = _documented()
    assert any(d == path or d.startswith(path + " ") for d in documented), (
        f"{path!r} is missing from docs/cli.md (add a heading or a code line)"
    )


@pytest.mark.parametrize("path", list(iter_commands(main)))
def test_command_has_help(path: str) -> None:
    assert (_command(path).help or "").strip(), f"{path} has no help text"


def test_tree_includes_every_group() -> None:
    paths = set(iter_commands(main))
    for expected in (
        "memoryport setup",
        "memoryport status",
        "memoryport doctor",
        "memoryport providers list",
        "memoryport providers show",
        "memoryport config get",
        "memoryport config set",
        "memoryport config path",
    ):
        assert expected in paths
