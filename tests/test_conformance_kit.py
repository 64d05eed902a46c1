"""The conformance kit passes good providers and catches broken ones."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from manager_doubles import AsyncMixed, LegacyWriter, Recorder
from memoryport.testing import ProviderConformance, sample_arguments


class TestRecorderConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return Recorder("recorder")


class TestAsyncProviderConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return AsyncMixed()


class TestShapeMatchedLegacyProviderConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return LegacyWriter()


class NetworkOnAvailability(Recorder):
    def is_available(self) -> bool:
        socket.create_connection(("127.0.0.1", 9))
        return True


class RaisesBeforeInit(Recorder):
    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if not getattr(self, "ready", False):
            raise RuntimeError("not initialized")
        return ""

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self.ready = True


class NonJsonTool(Recorder):
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return "plain text, not JSON"


class ForeignToolNames(Recorder):
    def capabilities(self) -> dict[str, Any]:
        return {"tool_names": {"someone_elses_tool"}}


class BadSuppression(Recorder):
    def capabilities(self) -> dict[str, Any]:
        return {"suppresses_local_writes": {"users": "yes"}}


class BadSchema(Recorder):
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "has space", "parameters": {"type": "array"}}]


@pytest.mark.parametrize(
    ("provider", "check"),
    [
        (NetworkOnAvailability("net"), "test_is_available_does_no_network_io"),
        (RaisesBeforeInit("early"), "test_hooks_tolerate_calls_before_initialize"),
        (NonJsonTool("nonjson"), "test_handle_tool_call_returns_json"),
        (BadSchema("badschema"), "test_tool_schemas_are_valid_openai_functions"),
        (ForeignToolNames("foreign"), "test_capabilities_are_well_formed"),
        (BadSuppression("badsup"), "test_capabilities_are_well_formed"),
    ],
)
def test_kit_catches_broken_providers(
    provider: Any, check: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit = ProviderConformance()
    kwargs: dict[str, Any] = {}
    if check == "test_is_available_does_no_network_io":
        kwargs = {"provider": provider, "monkeypatch": monkeypatch}
    elif check == "test_hooks_tolerate_calls_before_initialize":
        kwargs = {"provider": provider}
    else:
        provider.initialize("s", **kit.init_kwargs(tmp_path))
        kwargs = {"ready": provider}
    with pytest.raises((AssertionError, RuntimeError, json.JSONDecodeError)):
        getattr(kit, check)(**kwargs)


def test_kit_without_factory_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="must define make_provider"):
        ProviderConformance().make_provider(tmp_path)


def test_sample_arguments_fill_required_fields() -> None:
    schema = {
        "name": "t",
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "remove"]},
                "limit": {"type": "integer"},
                "note": {"type": "string"},
            },
            "required": ["action", "limit"],
        },
    }
    assert sample_arguments(schema) == {"action": "add", "limit": 1}
