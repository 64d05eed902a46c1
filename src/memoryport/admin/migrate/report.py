"""The report every migration and import prints: one row per item, whatever happened to it.

A row says what was found (``kind``, ``source``), where it went (``target``) and what
happened (``action``): ``add``, ``write``, ``overwrite``, ``rename``, ``duplicate``,
``skip``, ``conflict``, ``refused``, ``archive``, ``import``, ``unchanged``, ``update``.
Nothing found is left out of the report: refused and archived items are rows too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Report", "Row"]


@dataclass(frozen=True)
class Row:
    """One item of a migration: what, from where, to where, what happened and why."""

    kind: str
    source: str
    target: str
    action: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return asdict(self)


@dataclass
class Report:
    """Everything a migration found and did (or, in a preview, would do).

    ``applied`` is False for a preview or a dry run; ``warnings`` are printed before the
    table (OpenClaw still running, an unreadable file, ...); ``paths`` names the backup
    and archive directories; ``counts`` holds totals such as sessions and messages.
    """

    name: str
    source: str
    home: str
    applied: bool = False
    dry_run: bool = False
    rows: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, source: str, target: str, action: str, detail: str = "") -> Row:
        """Append one row; returns it."""
        row = Row(kind, source, target, action, detail)
        self.rows.append(row)
        return row

    def actions(self) -> dict[str, int]:
        """How many rows per action."""
        return dict(sorted(Counter(row.action for row in self.rows).items()))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``--json`` prints: rows under ``items`` plus ``count``."""
        return {
            "migration": self.name,
            "source": self.source,
            "home": self.home,
            "applied": self.applied,
            "dry_run": self.dry_run,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "paths": dict(self.paths),
            "counts": dict(self.counts),
            "actions": self.actions(),
            "items": [row.to_dict() for row in self.rows],
            "count": len(self.rows),
        }
