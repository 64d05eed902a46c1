"""``memoryport why REF``: where a stored memory came from, with the source turn's text.

``REF`` names a curated revision (``memory:12``, ``user:3``, as ``memoryport memory
history`` lists them) or a fact (``fact:7``, ``#7`` or ``7``, as recall citations and
``memoryport facts`` show them). The answer is one JSON-ready dict: the kind, the
provenance (who wrote it, from which session, tool call, import or migration, when) and,
when the write came from a conversation, the turn it was made in — the user message and
the assistant message that called the tool — read from the session store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.admin.curated import open_curated, parse_revision_id, revision_row
from memoryport.admin.facts import open_facts, why_fact
from memoryport.admin.sessions import MessageRecord, open_store
from memoryport.errors import MemoryportError, SessionNotFound, StoreError

__all__ = ["parse_ref", "why"]

_SOURCE_CHARS = 2000


def parse_ref(ref: str) -> tuple[str, str, int]:
    """``(kind, target, number)``: kind ``curated`` (target ``memory``/``user``) or
    ``fact`` (target ``""``). ``StoreError`` naming the accepted forms otherwise."""
    text = str(ref).strip()
    head, sep, tail = text.rpartition(":")
    if text.startswith("#"):
        head, sep, tail = "fact", ":", text[1:]
    elif not sep:
        head, tail = "fact", text
    if head == "fact" and tail.isdigit() and int(tail) >= 1:
        return "fact", "", int(tail)
    if head in ("memory", "user"):
        target, number = parse_revision_id(text)
        return "curated", target, number
    raise StoreError(
        f"cannot read {ref!r} as a memory reference: use a curated revision such as "
        "'memory:12' or 'user:3' (see `memoryport memory history`) or a fact such as "
        "'fact:7' or '#7' (see `memoryport facts list`)"
    )


def why(home: Path, ref: str, *, user_id: str = "") -> dict[str, Any]:
    """Where the memory ``ref`` came from (see the module docstring). ``StoreError`` /
    ``MemoryStoreError`` when the reference is malformed or nothing has that id."""
    kind, target, number = parse_ref(ref)
    if kind == "fact":
        with open_facts(home, user_id or None) as facts:
            found = why_fact(facts, number)
        turn = _turn(home, user_id, str(found.get("session_id") or ""),
                     str(found.get("message_id") or ""), None)
        return {"kind": "fact", "ref": f"fact:{number}", **found, "turn": turn}
    revision = open_curated(home, user_id).revision(target, number)
    row = revision_row(target, revision)
    origin = revision.provenance
    turn = _turn(home, user_id, origin.session_id, origin.tool_call_id, revision.ts)
    return {"kind": "curated", "ref": row["id"], "revision": row,
            "source": origin.source, "session_id": origin.session_id,
            "tool_call_id": origin.tool_call_id, "turn": turn}


def _turn(home: Path, user_id: str, session_id: str, call_or_message: str,
          before_ts: float | None) -> dict[str, Any] | None:
    """The turn a write was made in: the assistant message whose tool call has the id
    ``call_or_message`` (or the message with that numeric id) and the user message before
    it; without either, the last user message at or before ``before_ts``. None when the
    session is not in the store."""
    if not session_id:
        return None
    try:
        sessions = open_store(home, user_id or None)
    except (MemoryportError, ValueError):
        return None
    try:
        messages = sessions.get_messages(session_id)
    except (SessionNotFound, MemoryportError, ValueError):
        return None
    finally:
        sessions.close()
    anchor = _anchor(messages, call_or_message, before_ts)
    if anchor is None:
        return {"session_id": session_id, "found": False}
    user = next((m for m in reversed(messages[: anchor + 1]) if m.role == "user"), None)
    made_by = messages[anchor] if messages[anchor].role != "user" else None
    return {
        "session_id": session_id,
        "found": True,
        "timestamp": messages[anchor].timestamp,
        "user_message": _message(user),
        "assistant_message": _message(made_by),
    }


def _anchor(messages: list[MessageRecord], key: str, before_ts: float | None) -> int | None:
    for index, message in enumerate(messages):
        if key and key.isdigit() and str(message.id) == key:
            return index
        calls = message.tool_calls or []
        if key and any(isinstance(c, dict) and c.get("id") == key for c in calls):
            return index
    if before_ts is None:
        return None
    earlier = [i for i, m in enumerate(messages) if m.role == "user" and m.timestamp <= before_ts]
    return earlier[-1] if earlier else None


def _message(message: MessageRecord | None) -> dict[str, Any] | None:
    if message is None:
        return None
    return {"id": message.id, "role": message.role, "timestamp": message.timestamp,
            "content": message.content[:_SOURCE_CHARS]}
