"""Rendering of curated memory for the system prompt: usage headers, blocks and guidance.

Pure functions over entry lists; :class:`memoryport.providers.curated.store.CuratedMemory`
calls them once per session to build the frozen snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryport.storage.markdown import ENTRY_DELIMITER, render_entries

__all__ = ["GUIDANCE", "RULE", "Usage", "compose_prompt", "render_block"]

RULE = "═" * 46
"""The horizontal rule above and below each block header."""

GUIDANCE = """\
## Persistent memory
You have a small persistent memory that carries across sessions. The blocks below are a \
snapshot taken when this session started: writes are saved at once and show in the tool \
result, but this snapshot changes only in the next session.
Save durable facts with the `memory` tool (action add, replace or remove; target "memory" \
for your notes on the environment, projects, tools and lessons learned; target "user" for \
who the user is: preferences, communication style, role, habits).
- Prioritise user preferences and corrections the user had to repeat.
- Write declarative facts, not instructions to yourself: "User prefers concise responses", \
not "Always respond concisely"; "Project uses pytest with xdist", not "Run tests with pytest -n 4".
- Do not save task progress, PR or issue numbers, commit SHAs, logs of completed work, TODO \
state, or anything likely to be stale within 7 days. Use session_search to recall past \
conversations; long procedures do not belong here either.
- When a target is full, consolidate (replace or remove entries) before adding."""
"""The text placed before the memory blocks, telling the model what belongs in memory."""


@dataclass(frozen=True)
class Usage:
    """How much of a target's character budget ``render_entries(entries)`` uses."""

    used: int
    limit: int

    @property
    def percent(self) -> int:
        """Whole percent of the budget used, capped at 100 (0 when the limit is 0)."""
        if self.limit <= 0:
            return 100 if self.used else 0
        return min(100, int(self.used * 100 / self.limit))

    @property
    def over_budget(self) -> bool:
        """True when the file holds more than its budget (e.g. after the limit was lowered)."""
        return self.used > self.limit

    def __str__(self) -> str:
        return f"{self.percent}% - {self.used:,}/{self.limit:,} chars"

    def to_dict(self) -> dict[str, int]:
        """``{"used", "limit", "percent"}`` for JSON output."""
        return {"used": self.used, "limit": self.limit, "percent": self.percent}

    @classmethod
    def of(cls, entries: Sequence[str], limit: int) -> Usage:
        """The usage of ``entries`` against ``limit``."""
        used = sum(map(len, entries)) + len(ENTRY_DELIMITER) * max(0, len(entries) - 1)
        return cls(used=used, limit=limit)


def render_block(title: str, entries: Sequence[str], usage: Usage) -> str:
    """One block: rule, ``TITLE [P% - used/limit chars]``, rule, the entries.

    Returns ``""`` for no entries. Content far over budget (more than ``max(2*limit, 4000)``
    chars) is cut to its first 70% and last 20% around a note asking for consolidation, so a
    hand-edited giant file cannot flood the prompt.
    """
    if not entries:
        return ""
    header = f"{title} [{usage}]" + (" ⚠ OVER BUDGET" if usage.over_budget else "")
    body = render_entries(entries)
    cap = max(2 * usage.limit, 4000)
    if len(body) > cap:
        head, tail = body[: int(cap * 0.7)], body[len(body) - int(cap * 0.2) :]
        dropped = len(body) - len(head) - len(tail)
        note = (
            f"[... {dropped:,} chars truncated — memory over budget ({usage.used:,}/"
            f"{usage.limit:,}); consolidate via memory(action=remove/replace) ...]"
        )
        body = f"{head}\n{note}\n{tail}"
    return f"{RULE}\n{header}\n{RULE}\n{body}"


def compose_prompt(blocks: Sequence[str], notices: Sequence[str] = ()) -> str:
    """The full system-prompt text: guidance, then each non-empty block, then notices."""
    parts = [GUIDANCE, *(block for block in blocks if block), *notices]
    return "\n\n".join(parts)
