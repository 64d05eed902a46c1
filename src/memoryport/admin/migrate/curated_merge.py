"""Merging outside entries into curated memory (``MEMORY.md`` / ``USER.md``): the one path
every migration and every import into an existing home takes.

Each candidate entry is, in order: cleaned (valid UTF-8, stripped), checked to be storable
as one entry, scanned by the curated-memory safety scan (a finding refuses it: it is
listed in the report and kept in the archive, never silently dropped), compared with the
entries already there and those already planned (a near-duplicate, modulo case, spacing
and punctuation, is skipped, exactly as the ``memory`` tool would), and fitted into the
target's character budget (first fit, in the order given; what does not fit is archived
with a note on how to consolidate). The planned adds are then written through the
``memory`` tool as one all-or-nothing batch per target, so the drift guard, the history
(with the migration's ``source``, e.g. ``migration:openclaw``) and every provider's
``on_memory_write`` apply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memoryport import safety
from memoryport.admin.curated import call_memory_tool, open_curated
from memoryport.admin.migrate.report import Report
from memoryport.errors import MemoryStoreError
from memoryport.providers.curated.editor import Editor
from memoryport.providers.curated.prompt import Usage
from memoryport.storage.markdown import (
    ENTRY_DELIMITER,
    entry_problem,
    parse_entries,
    render_entries,
)
from memoryport.types import valid_text

__all__ = [
    "Candidate",
    "TargetPlan",
    "apply_plans",
    "markdown_entries",
    "plan_curated",
    "report_plans",
    "write_archive",
]

_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


@dataclass(frozen=True)
class Candidate:
    """One entry to merge and the file it came from (for the report)."""

    text: str
    origin: str


@dataclass
class TargetPlan:
    """What merging into one target does: entries to add and every entry left out, why."""

    target: str
    filename: str
    path: str
    limit: int
    enabled: bool
    before: list[str]
    add: list[Candidate] = field(default_factory=list)
    duplicates: list[Candidate] = field(default_factory=list)
    refused: list[tuple[Candidate, str]] = field(default_factory=list)
    overflow: list[Candidate] = field(default_factory=list)

    @property
    def used_after(self) -> int:
        """Characters the file holds once the adds are written."""
        return Usage.of([*self.before, *(c.text for c in self.add)], self.limit).used


def _blocks(text: str) -> list[str]:
    """Free-form Markdown as entries: each list item (with its continuation lines) and
    each paragraph is one entry; headings and rules are structure, not entries."""
    entries: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _HEADING.match(line) or set(stripped) <= {"-", "*", "_", "="}:
            current = None
            continue
        if _BULLET.match(line):
            current = [_BULLET.sub("", line, count=1).strip()]
            entries.append(current)
        elif current is None:
            current = [stripped]
            entries.append(current)
        else:
            current.append(stripped)
    return [" ".join(parts) if len(parts) > 1 else parts[0] for parts in entries]


def markdown_entries(text: str, *, prefix: str = "") -> list[str]:
    """Entries of a memory file: ``§``-delimited files split on the separator line, any
    other Markdown into list items and paragraphs. ``prefix`` (e.g. a daily file's date)
    is put before each entry. Duplicates inside the file are dropped (first kept)."""
    clean = valid_text(text).replace("\r\n", "\n")
    found = parse_entries(clean) if ENTRY_DELIMITER in clean else _blocks(clean)
    return list(dict.fromkeys(f"{prefix}{entry}".strip() for entry in found if entry.strip()))


def _plan_one(
    home: Path, plan: TargetPlan, candidates: Sequence[Candidate], editor: Editor
) -> None:
    for candidate in candidates:
        text = valid_text(candidate.text).strip()
        item = Candidate(text, candidate.origin)
        problem = entry_problem(text)
        if problem is not None:
            plan.refused.append((item, f"cannot be stored as one entry: {problem}"))
            continue
        if not plan.enabled:
            plan.overflow.append(item)
            continue
        findings = safety.scan(text, home=home)
        if findings:
            ids = ", ".join(f.id for f in findings)
            plan.refused.append((item, f"refused by the safety scan ({ids})"))
            continue
        if editor.duplicate_of(text) is not None:
            plan.duplicates.append(item)
            continue
        if Usage.of([*editor.entries, text], plan.limit).used > plan.limit:
            plan.overflow.append(item)
            continue
        editor.add(text)
        plan.add.append(item)


def plan_curated(
    home: Path, candidates: Mapping[str, Sequence[Candidate]], *, user_id: str = ""
) -> list[TargetPlan]:
    """Plan merging ``candidates`` (``{"memory"|"user": [...]}``) into ``home``'s curated
    memory, reading the current files and budgets (``config.yaml``); writes nothing."""
    store = open_curated(home, user_id)
    plans: list[TargetPlan] = []
    for target, items in candidates.items():
        if not items:
            continue
        spec = store.spec(target)
        before = store.entries(target)
        plan = TargetPlan(
            target, spec.filename, str(store.path(target)), spec.char_limit, spec.enabled,
            before,
        )
        _plan_one(home, plan, items, Editor(spec, before, list))
        plans.append(plan)
    return plans


def report_plans(report: Report, plans: Sequence[TargetPlan], archive: str) -> None:
    """One report row per candidate of every plan."""
    for plan in plans:
        kind = f"curated {plan.target}"
        for c in plan.add:
            report.add(kind, c.origin, plan.filename, "add", _preview(c.text))
        for c in plan.duplicates:
            report.add(kind, c.origin, plan.filename, "duplicate", _preview(c.text))
        for c, why in plan.refused:
            report.add(kind, c.origin, f"{archive}/refused-{plan.filename}", "refused",
                       f"{why}: {_preview(c.text)}")  # fmt: skip
        why = "over budget" if plan.enabled else f"{plan.filename} is disabled in config.yaml"
        for c in plan.overflow:
            report.add(kind, c.origin, f"{archive}/overflow-{plan.filename}", "archive",
                       f"{why} ({plan.limit:,} chars): {_preview(c.text)}")  # fmt: skip


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


_CONSOLIDATE = """# Curated memory that did not fit

`overflow-MEMORY.md` / `overflow-USER.md` hold entries that did not fit the character
budget of the file (`memory.memory_char_limit` / `memory.user_char_limit` in
config.yaml); `refused-*.md` hold entries the safety scan refused (review them before
keeping any). Entries are separated by a line holding only `§`.

To consolidate: `memoryport memory list` shows what is stored now; merge related facts
into shorter ones with `memoryport memory edit --target memory` (or `--target user`),
remove stale ones with `memoryport memory remove`, then add what still matters with
`memoryport memory add`. Or raise the budget: `memoryport config set
memory.memory_char_limit 4000`.
"""


def write_archive(directory: Path, plans: Sequence[TargetPlan]) -> list[Path]:
    """Write the overflow and refused entries of ``plans`` under ``directory`` (with a
    README on consolidating); returns the files written (none when nothing was left out)."""
    written: list[Path] = []
    for plan in plans:
        for name, items in (
            (f"overflow-{plan.filename}", plan.overflow),
            (f"refused-{plan.filename}", [c for c, _ in plan.refused]),
        ):
            if items:
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / name
                path.write_text(render_entries([c.text for c in items]) + "\n", "utf-8")
                written.append(path)
    if written:
        (directory / "README.md").write_text(_CONSOLIDATE, "utf-8")
    return written


def apply_plans(home: Path, plans: Sequence[TargetPlan], source: str, *, user_id: str = "") -> int:
    """Write each plan's adds as one ``memory`` tool batch labelled ``source``; returns
    the entries added. ``MemoryStoreError`` when a batch is refused (nothing of that
    target is written)."""
    added = 0
    for plan in plans:
        if not plan.add:
            continue
        operations = [{"action": "add", "content": c.text} for c in plan.add]
        result = call_memory_tool(
            home, user_id, {"target": plan.target, "operations": operations}, source=source
        )
        if not result.get("success"):
            raise MemoryStoreError(
                f"could not write the migrated entries to {plan.filename}: "
                f"{result.get('error', result)}"
            )
        added += len(plan.add)
    return added
