"""Pure helpers of the ``honcho`` provider: input sanitising, chunking with ``[continued]``
markers, the token budget, the session-name chain, and the dialectic prompts."""

from __future__ import annotations

import re
from pathlib import Path

from memoryport.fence import sanitize_context
from memoryport.providers.honcho.config import HonchoConfig
from memoryport.types import SessionContext

__all__ = [
    "AUDIT_PROMPT",
    "COLD_PROMPT",
    "CONTINUED",
    "RECONCILE_PROMPT",
    "WARM_PROMPT",
    "chunk",
    "git_root",
    "safe_id",
    "sanitize",
    "session_name",
    "strong_signal",
    "truncate_to_budget",
]

CONTINUED = "[continued]"
"""Marks the end of a chunk that continues, and the start of the chunk that continues it."""

COLD_PROMPT = ("Who is this person? What are their preferences, goals, and working style? "
               "Focus on facts that would help an AI assistant be immediately useful.")
WARM_PROMPT = ("Given what's been discussed in this session so far, what context about this "
               "user is most relevant to the current conversation? Prioritize active context "
               "over biographical facts.")
AUDIT_PROMPT = ("Audit this first answer about the user for gaps, guesses and anything not "
                "supported by what they said, then give a targeted synthesis of what matters "
                "for the current message.\n\nCurrent message: {message}\n\nFirst answer:\n"
                "{previous}")
RECONCILE_PROMPT = ("Reconcile these answers about the user: resolve contradictions between "
                    "them and give one final synthesis.\n\n{previous}")

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_BULLETS = re.compile(r"^\s*(?:[-*•]|\d+\.|#+)\s+\S", re.MULTILINE)


def sanitize(text: str) -> str:
    """``text`` without leaked ``<memory-context>`` blocks, stray fence tags and the
    system note, so injected context saved with a message never comes back as input."""
    return sanitize_context(text).strip() if text else ""


def chunk(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` chars, on whitespace when possible;
    every piece but the last ends with `` [continued]``, every piece but the first starts
    with ``[continued] ``."""
    if len(text) <= limit:
        return [text]
    room = max(1, limit - 2 * (len(CONTINUED) + 1))
    pieces: list[str] = []
    rest = text
    while rest:
        if len(rest) <= room:
            pieces.append(rest)
            break
        cut = rest.rfind(" ", room // 2, room + 1)
        cut = cut if cut > 0 else room
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    last = len(pieces) - 1
    return [(f"{CONTINUED} " if i else "") + piece + (f" {CONTINUED}" if i < last else "")
            for i, piece in enumerate(pieces)]


def truncate_to_budget(text: str, tokens: int | None) -> str:
    """``text`` cut to ``tokens * 4`` characters at a word boundary (``None``: unchanged)."""
    if tokens is None or len(text) <= tokens * 4:
        return text
    limit = tokens * 4
    cut = text.rfind(" ", 0, limit + 1)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


def strong_signal(answer: str) -> bool:
    """The early bail-out of a 2+ pass dialectic: over 300 chars, or structured (bullets
    or headings) and over 100 chars."""
    text = answer.strip()
    return len(text) > 300 or (len(text) > 100 and bool(_BULLETS.search(text)))


def safe_id(name: str) -> str:
    """A Honcho-safe id: letters, digits, ``_`` and ``-`` (others become ``-``), ≤ 100."""
    return _ID_UNSAFE.sub("-", name).strip("-")[:100] or "default"


def git_root(directory: Path) -> Path | None:
    """The nearest ancestor (or ``directory``) holding ``.git``; no subprocess."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _directory(context: SessionContext) -> Path:
    return Path(context.agent_workspace or Path.cwd()).resolve()


def session_name(config: HonchoConfig, context: SessionContext, peer: str) -> str:
    """The Honcho session for this memoryport session; first match wins: 1 the manual
    ``sessions`` map (by directory), 2 the session title, 3 the gateway session key,
    4 ``per-session`` (the session id), 5 ``per-repo`` (git root's name), 6
    ``per-directory`` (the directory's name), 7 ``global`` (the workspace name). Gateway
    platforms always take 3. ``sessionPeerPrefix`` prepends the peer name."""
    directory = _directory(context)
    mapped = config.sessions.get(str(directory))
    strategy = config.session_strategy
    if mapped:
        name = mapped
    elif context.session_title:
        name = context.session_title
    elif context.gateway_session_key:
        name = context.gateway_session_key
    elif strategy == "per-session" and context.session_id:
        name = context.session_id
    elif strategy == "per-repo" and git_root(directory) is not None:
        name = git_root(directory).name  # type: ignore[union-attr]
    elif strategy == "global":
        name = config.workspace
    else:
        name = directory.name or config.workspace
    if config.session_peer_prefix and peer:
        name = f"{peer}-{name}"
    return safe_id(name)
