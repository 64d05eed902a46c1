"""An example memory provider plugin: notes kept in a JSON file under the memoryport home.

Install it by copying this folder to ``<home>/plugins/notes/`` (see docs/plugins.md,
"Practise with the example plugin"), then ``memoryport setup notes``. It uses only the
standard library and memoryport's ``MemoryProvider`` base class, and passes the
conformance kit (``memoryport.testing.ProviderConformance``).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from memoryport.config.schema import ConfigField
from memoryport.provider import MemoryProvider

_ADD = {
    "name": "notes_add",
    "description": "Save a short note to remember across sessions.",
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The note."}},
        "required": ["text"],
    },
}
_SEARCH = {
    "name": "notes_search",
    "description": "Find saved notes containing every word of the query.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words to look for."}},
        "required": ["query"],
    },
}


class NotesProvider(MemoryProvider):
    """Notes in ``<home>/notes/notes.json``; recalled when a turn shares their words."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._max_notes = 200
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The provider's name (also ``memory.provider`` in config.yaml)."""
        return "notes"

    def is_available(self) -> bool:
        """No service, no key: always available."""
        return True

    def get_config_schema(self) -> list[ConfigField]:
        """What ``memoryport setup notes`` asks for."""
        return [
            {
                "key": "max_notes",
                "description": "Keep at most this many notes (oldest dropped first)",
                "type": "integer",
                "default": 200,
            }
        ]

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Find the storage file under the profile's home and read ``notes.max_notes``."""
        home = Path(kwargs.get("home") or kwargs["hermes_home"])
        self._path = home / "notes" / "notes.json"
        self._max_notes = _max_notes(home)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The two tools the model may call."""
        return [_ADD, _SEARCH]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run ``notes_add`` or ``notes_search``; errors come back as JSON too."""
        if self._path is None:
            return json.dumps({"error": "notes: not initialized"})
        if tool_name == "notes_add":
            text = str(args.get("text") or "").strip()
            if not text:
                return json.dumps({"error": "notes_add: 'text' must not be empty"})
            with self._lock:
                notes = [*self._read(), text][-self._max_notes :]
                self._write(notes)
            return json.dumps({"saved": text, "count": len(notes)})
        if tool_name == "notes_search":
            return json.dumps({"notes": self._search(str(args.get("query") or ""))})
        return json.dumps({"error": f"notes: unknown tool {tool_name!r}"})

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Notes sharing a word of at least four letters with the user's message."""
        words = {w.strip(".,?!").lower() for w in query.split() if len(w) >= 4}
        hits = [n for n in self._read() if words & {w.lower() for w in n.split()}]
        return "\n".join(f"- {n}" for n in hits[:5])

    def _search(self, query: str) -> list[str]:
        words = query.lower().split()
        return [n for n in self._read() if all(w in n.lower() for w in words)]

    def _read(self) -> list[str]:
        if self._path is None or not self._path.exists():
            return []
        data = json.loads(self._path.read_text(encoding="utf-8"))
        return [str(n) for n in data] if isinstance(data, list) else []

    def _write(self, notes: list[str]) -> None:
        assert self._path is not None
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(notes, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self._path)


def _max_notes(home: Path) -> int:
    """``notes.max_notes`` from ``<home>/config.yaml`` (written by ``memoryport setup``)."""
    from memoryport.config import load_config

    try:
        value = load_config(home).provider_section("notes").get("max_notes", 200)
        return max(1, int(value))
    except Exception:  # a broken config keeps the default; `memoryport doctor` reports it
        return 200


def register(ctx: Any) -> None:
    """Hermes-style entry: hand the provider to memoryport."""
    ctx.register_memory_provider(NotesProvider())
