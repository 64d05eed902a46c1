"""Finding and reading an OpenClaw (or legacy Clawdbot / Moltbot) directory.

Discovery, when no ``--source`` is given: ``~/.openclaw``, then the legacy ``~/.clawdbot``
and ``~/.moltbot``; the first that exists is used. Inside it, workspace roots are
``workspace/``, ``workspace.default/``, ``workspace-main/`` and ``workspace-<agentId>/``
(in that order; a ``--source`` that is itself a workspace, holding ``MEMORY.md``,
``USER.md`` or ``memory/``, is used as one). Reading never writes.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryport.config import parse_env

__all__ = [
    "CONFIG_NAMES",
    "DEFAULT_ROOTS",
    "SECRET_ALLOWLIST",
    "OpenClawSource",
    "candidate_roots",
    "discover",
    "openclaw_running",
    "read_source",
]

DEFAULT_ROOTS = (".openclaw", ".clawdbot", ".moltbot")
"""Directories under the user's home searched in order when ``--source`` is not given."""

CONFIG_NAMES = ("openclaw.json", "clawdbot.json", "moltbot.json")
"""OpenClaw's settings file under each name it has had."""

SECRET_ALLOWLIST = frozenset({
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
    "GOOGLE_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
    "TOGETHER_API_KEY", "FIREWORKS_API_KEY", "PERPLEXITY_API_KEY", "HONCHO_API_KEY",
    "MEM0_API_KEY", "SUPERMEMORY_API_KEY", "HINDSIGHT_API_KEY", "RETAINDB_API_KEY",
    "MENTISDB_API_KEY", "OPENVIKING_API_KEY",
})  # fmt: skip
"""The only variables ``--migrate-secrets`` copies: model and memory provider API keys.
Bot tokens, OAuth material and gateway credentials stay with OpenClaw."""

_WORKSPACE_FILES = ("MEMORY.md", "USER.md", "memory")
_INSTRUCTION = re.compile(r"^[A-Za-z0-9_.-]+\.md$")
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_PROCESS_NAMES = ("openclaw", "clawdbot", "moltbot")


@dataclass
class OpenClawSource:
    """What an OpenClaw directory holds that a migration looks at."""

    root: Path
    workspaces: list[Path] = field(default_factory=list)
    config_path: Path | None = None
    config: dict[str, Any] | None = None
    config_error: str = ""
    env_file: dict[str, str] = field(default_factory=dict)
    skills: list[Path] = field(default_factory=list)
    other: list[Path] = field(default_factory=list)

    def memory_files(self, workspace: Path) -> list[tuple[Path, str]]:
        """``(file, entry prefix)``: ``MEMORY.md``, then daily ``memory/*.md`` newest
        first (each entry prefixed with its file's date)."""
        found = [(workspace / "MEMORY.md", "")] if (workspace / "MEMORY.md").is_file() else []
        daily = workspace / "memory"
        if daily.is_dir():
            for path in sorted(daily.glob("*.md"), reverse=True):
                match = _DATE.match(path.stem)
                found.append((path, f"[{match.group(1)}] " if match else ""))
        return found

    def instruction_files(self, workspace: Path) -> list[Path]:
        """Workspace Markdown other than memory (``SOUL.md``, ``AGENTS.md``, ...)."""
        return sorted(
            p for p in workspace.iterdir()
            if p.is_file() and _INSTRUCTION.match(p.name) and p.name not in ("MEMORY.md", "USER.md")
        )  # fmt: skip


def candidate_roots(user_home: Path | None = None) -> list[Path]:
    """Where discovery looks, in order."""
    base = user_home if user_home is not None else Path.home()
    return [base / name for name in DEFAULT_ROOTS]


def discover(source: Path | None, user_home: Path | None = None) -> tuple[Path | None, list[Path]]:
    """``(the OpenClaw directory or None, every place looked at)``."""
    looked = [source.expanduser()] if source is not None else candidate_roots(user_home)
    for path in looked:
        if path.is_dir():
            return path, looked
    return None, looked


def _workspaces(root: Path) -> list[Path]:
    fixed = [root / name for name in ("workspace", "workspace.default", "workspace-main")]
    agents = sorted(
        p for p in root.glob("workspace-*") if p.is_dir() and p.name != "workspace-main"
    )
    found = [p for p in [*fixed, *agents] if p.is_dir()]
    if not found and any((root / name).exists() for name in _WORKSPACE_FILES):
        found = [root]
    return found


def _skills(root: Path, workspaces: list[Path]) -> list[Path]:
    skills: list[Path] = []
    for base in [root, *workspaces]:
        folder = base / "skills"
        if folder.is_dir():
            skills.extend(p for p in sorted(folder.iterdir()) if (p / "SKILL.md").is_file())
    return skills


def _read_config(source: OpenClawSource) -> None:
    for name in CONFIG_NAMES:
        path = source.root / name
        if path.is_file():
            source.config_path = path
            try:
                data = json.loads(path.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                source.config_error = f"{path} could not be read as JSON ({exc})"
                return
            if isinstance(data, dict):
                source.config = data
            else:
                source.config_error = f"{path} does not hold a JSON object"
            return


def read_source(root: Path) -> OpenClawSource:
    """Everything a migration needs from the OpenClaw directory ``root`` (read only)."""
    source = OpenClawSource(root=root, workspaces=_workspaces(root))
    source.skills = _skills(root, source.workspaces)
    _read_config(source)
    env_path = root / ".env"
    if env_path.is_file():
        try:
            source.env_file = parse_env(env_path.read_text("utf-8"), str(env_path))
        except (OSError, UnicodeDecodeError, ValueError):
            source.env_file = {}
    known = {*source.workspaces, root / "skills", root / ".env"}
    known.update(root / name for name in CONFIG_NAMES)
    if root not in source.workspaces:
        source.other = sorted(p for p in root.iterdir() if p not in known)
    return source


def openclaw_running(proc: Path = Path("/proc")) -> list[str]:
    """``pid name`` of processes that look like OpenClaw (Linux ``/proc``; ``[]``
    elsewhere). Messaging platforms may reject a second session with the same bot token."""
    found: list[str] = []
    if not proc.is_dir():
        return found
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [Path(a.decode("utf-8", "replace")).name.lower() for a in argv[:3] if a]
        hit = next((w for w in words if w.startswith(_PROCESS_NAMES)), None)
        if hit and "memoryport" not in " ".join(words):
            found.append(f"{entry.name} {hit}")
    return sorted(found)
