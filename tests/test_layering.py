"""The layering of ``src/memoryport`` is a tested fact, not a hope.

An ``ast`` walk over every module collects its imports of ``memoryport.*`` (top-level and
inside functions alike), puts each module in a layer and checks the allowed matrix below,
that the import graph has no cycles, and the size budget (no module over 600 lines, no
function over 60). ``docs/architecture.md`` draws the same picture. A new module must fit
the matrix or change it here, on purpose.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "memoryport"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60

# Layer of a module: the first prefix that matches wins (longest prefixes first).
LAYERS: dict[str, str] = {
    # shells: the reference agent, the CLI, the MCP server, the adapters, the web inspector
    "memoryport.cli": "shell",
    "memoryport.agent": "shell",
    "memoryport.mcp": "shell",
    "memoryport.adapters": "shell",
    "memoryport.ui": "shell",
    # the public API the shells use
    "memoryport.api": "api",
    "memoryport.aio": "api",
    "memoryport.turn": "api",
    "memoryport.admin": "api",
    "memoryport": "api",  # the package __init__: lazy re-exports only
    # wiring: the only place that names concrete parts
    "memoryport._wiring": "wiring",
    "memoryport._shutdown": "wiring",
    "memoryport.testing": "wiring",
    # plugin discovery and loading
    "memoryport.plugins": "plugins",
    # the manager and its private helpers
    "memoryport.manager": "manager",
    # bundled providers
    "memoryport.providers": "providers",
    # storage knows nothing above it
    "memoryport.storage": "storage",
    # the provider contract
    "memoryport.provider": "contract",
    # configuration: home, config.yaml, .env, typed fields
    "memoryport.config": "config",
    # shared leaves: types, errors, display, fencing and the safety scan
    "memoryport.types": "base",
    "memoryport.errors": "base",
    "memoryport.display": "base",
    "memoryport.fence": "base",
    "memoryport.safety": "base",
    "memoryport._safety": "base",
    "memoryport._fs": "base",
}

# Which layers a layer may import (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "shell": frozenset({"api", "config", "contract", "base"}),
    "api": frozenset({"wiring", "manager", "providers", "storage", "plugins", "contract",
                      "config", "base"}),
    "wiring": frozenset({"manager", "providers", "storage", "plugins", "contract", "config",
                         "base"}),
    "plugins": frozenset({"contract", "config", "base"}),
    "manager": frozenset({"contract", "base"}),
    "providers": frozenset({"contract", "storage", "config", "base"}),
    "storage": frozenset({"base"}),
    "contract": frozenset({"config", "base"}),  # validate_config for provider schemas
    "config": frozenset({"base"}),
    "base": frozenset(),
}


@dataclass(frozen=True)
class Edge:
    """One import of a memoryport module by another."""

    source: str
    target: str
    line: int


def module_name(root: Path, path: Path) -> str:
    """Dotted module name of ``path`` under ``root`` (``pkg/__init__.py`` -> ``pkg``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    """The layer ``module`` belongs to, or None when no prefix names it."""
    if module == PACKAGE:
        return LAYERS[PACKAGE]
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if prefix == PACKAGE:
            continue
        if module == prefix or module.startswith(prefix + ".") or (
            prefix.endswith("_safety") and module.startswith(prefix)
        ):
            return LAYERS[prefix]
    return None


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    # ``from memoryport.x import y`` may name a submodule y; both are recorded.
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def imports_of(root: Path, path: Path, known: set[str]) -> Iterator[Edge]:
    """Every import of a known memoryport module in ``path``."""
    source = module_name(root, path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = _resolve(source, path.name == "__init__.py", node)
        else:
            continue
        for name in names:
            if name in known and name != source:
                yield Edge(source, name, node.lineno)


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file for every ``.py`` under ``root/memoryport``."""
    return {module_name(root, p): p for p in sorted((root / PACKAGE).rglob("*.py"))}


def import_graph(root: Path) -> list[Edge]:
    """All memoryport-internal import edges under ``root``."""
    files = module_files(root)
    known = set(files)
    return [edge for path in files.values() for edge in imports_of(root, path, known)]


def _is_ancestor(a: str, b: str) -> bool:
    return b.startswith(a + ".")


def layering_violations(root: Path) -> list[str]:
    """Every import that breaks the matrix, as readable lines."""
    problems = []
    for name in module_files(root):
        if layer_of(name) is None:
            problems.append(f"{name}: no layer; add it to LAYERS in tests/test_layering.py")
    for edge in import_graph(root):
        if _is_ancestor(edge.target, edge.source):
            continue  # a package's own __init__ (its public names)
        src_layer, dst_layer = layer_of(edge.source), layer_of(edge.target)
        if src_layer is None or dst_layer is None or src_layer == dst_layer:
            continue
        if dst_layer not in ALLOWED[src_layer]:
            problems.append(
                f"{edge.source}:{edge.line} imports {edge.target} "
                f"({src_layer} -> {dst_layer} is not allowed)"
            )
    return problems


def import_cycles(root: Path) -> list[list[str]]:
    """Cycles in the module import graph (a package's own ``__init__`` re-exports aside)."""
    graph: dict[str, set[str]] = {}
    for edge in import_graph(root):
        if _is_ancestor(edge.target, edge.source) or _is_ancestor(edge.source, edge.target):
            continue
        graph.setdefault(edge.source, set()).add(edge.target)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def size_violations(root: Path) -> list[str]:
    """Modules over MAX_MODULE_LINES and functions over MAX_FUNCTION_LINES."""
    problems = []
    for name, path in module_files(root).items():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            problems.append(f"{name}: {lines} lines (budget {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno
                if length > MAX_FUNCTION_LINES:
                    problems.append(
                        f"{name}.{node.name} (line {node.lineno}): {length} lines "
                        f"(budget {MAX_FUNCTION_LINES})"
                    )
    return problems


def test_every_import_follows_the_layer_matrix() -> None:
    assert layering_violations(SRC) == []


def test_the_import_graph_has_no_cycles() -> None:
    assert import_cycles(SRC) == []


def test_modules_and_functions_stay_within_the_size_budget() -> None:
    assert size_violations(SRC) == []


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (  # a shell reaching into storage
            {"cli/__init__.py": "", "cli/bad.py": "from memoryport.storage.x import y\n",
             "storage/__init__.py": "", "storage/x.py": "y = 1\n"},
            "memoryport.cli.bad:1 imports memoryport.storage.x (shell -> storage",
        ),
        (  # storage importing upward, inside a function
            {"storage/__init__.py": "", "manager/__init__.py": "",
             "storage/x.py": "def f():\n    import memoryport.manager\n"},
            "memoryport.storage.x:2 imports memoryport.manager (storage -> manager",
        ),
        (  # the manager naming a concrete provider, by relative import
            {"manager/__init__.py": "", "manager/_m.py": "from ..providers import curated\n",
             "providers/__init__.py": "", "providers/curated.py": ""},
            "memoryport.manager._m:1 imports memoryport.providers",
        ),
        (  # a module outside every layer
            {"newthing.py": ""},
            "memoryport.newthing: no layer",
        ),
    ],
)
def test_a_planted_reach_in_is_caught(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    root = _plant(tmp_path, {"__init__.py": "", **files})
    problems = layering_violations(root)
    assert any(expected in line for line in problems), problems


def test_a_planted_cycle_and_oversize_function_are_caught(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES + 1))
    root = _plant(tmp_path, {
        "__init__.py": "",
        "agent/__init__.py": "",
        "agent/loop.py": "def run():\n    from memoryport.agent import delegate\n",
        "agent/delegate.py": "from memoryport.agent.loop import run\n",
        "big.py": "def long():\n" + body,
    })
    assert import_cycles(root) == [
        ["memoryport.agent.delegate", "memoryport.agent.loop", "memoryport.agent.delegate"]
    ]
    assert any("memoryport.big.long" in line for line in size_violations(root))
