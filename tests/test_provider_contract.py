"""The MemoryProvider contract: defaults, InitContext, validate_config, hook adaptation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryport.config.schema import validate_config
from memoryport.manager._hooks import inspect_provider
from memoryport.provider import MemoryProvider
from memoryport.types import InitContext


class Minimal(MemoryProvider):
    @property
    def name(self) -> str:
        return "minimal"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []


def test_only_four_members_are_abstract() -> None:
    assert MemoryProvider.__abstractmethods__ == {
        "name",
        "is_available",
        "initialize",
        "get_tool_schemas",
    }


def test_defaults_are_documented_no_ops() -> None:
    provider = Minimal()
    assert provider.system_prompt_block() == ""
    assert provider.prefetch("q") == ""
    assert provider.on_pre_compress([]) == ""
    assert provider.get_config_schema() == []
    assert "no tool" in json.loads(provider.handle_tool_call("x", {}))["error"]
    for hook in ("queue_prefetch", "sync_turn", "on_turn_start", "on_session_end",
                 "on_session_switch", "on_memory_write", "on_delegation", "shutdown"):
        assert getattr(MemoryProvider, hook).__doc__, hook
    profile = inspect_provider(provider, "minimal")
    assert not profile.overrides("prefetch") and profile.overrides("initialize")


def test_init_context_kwargs_and_hermes_alias(tmp_path: Path) -> None:
    context = InitContext(home=tmp_path, platform="telegram", user_id="u1", chat_id="c9")
    kwargs = context.to_kwargs()
    assert kwargs["home"] == kwargs["hermes_home"] == str(tmp_path)
    assert kwargs["platform"] == "telegram" and kwargs["agent_context"] == "primary"
    assert kwargs["user_id"] == "u1" and kwargs["chat_id"] == "c9"
    assert "thread_id" not in kwargs  # unset fields are left out, as Hermes does
    back = InitContext.from_kwargs(hermes_home=str(tmp_path), user_id="u1", custom=1)
    assert back.home == tmp_path and back.user_id == "u1" and back.extra == {"custom": 1}


def test_validate_config_reports_every_problem_at_once() -> None:
    schema = [
        {"key": "api_key", "secret": True, "required": True, "env_var": "X_API_KEY"},
        {"key": "region", "choices": ["us-east", "eu-west"], "default": "us-east"},
        {"key": "limit", "type": "integer", "minimum": 1, "maximum": 50},
        {"key": "verbose", "type": "boolean"},
        {"description": "no key"},
    ]
    problems = validate_config(
        schema, {"region": "mars", "limit": 99, "verbose": "yes", "colour": "red"}
    )
    text = "\n".join(problems)
    assert "api_key: required but missing (set it, or export X_API_KEY)" in text
    assert "region: 'mars' is not one of 'us-east', 'eu-west'" in text
    assert "limit: 99 is above the maximum 50" in text
    assert "verbose: 'yes' should be boolean" in text
    assert "colour: unknown setting" in text
    assert "schema field #4 has no 'key'" in text
    assert len(problems) == 6
    assert validate_config(schema[:4], {"api_key": "k", "limit": 5, "verbose": True}) == []


def test_signature_variants_are_adapted() -> None:
    seen: list[tuple[Any, ...]] = []

    class Variants:
        name = "variants"

        def on_memory_write(self, action, target, content):  # type: ignore[no-untyped-def]
            seen.append(("legacy", action, target, content))

        def on_delegation(self, task, result, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(("delegation", task, result, kwargs))

        def sync_turn(self, user, assistant, session_id=""):  # type: ignore[no-untyped-def]
            seen.append(("sync", user, assistant, session_id))

    profile = inspect_provider(Variants(), "variants")
    profile.hooks["on_memory_write"].call("add", "user", "tea", {"session_id": "s"})
    profile.hooks["on_delegation"].call("t", "r", child_session_id="c", extra=1)
    profile.hooks["sync_turn"].call("u", "a", session_id="s1", messages=[{"role": "user"}])
    assert seen == [
        ("legacy", "add", "user", "tea"),
        ("delegation", "t", "r", {"child_session_id": "c", "extra": 1}),
        ("sync", "u", "a", "s1"),
    ]
    assert not profile.hooks["prefetch"].overridden  # absent on a duck-typed provider


# --------------------------------------------------------------------------- seed-01 shape


class SeedShaped:
    """The proposal's shape (duck-typed, no base class)."""

    name = "seed"

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        self.seen.append(("initialize", session_key, config))

    def enrich_turn(self, user_message: str, messages: list[dict[str, Any]]) -> str | None:
        self.seen.append(("enrich_turn", user_message, messages))
        return None

    def on_memory_write(
        self, action: str, target: str, content: str | None, old_text: str | None = None
    ) -> None:
        self.seen.append(("on_memory_write", action, target, content, old_text))

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        self.seen.append(("on_turn_complete", user_message, assistant_response))

    def on_compress(self, messages: list[dict[str, Any]], compression_count: int) -> None:
        self.seen.append(("on_compress", messages, compression_count))


def test_seed01_shape_is_recognised_and_mapped_once_at_registration() -> None:
    provider = SeedShaped()
    profile = inspect_provider(provider, "seed")
    assert profile.shape == "seed01"
    hooks = profile.hooks
    assert all(hooks[h].overridden for h in ("prefetch", "sync_turn", "on_pre_compress"))
    sections = {"seed": {"mode": "context"}}
    hooks["initialize"].call("s1", home="/h", provider_config=sections.get, context=object())
    hooks["prefetch"].call("q", session_id="s1", history=lambda: [{"role": "user", "content": "x"}])
    hooks["sync_turn"].call("u", "a", session_id="s1", messages=[])
    hooks["on_memory_write"].call("replace", "user", "new", {"old_text": "old", "source": "t"})
    hooks["on_pre_compress"].call([{"role": "user", "content": [{"text": "hi"}]}],
                                  compression_count=3)
    assert provider.seen == [
        ("initialize", "s1", {"mode": "context"}),
        ("enrich_turn", "q", [{"role": "user", "content": "x"}]),
        ("on_turn_complete", "u", "a"),
        ("on_memory_write", "replace", "user", "new", "old"),
        ("on_compress", [{"role": "user", "content": "hi"}], 3),
    ]


def test_hermes_hooks_win_over_seed_names_and_adapter_keywords_stay_hidden() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Mixed(Minimal):
        def prefetch(self, query: str, **kwargs: Any) -> str:
            seen.append(("prefetch", kwargs))
            return ""

        def enrich_turn(self, user_message: str, messages: list[Any]) -> str:
            raise AssertionError("prefetch is implemented: enrich_turn is not mapped")

        def on_pre_compress(self, messages: list[Any], **kwargs: Any) -> str:
            seen.append(("on_pre_compress", kwargs))
            return ""

    profile = inspect_provider(Mixed(), "mixed")
    profile.hooks["prefetch"].call("q", session_id="s", history=list)
    profile.hooks["on_pre_compress"].call([], compression_count=1)
    profile.hooks["initialize"].call("s", home="/h", provider_config={"a": 1})
    assert seen == [("prefetch", {"session_id": "s"}), ("on_pre_compress", {})]
    plain = Minimal()
    inspect_provider(plain, "minimal").hooks["initialize"].call("s", provider_config={"a": 1})
    assert plain.kwargs == {}
    assert inspect_provider(plain, "minimal").shape == "hermes"
