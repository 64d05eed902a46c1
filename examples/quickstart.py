"""The main job: a worked example of memoryport through its public API.

It opens a memory home (./.memoryport-demo, or MEMORYPORT_HOME), registers an external
provider beside the built-in ones, saves a curated fact with the `memory` tool, runs two
turns, and prints what an agent would send to its model: the system prompt with the frozen
curated memory, and the current user message with the fenced recall. Then it searches the
stored conversation the way the `session_search` tool does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import memoryport


class TeamWikiProvider(memoryport.MemoryProvider):
    """A tiny external provider: recalls team facts whose words appear in the question."""

    FACTS = (
        "The staging database is rebuilt every Sunday at 02:00 UTC.",
        "Deploys go through the `release` GitHub workflow; production needs two approvals.",
        "The team's on-call rotation changes on Mondays.",
    )

    @property
    def name(self) -> str:
        return "teamwiki"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        words = {w.strip("?.,!").lower() for w in query.split() if len(w) > 3}
        hits = [f for f in self.FACTS if words & {w.strip("`.,;").lower() for w in f.split()}]
        return "\n".join(f"- {fact}" for fact in hits)


def rule(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 66 - len(title)))


def main() -> None:
    home = Path(os.environ.get("MEMORYPORT_HOME", ".memoryport-demo")).resolve()
    with memoryport.open(home, providers=[TeamWikiProvider()], platform="cli") as memory:
        memory.start_session(source="cli", title="quickstart")
        saved = memory.call_tool(
            "memory", {"action": "add", "target": "user", "content": "User prefers Helix."}
        )
        rule("memory tool result")
        print(saved)

        turn = memory.begin_turn("When is the staging database rebuilt, and how do deploys work?")
        rule("API user message (fenced recall appended; history keeps the clean text)")
        print(turn.api_user_message())
        memory.end_turn(turn, "Staging is rebuilt Sundays at 02:00 UTC; deploys use `release`.")

        memory.switch_session(reason="new")
        rule("system prompt of the next session (frozen curated memory)")
        print(memory.system_prompt)

        rule("session_search: discover 'staging'")
        found = json.loads(memory.call_tool("session_search", {"query": "staging"}))
        for hit in found.get("results", []):
            print(f"- {hit.get('session_id')} [{hit.get('title')}] {hit.get('snippet')}")

        rule("provider health")
        for name, view in memory.health().items():
            prefetch = view["hooks"].get("prefetch", {})
            print(f"- {name}: breaker={view['breaker']['state']} prefetch={prefetch}")
    cli = Path(sys.executable).parent / "memoryport"
    print(f"\nMemory home: {home}\nInspect it with: {cli} --home {home} status")


if __name__ == "__main__":
    main()
