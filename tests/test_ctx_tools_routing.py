"""Routing of tools a plugin registers through ``ctx.register_tool``."""

from __future__ import annotations

from typing import Any

import pytest

from memoryport.errors import ProviderError
from memoryport.plugins.ctx_tools import RegisteredTool, attach_tools


class _SchemaOnly:
    """A provider-shaped object that lists a tool of its own but has no handler at all."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "orphan", "description": "listed, never handled", "parameters": {}}]


def _echo(args: dict[str, Any], **_: Any) -> str:
    return f"echo:{args.get('text', '')}"


def test_registered_tool_is_routed_and_an_unhandled_own_tool_is_a_clear_provider_error() -> None:
    tool = RegisteredTool(
        name="echo",
        schema={"name": "echo", "description": "echo", "parameters": {}},
        handler=_echo,
    )
    provider = attach_tools(_SchemaOnly(), [tool])
    names = [s["name"] for s in provider.get_tool_schemas()]
    assert names == ["orphan", "echo"]
    assert "echo:hi" in provider.handle_tool_call("echo", {"text": "hi"})
    with pytest.raises(ProviderError, match="nothing handles it") as caught:
        provider.handle_tool_call("orphan", {})
    assert caught.value.hook == "handle_tool_call"
