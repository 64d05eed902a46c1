"""The proposal-shaped example (``examples/seed01_provider``): installed as a plugin it runs
unmodified, it passes the conformance kit, and a provider suppressing both curated targets
stops the reference agent's background memory review (issue 11, item 8)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_support import make_agent
from fake_openai import FakeOpenAI, Reply, mentions
from fixtures.helpers import isolate
from memoryport.agent.review import REVIEW_PROMPT
from memoryport.api import open_memory
from memoryport.config import MemorySettings
from memoryport.fence import OPEN_TAG
from memoryport.manager import ManagerSettings
from memoryport.plugins import load
from memoryport.testing import ProviderConformance
from test_seed01_provider import Seed

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "seed01_provider"


def install(home: Path, section: str) -> Path:
    """Copy the example to ``<home>/plugins/project_notes`` and activate it."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLE, home / "plugins" / "project_notes")
    (home / "config.yaml").write_text(
        f"memory:\n  provider: project_notes\n  nudge_interval: 0\nproject_notes:\n{section}",
        encoding="utf-8",
    )
    return home


def test_the_installed_example_runs_unmodified(tmp_path: Path, monkeypatch: Any) -> None:
    home = install(isolate(tmp_path, monkeypatch), "  recall_mode: context\n  owns_targets: user\n")
    memory = open_memory()
    try:
        memory.start_session()
        assert "project_notes" in memory.health()
        names = {schema["name"] for schema in memory.tool_schemas()}
        assert not {"project_note_add", "project_note_search"} & names  # context mode
        assert memory.suppressed_targets == frozenset({"user"})
        added = json.loads(memory.call_tool(
            "memory", {"action": "add", "target": "user", "content": "Ada prefers Postgres"}
        ))
        assert added["success"] is True and added["local_write"] is False
        memory.flush(10)
        assert not (home / "memories" / "USER.md").exists() or "Ada" not in (
            home / "memories" / "USER.md"
        ).read_text(encoding="utf-8")
        turn = memory.begin_turn("Which database does Ada prefer: Postgres?")
        payload = turn.api_user_message()
        assert isinstance(payload, str) and OPEN_TAG in payload
        assert "### project_notes memory" in payload and "[user] Ada prefers Postgres" in payload
        memory.end_turn(turn, "Postgres.")
        memory.compress(turn.messages, lambda messages, extra: "summary")
    finally:
        memory.close()
    notes = json.loads((home / "project_notes" / "notes.json").read_text(encoding="utf-8"))
    assert notes[0] == "[user] Ada prefers Postgres"
    assert notes[-1] == "compression 1: 2 messages"


def test_hybrid_mode_offers_both_tools(tmp_path: Path, monkeypatch: Any) -> None:
    install(isolate(tmp_path, monkeypatch), "  recall_mode: hybrid\n")
    memory = open_memory()
    try:
        memory.start_session()
        names = {schema["name"] for schema in memory.tool_schemas()}
        assert {"project_note_add", "project_note_search"} <= names
        saved = json.loads(memory.call_tool("project_note_add", {"text": "CI runs on Fridays"}))
        assert saved["success"] is True
        assert memory.suppressed_targets == frozenset()
    finally:
        memory.close()


class TestSeedExampleConforms(ProviderConformance):
    """The conformance kit, applied to the example as a plugin loads it."""

    def make_provider(self, home: Path) -> Any:
        shutil.copytree(EXAMPLE, home / "plugins" / "project_notes")
        result = load("project_notes", home)
        assert result.ok, result.traceback
        return result.provider

    def provider_config(self, home: Path) -> dict[str, Any]:
        return {"recall_mode": "hybrid", "owns_targets": "user"}


class TestRecordingSeedConforms(ProviderConformance):
    """A bare proposal-shaped provider (no base class) passes the kit too."""

    def make_provider(self, home: Path) -> Any:
        return Seed(caps={"tool_names": {"seed_a"}, "suppresses_local_writes": {"user": True}})


@pytest.mark.parametrize(
    ("suppresses", "reviews"),
    [(True, 0), ({"memory": True, "user": True}, 0), ({"user": True}, 1)],
)
def test_background_review_is_skipped_when_both_targets_are_suppressed(
    tmp_path: Path, suppresses: Any, reviews: int
) -> None:
    seed = Seed(caps={"suppresses_local_writes": suppresses})
    with FakeOpenAI(default=Reply(content="ok")) as server:
        agent = make_agent(
            tmp_path, server, [seed], memory=MemorySettings(nudge_interval=1),
            manager_settings=ManagerSettings(),
        )
        outcome = agent.run_turn("I like oolong tea.")
        assert agent.reviewer.wait(30)
        agent.close()
        asked = server.chat_requests(containing=REVIEW_PROMPT)
    assert outcome.text == "ok"
    assert agent.reviewer.completed == reviews
    assert len(asked) == reviews
    assert mentions("oolong")(server.chat_requests()[0])
