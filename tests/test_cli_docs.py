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
    """Headings and code spans/lines naming a command. Inside a ``## memoryport GROUP``
    section, a code span starting with ``GROUP cmd`` counts as ``memoryport GROUP cmd``."""
    text = DOCS.read_text(encoding="utf-8")
    found = {m.group(1).strip() for m in re.finditer(r"^#+\s+(memoryport[^\n]*)$", text, re.M)}
    found |= {line.strip() for line in text.splitlines() if line.startswith("memoryport ")}
    for section in re.split(r"^## ", text, flags=re.M):
        group = re.match(r"memoryport ([a-z][a-z0-9_-]*)", section)
        for span in re.findall(r"`([^`\n]+)`", section):
            if span.startswith("memoryport "):
                found.add(span.strip())
            elif group and span.startswith(group.group(1) + " "):
                found.add("memoryport " + span.strip())
    return found


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
