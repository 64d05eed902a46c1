"""The shells (``memoryport.cli``, ``memoryport.agent``) go through the public API only.

An ``ast`` walk over the shells' modules collects every ``memoryport.*`` import (top level,
inside functions and under ``TYPE_CHECKING`` alike) and checks each against the modules a
shell may use; a second walk finds import cycles among the shell modules (the
``agent.delegate`` <-> ``agent.loop`` and ``cli.memory`` <-> ``cli.memory_edit`` ones
existed). The whole-tree matrix lives in the layering test; this one names the shells.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memoryport
from memoryport.types import flatten_content

SRC = Path(memoryport.__file__).resolve().parent
SHELLS = ("memoryport.cli", "memoryport.agent")
ALLOWED = (
    "memoryport.api",
    "memoryport.aio",
    "memoryport.turn",
    "memoryport.admin",
    "memoryport.config",
    "memoryport.provider",
    "memoryport.types",
    "memoryport.errors",
    "memoryport.display",
    "memoryport.fence",
    "memoryport.safety",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``memoryport`` module ``path`` imports, with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            submodules = (f"{node.module}.{a.name}" for a in node.names)
            found += [(node.lineno, name) for name in submodules if _is_module(name)]
    return [(line, name) for line, name in found if name.split(".")[0] == "memoryport"]


def _is_module(name: str) -> bool:
    """True when ``name`` (e.g. ``memoryport.admin.sessions``) is a module, not an attribute."""
    path = SRC.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _shell_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for shell in SHELLS:
        root = SRC.joinpath(*shell.split(".")[1:])
        files.update({_module_name(p): p for p in sorted(root.rglob("*.py"))})
    return files


def _allowed(name: str) -> bool:
    return name == "memoryport" or any(
        name == prefix or name.startswith(prefix + ".") for prefix in (*ALLOWED, *SHELLS)
    )


def test_shells_import_only_the_public_api() -> None:
    files = _shell_files()
    assert "memoryport.cli.sessions" in files and "memoryport.agent.compression" in files
    reach_ins = [
        f"{module}:{line} imports {name}"
        for module, path in files.items()
        for line, name in _imports(path)
        if not _allowed(name)
    ]
    assert reach_ins == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_import_cycles_among_shell_modules() -> None:
    files = _shell_files()
    graph = {
        module: {name for _, name in _imports(path) if name in files and name != module}
        for module, path in files.items()
    }
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert _cycles(graph) == [["a", "b", "a"]]


def test_flatten_content_is_a_base_type_helper() -> None:
    assert flatten_content(None) == ""
    assert flatten_content("plain") == "plain"
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}]
    assert flatten_content(parts) == "look\n[image_url]"
    assert flatten_content(42) == "42"
