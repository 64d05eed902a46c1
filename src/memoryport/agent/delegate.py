"""``delegate_task``: run a child agent on a subtask in its own session.

The schema is exposed by the agent, not by a provider (``delegate_task`` is a reserved
tool name no provider may register). The child gets a fresh context and a session of its
own, opened with ``Memory.open_child()``: its ``parent_session_id`` is the parent's active
session and its source is ``subagent`` (hidden from search by default). Like Hermes'
subagents, the child may search sessions but may not write curated memory or delegate
further. When it finishes, the parent reports the result to its providers with
``Memory.delegated(task, result, child_session_id=...)`` (``on_delegation``).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from memoryport.api import Memory
from memoryport.errors import MemoryportError

__all__ = ["CHILD_BLOCKED_TOOLS", "DELEGATE_TASK_SCHEMA", "Delegator", "delegate_task"]

log = logging.getLogger("memoryport.agent.delegate")

DELEGATE_TASK_SCHEMA: dict[str, Any] = {
    "name": "delegate_task",
    "description": (
        "Hand a self-contained subtask to a subagent that starts with a fresh, empty "
        "context and returns its final answer. Use it for focused research or drafting "
        "that would clutter this conversation. Give the subagent everything it needs in "
        "'task' and 'context'; it cannot see this conversation."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "What the subagent must do."},
            "context": {
                "type": "string",
                "description": "Background the subagent needs (facts, constraints, files).",
            },
        },
        "required": ["task"],
    },
}
"""The OpenAI function schema of ``delegate_task``."""

CHILD_BLOCKED_TOOLS = frozenset({"memory", "delegate_task"})
"""Tools a subagent never gets: curated-memory writes and further delegation."""


class _Answer(Protocol):
    @property
    def text(self) -> str: ...


class _Child(Protocol):
    def run_turn(self, text: str) -> _Answer: ...

    def close(self) -> None: ...


class Delegator(Protocol):
    """What ``delegate_task`` needs of the parent agent (``memoryport.agent.Agent`` fits).

    A structural type, so this module does not import the agent loop that imports it.
    """

    memory: Memory

    def spawn_child(self, memory: Memory) -> _Child:
        """A subagent over ``memory`` whose turns answer the subtask."""
        ...


def _child_prompt(task: str, context: str) -> str:
    if not context:
        return task
    return f"{task}\n\nContext:\n{context}"


def delegate_task(parent: Delegator, args: Any) -> str:
    """Run the subtask described by ``args`` in a child agent; return a JSON tool result."""
    if not isinstance(args, dict) or not str(args.get("task") or "").strip():
        return json.dumps({"success": False, "error": "delegate_task needs a non-empty 'task'"})
    task = str(args["task"]).strip()
    context = str(args.get("context") or "").strip()
    try:
        child_memory = parent.memory.open_child(source="subagent", title=task[:80])
    except MemoryportError as exc:
        return json.dumps({"success": False, "error": f"could not start a subagent: {exc}"})
    child_session_id = child_memory.session_id
    child = parent.spawn_child(child_memory)
    try:
        outcome = child.run_turn(_child_prompt(task, context))
    except Exception as exc:  # the tool edge: a failed subagent is a tool error, not a crash
        log.warning("subagent failed: %s", exc, exc_info=True)
        return json.dumps({"success": False, "error": f"subagent failed: {exc}",
                           "child_session_id": child_session_id})
    finally:
        child.close()
    parent.memory.delegated(task, outcome.text, child_session_id=child_session_id)
    return json.dumps(
        {"success": True, "result": outcome.text, "child_session_id": child_session_id},
        ensure_ascii=False,
    )
