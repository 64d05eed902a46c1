"""``ConfigField``/``validate_config`` live in ``memoryport.config.schema``, not the contract."""

from __future__ import annotations

import ast
from pathlib import Path

import memoryport
import memoryport.config
from memoryport.config.schema import validate_config

CONFIG_DIR = Path(memoryport.config.__file__).parent


def test_public_validate_config_is_the_config_one() -> None:
    assert memoryport.validate_config is validate_config
    assert validate_config([{"key": "n", "type": "integer"}], {"n": "x"}) == [
        "n: 'x' should be integer"
    ]


def test_config_package_does_not_import_the_provider_contract() -> None:
    for path in sorted(CONFIG_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [node.module or ""] if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names] if isinstance(node, ast.Import) else []
            )
            assert "memoryport.provider" not in names, f"{path.name} imports the contract"


def test_schema_submodule_does_not_shadow_config_helpers() -> None:
    # importing the submodule sets an attribute on the package; it must not hide a helper
    assert memoryport.config.block_fields()["memory"]
