"""An example provider written to the seed-01 interface proposal, runnable unmodified.

The proposal (``../shared/seeds/01-*``, "Introduce MemoryProvider interface") describes a
``typing.Protocol``: ``name``, ``is_available()``, ``initialize(session_key, config)``,
``shutdown()``, ``capabilities()``, ``enrich_turn(user_message, messages)``,
``on_memory_write(action, target, content, old_text)``, ``on_turn_complete(user_message,
assistant_response)`` and ``on_compress(messages, compression_count)``. This class has
exactly that shape, plus two tools (``get_tool_schemas``/``handle_tool_call``, which
``capabilities()["tool_names"]`` narrows). It imports nothing from memoryport: memoryport
recognises the shape and adapts the calls (docs/writing-a-provider.md, "The seed-01 shape").

Install it by copying this folder to ``<home>/plugins/project_notes/`` and setting
``memory.provider: project_notes``; its ``config.yaml`` section (``project_notes:``) is the
``config`` passed to ``initialize``:

``recall_mode``
    ``hybrid`` (recall and tools, the default), ``context`` (recall only, no tools) or
    ``tools`` (tools only, no recall) -- Honcho's recall modes.
``owns_targets``
    ``none`` (default), ``user`` or ``all``: curated targets this provider keeps itself, so
    memoryport skips the local ``USER.md``/``MEMORY.md`` write for them (the writes still
    arrive here through ``on_memory_write``).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

_ADD = {
    "name": "project_note_add",
    "description": "Save a short note about the current project.",
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The note."}},
        "required": ["text"],
    },
}
_SEARCH = {
    "name": "project_note_search",
    "description": "Find project notes containing every word of the query.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words to look for."}},
        "required": ["query"],
    },
}
_TOOLS_BY_MODE = {
    "hybrid": {"project_note_add", "project_note_search"},
    "context": set(),
    "tools": {"project_note_add", "project_note_search"},
}
_OWNED = {"none": (), "user": ("user",), "all": ("memory", "user")}


class ProjectNotes:
    """Project notes in ``<data_dir>/notes.json`` (kept in memory without a ``data_dir``)."""

    def __init__(self, data_dir: Path | str | None = None) -> None:
        self._dir = Path(data_dir) if data_dir is not None else None
        self._lock = threading.Lock()
        self._notes: list[str] = []
        self._mode = "hybrid"
        self._owned: tuple[str, ...] = ()
        self.session_key = ""
        self.turns_synced = 0
        self.compressions: list[tuple[int, int]] = []

    # ------------------------------------------------------------------ lifecycle
    @property
    def name(self) -> str:
        """Config key and log label."""
        return "project_notes"

    def is_available(self) -> bool:
        """No service and no key needed."""
        return True

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        """Read the config section and the notes file."""
        self.session_key = session_key
        mode = str(config.get("recall_mode") or "hybrid")
        self._mode = mode if mode in _TOOLS_BY_MODE else "hybrid"
        self._owned = _OWNED.get(str(config.get("owns_targets") or "none"), ())
        self._notes = self._load()

    def shutdown(self) -> None:
        """Notes are written as they change: nothing to flush. Idempotent."""

    def capabilities(self) -> dict[str, Any]:
        """Tools by recall mode; the curated targets this provider keeps itself."""
        return {
            "tool_names": set(_TOOLS_BY_MODE[self._mode]),
            "suppresses_local_writes": {t: t in self._owned for t in ("memory", "user")},
        }

    # ------------------------------------------------------------------ read
    def enrich_turn(self, user_message: str, messages: list[dict[str, Any]]) -> str | None:
        """Notes sharing a word of at least four letters with the user's message."""
        if self._mode == "tools":
            return None
        words = {w.strip(".,?!").lower() for w in user_message.split() if len(w) >= 4}
        hits = [n for n in self._notes if words & {w.strip(".,").lower() for w in n.split()}]
        return "\n".join(f"- {n}" for n in hits[:5]) or None

    # ------------------------------------------------------------------ write
    def on_memory_write(
        self, action: str, target: str, content: str | None, old_text: str | None = None
    ) -> None:
        """Mirror curated writes into project notes (whether or not a local file changed)."""
        with self._lock:
            if old_text and action in ("replace", "remove"):
                self._notes = [n for n in self._notes if old_text not in n]
            if content and action in ("add", "replace"):
                self._notes.append(f"[{target}] {content}")
            self._save()

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Count synced turns (a real backend would send the exchange)."""
        self.turns_synced += 1

    def on_compress(self, messages: list[dict[str, Any]], compression_count: int) -> None:
        """Keep a line about what is being compressed away."""
        with self._lock:
            self.compressions.append((compression_count, len(messages)))
            self._notes.append(f"compression {compression_count}: {len(messages)} messages")
            self._save()

    # ------------------------------------------------------------------ tools
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Both tools; ``capabilities()["tool_names"]`` decides which the model sees."""
        return [dict(_ADD), dict(_SEARCH)]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a tool; errors come back as JSON too."""
        if tool_name == "project_note_add":
            text = str(args.get("text") or "").strip()
            if not text:
                return json.dumps({"success": False, "error": "'text' must not be empty"})
            with self._lock:
                self._notes.append(text)
                self._save()
            return json.dumps({"success": True, "saved": text})
        if tool_name == "project_note_search":
            words = str(args.get("query") or "").lower().split()
            found = [n for n in self._notes if all(w in n.lower() for w in words)]
            return json.dumps({"success": True, "notes": found, "count": len(found)})
        return json.dumps({"success": False, "error": f"unknown tool {tool_name!r}"})

    # ------------------------------------------------------------------ storage
    def _load(self) -> list[str]:
        if self._dir is None or not (self._dir / "notes.json").exists():
            return list(self._notes)
        data = json.loads((self._dir / "notes.json").read_text(encoding="utf-8"))
        return [str(n) for n in data] if isinstance(data, list) else []

    def _save(self) -> None:
        if self._dir is None:
            return
        self._dir.mkdir(parents=True, exist_ok=True)
        tmp = self._dir / "notes.json.tmp"
        tmp.write_text(json.dumps(self._notes, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self._dir / "notes.json")


def register(ctx: Any) -> None:
    """Hermes-style entry: the provider keeps its notes under the profile's home."""
    ctx.register_memory_provider(ProjectNotes(Path(ctx.home) / "project_notes"))
