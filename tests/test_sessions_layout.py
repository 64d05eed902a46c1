"""The session store's layout (issue 11 item 6): by backend, one home per name, one runner.

Static checks over ``src/memoryport/storage/sessions`` with ``ast``; they keep the
layout from drifting back to flat twins, re-exports and copied helpers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SESSIONS = Path(__file__).resolve().parents[1] / "src" / "memoryport" / "storage" / "sessions"
BACKENDS = ("sqlite", "postgres")
BACKEND_MODULES = {
    "__init__.py", "store.py", "dialect.py", "search.py", "rank.py", "bulk.py", "connect.py",
}
NEUTRAL = {"base", "records", "rows", "query", "temporal", "portable", "render", "migrate"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _modules() -> list[Path]:
    return sorted(SESSIONS.rglob("*.py"))


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _exported(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            assert isinstance(node.value, ast.List | ast.Tuple)
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return []


def test_backends_are_packages_with_the_same_modules() -> None:
    flat = {p.stem for p in SESSIONS.glob("*.py")} - {"__init__"}
    assert flat == NEUTRAL
    for backend in BACKENDS:
        names = {p.name for p in (SESSIONS / backend).glob("*.py")}
        assert names == BACKEND_MODULES | {"migrations.py"}, backend


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SESSIONS)))
def test_every_exported_name_is_defined_where_it_is_exported(path: Path) -> None:
    """One import path per name: no module re-exports another's names, except that a
    backend package exports its store class."""
    tree = _tree(path)
    borrowed = set(_exported(tree)) - _defined(tree)
    if path.name == "__init__.py" and path.parent.name in BACKENDS:
        assert len(borrowed) == 1 and next(iter(borrowed)).endswith("SessionStore"), borrowed
    else:
        assert not borrowed, f"{path.name} re-exports {sorted(borrowed)}"


def _imports_psycopg(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            guarded = [n for n in node.body if isinstance(n, ast.Import | ast.ImportFrom)]
            handles_import_error = any(
                isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in node.handlers
            )
            if guarded and handles_import_error:
                return True
    return False


def test_the_driver_guard_is_in_one_place() -> None:
    guarded = [p.relative_to(SESSIONS) for p in _modules() if _imports_psycopg(_tree(p))]
    assert guarded == [Path("postgres/__init__.py")]


def _homes(name: str) -> list[Path]:
    return [p.relative_to(SESSIONS) for p in _modules() if name in _defined(_tree(p))]


@pytest.mark.parametrize(
    "name",
    ["hit_from_row", "message_from_row", "session_from_row", "HIT_COLUMNS", "walk_to_root"],
)
def test_shared_row_logic_has_one_home(name: str) -> None:
    """Defined once in a backend-neutral module; a backend's dialect may only wrap it
    (same name, its text decoding added)."""
    homes = _homes(name)
    assert len([h for h in homes if len(h.parts) == 1]) == 1, homes
    assert all(h.name == "dialect.py" for h in homes if len(h.parts) > 1), homes


@pytest.mark.parametrize("name", ["_hit", "_HIT_COLUMNS"])
def test_no_backend_keeps_a_private_twin(name: str) -> None:
    assert _homes(name) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_migrate_through_the_shared_runner(backend: str) -> None:
    tree = _tree(SESSIONS / backend / "migrations.py")
    migrate = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "migrate")
    calls = [
        n.func
        for n in ast.walk(migrate)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    ]
    assert any(
        isinstance(f.value, ast.Name) and f.value.id == "runner" and f.attr == "migrate"
        for f in calls
    )
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)]
    assert not any(
        isinstance(loop.target, ast.Tuple)
        and isinstance(loop.iter, ast.Name)
        and loop.iter.id == "MIGRATIONS"
        for loop in loops
    ), f"{backend} runs its migrations itself"


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_keep_only_engine_hooks(backend: str) -> None:
    """Scoping, input checks and argument preludes live once in ``SessionStore``: a
    backend implements the abstract hooks and never overrides a concrete public method
    (before, each backend restated ``get_session``'s user check, ``append_messages``'
    coercion, ``forget_user``'s refusal, ...)."""
    import importlib

    from memoryport.storage.sessions.base import SessionStore

    package = importlib.import_module(f"memoryport.storage.sessions.{backend}")
    store_class = next(v for k, v in vars(package).items() if k.endswith("SessionStore"))
    concrete = {
        name
        for name, value in vars(SessionStore).items()
        if callable(value) and not name.startswith("_")
    } - SessionStore.__abstractmethods__
    overridden = concrete & set(vars(store_class))
    assert not overridden, f"{store_class.__name__} restates {sorted(overridden)}"
    for name in ("get_session", "append_messages", "update_session", "forget_user"):
        assert name in concrete
