"""The session export format (JSONL), its reader for every version, and progress reports.

Version 2 (written today) holds each session once, followed by its messages::

    {"format": "memoryport.sessions", "version": 2, "sessions": 2, "messages": 3}
    {"session": {...every SessionRecord field...}}
    {"message": {...every MessageRecord field, with its session_id...}}
    ...

An export of nothing is the header alone (``"sessions": 0``), a valid file that imports as
nothing. Version 1 (no header) repeated the session on every message line,
``{"session": {...}, "message": {...} | null}``; :func:`read_export` still reads it.

Every line is checked before anything is written: valid UTF-8, JSON (no ``NaN``), the
record fields with the right types, integers that fit a 64-bit column. Lone surrogates
in text (``"\\ud800"``) become U+FFFD rather than failing the write. A problem raises
``ToolArgumentError`` naming the 1-based line number and what to do.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import IO, Any

from memoryport.errors import ToolArgumentError
from memoryport.storage.sessions.records import MessageRecord, SessionRecord
from memoryport.types import valid_utf8

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "WRITE_LINES",
    "ExportWriter",
    "Progress",
    "export_line",
    "header_line",
    "parse_export_line",
    "read_export",
    "record_from_dict",
]

EXPORT_FORMAT = "memoryport.sessions"
"""The ``format`` value of an export header."""

EXPORT_VERSION = 2
"""The export version written today (1 had no header; it still imports)."""

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: a long store operation reports how far it got.

``phase`` names the step (``"exporting"``, ``"reading"``, ``"importing"``, ``"word index"``,
...); ``total`` is 0 when unknown. Called often; keep it cheap.
"""

Entries = list[tuple[SessionRecord, list[MessageRecord]]]

_INT_LIMIT = 2**63 - 1
_HINT = "re-export it with `memoryport sessions export`, or fix that line"


def _dump(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True)


def header_line(sessions: int, messages: int) -> str:
    """The first line of a version-2 export."""
    return _dump(
        {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "sessions": sessions,
            "messages": messages,
        }
    )


WRITE_LINES = 5_000
"""Export lines an :class:`ExportWriter` joins per write."""


class ExportWriter:
    """Writes a version-2 export: the header, then each session once and its messages.

    Backends fetch rows their own way and hand them over a session at a time; the writer
    counts lines and reports ``("exporting", messages done, messages total)``.
    """

    def __init__(
        self, out: IO[str], sessions: int, messages: int, progress: Progress | None = None
    ) -> None:
        self.out = out
        self.total = messages
        self.done = 0
        self.progress = progress
        self.lines = 1
        out.write(header_line(sessions, messages) + "\n")
        if progress is not None:
            progress("exporting", 0, messages)

    def session(self, session: SessionRecord, messages: Iterable[MessageRecord]) -> None:
        """Write one session line followed by its messages' lines, :data:`WRITE_LINES` at
        a time (a long session is never held whole)."""
        parts = [_dump({"session": session.to_dict()})]
        self.done -= 1  # the session line
        for message in messages:
            parts.append(_dump({"message": message.to_dict()}))
            if len(parts) >= WRITE_LINES:
                self._write(parts)
                parts = []
        self._write(parts)
        if self.progress is not None:
            self.progress("exporting", self.done, self.total)

    def _write(self, parts: list[str]) -> None:
        if parts:
            self.out.write("\n".join(parts) + "\n")
            self.lines += len(parts)
            self.done += len(parts)


# ---------------------------------------------------------------------------- reading


def _kinds(annotation: str) -> tuple[type, ...]:
    """Python types a JSON value may have for a dataclass field annotation string."""
    table: dict[str, tuple[type, ...]] = {
        "str": (str,),
        "int": (int,),
        "float": (int, float),
        "dict": (dict,),
        "list": (list,),
        "None": (type(None),),
        "Any": (object,),
    }
    kinds: list[type] = []
    for part in annotation.split("|"):
        kinds.extend(table.get(part.strip().split("[")[0], (object,)))
    return tuple(kinds)


_FIELDS = {
    cls: {f.name: _kinds(str(f.type)) for f in fields(cls)}
    for cls in (SessionRecord, MessageRecord)
}
_REQUIRED = {
    SessionRecord: ("id", "source"),
    MessageRecord: ("id", "session_id", "role", "content", "timestamp"),
}


def _check_value(name: str, value: Any, kinds: tuple[type, ...]) -> None:
    if isinstance(value, bool) and bool not in kinds and object not in kinds:
        raise ToolArgumentError(f"field {name!r} must not be true/false")
    if not isinstance(value, kinds):
        wanted = " or ".join(sorted({k.__name__.replace("NoneType", "null") for k in kinds}))
        raise ToolArgumentError(f"field {name!r} must be {wanted}, not {type(value).__name__}")
    if isinstance(value, int) and not -_INT_LIMIT <= value <= _INT_LIMIT:
        raise ToolArgumentError(f"field {name!r} is out of range ({value})")


def record_from_dict(cls: type[Any], raw: Any, what: str) -> Any:
    """Build a ``SessionRecord``/``MessageRecord`` from an export dict, checking types."""
    if not isinstance(raw, dict):
        raise ToolArgumentError(f"{what!r} must be a JSON object")
    known = _FIELDS[cls]
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ToolArgumentError(f"unknown {what} field(s) {unknown}")
    missing = [k for k in _REQUIRED[cls] if k not in raw]
    if missing:
        raise ToolArgumentError(f"{what} is missing {missing}")
    for name, value in raw.items():
        _check_value(f"{what}.{name}", value, known[name])
    if cls is SessionRecord and not raw["id"]:
        raise ToolArgumentError("session.id must not be empty")
    return cls(**raw)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large")
    return value


def _decode(line: str | bytes) -> str:
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolArgumentError(
            f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); "
            "the file must be UTF-8 as `memoryport sessions export` writes it: "
            "convert it (e.g. `iconv -t UTF-8`) or re-export it"
        ) from None


def _load(line: str) -> dict[str, Any]:
    try:
        payload = json.loads(line, parse_constant=_refuse_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise ToolArgumentError(f"not valid JSON ({exc}); {_HINT}") from None
    if not isinstance(payload, dict):
        raise ToolArgumentError(f"not a JSON object; {_HINT}")
    return dict(valid_utf8(payload))


class _Reader:
    """Groups export lines of either version into (session, messages) pairs."""

    def __init__(self, progress: Progress | None) -> None:
        self.grouped: dict[str, tuple[SessionRecord, list[MessageRecord]]] = {}
        self.version: int | None = None
        self.promised: tuple[int, int] | None = None
        self.messages = 0
        self.progress = progress

    def feed(self, payload: dict[str, Any]) -> None:
        if "format" in payload or "version" in payload:
            if self.version is not None:
                raise ToolArgumentError("a header line is only allowed as the first line")
            self._header(payload)
            return
        if self.version is None:
            self.version = 1
        if self.version == 1:
            self._v1(payload)
        else:
            self._v2(payload)

    def _header(self, payload: dict[str, Any]) -> None:
        if payload.get("format") != EXPORT_FORMAT:
            raise ToolArgumentError(
                f"not a memoryport sessions export (format {payload.get('format')!r}, "
                f"expected {EXPORT_FORMAT!r})"
            )
        version = payload.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 2:
            raise ToolArgumentError(f"unknown export version {version!r}")
        if version > EXPORT_VERSION:
            raise ToolArgumentError(
                f"written by a newer memoryport (export version {version}; this one reads "
                f"up to {EXPORT_VERSION}): upgrade memoryport to import it"
            )
        counts = (payload.get("sessions"), payload.get("messages"))
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            raise ToolArgumentError('the header needs "sessions" and "messages" counts')
        self.version, self.promised = version, (int(counts[0] or 0), int(counts[1] or 0))

    def _v1(self, payload: dict[str, Any]) -> None:
        if "session" not in payload or set(payload) - {"session", "message"}:
            raise ToolArgumentError(
                'expected {"session": {...}, "message": {...} or null} (version 1) or a '
                f"version-{EXPORT_VERSION} header; {_HINT}"
            )
        session = record_from_dict(SessionRecord, payload["session"], "session")
        entry = self.grouped.setdefault(session.id, (session, []))
        raw = payload.get("message")
        if raw:
            self._add(entry, record_from_dict(MessageRecord, raw, "message"))

    def _v2(self, payload: dict[str, Any]) -> None:
        if set(payload) == {"session"}:
            session = record_from_dict(SessionRecord, payload["session"], "session")
            if session.id in self.grouped:
                raise ToolArgumentError(f"session {session.id!r} appears twice")
            self.grouped[session.id] = (session, [])
        elif set(payload) == {"message"}:
            message = record_from_dict(MessageRecord, payload["message"], "message")
            entry = self.grouped.get(message.session_id)
            if entry is None:
                raise ToolArgumentError(
                    f"message {message.id} belongs to session {message.session_id!r}, "
                    "which no earlier line declares"
                )
            self._add(entry, message)
        else:
            raise ToolArgumentError(f'expected {{"session": ...}} or {{"message": ...}}; {_HINT}')

    def _add(
        self, entry: tuple[SessionRecord, list[MessageRecord]], message: MessageRecord
    ) -> None:
        entry[1].append(message)
        self.messages += 1
        if self.progress is not None and self.messages % 2000 == 0:
            total = self.promised[1] if self.promised else 0
            self.progress("reading", self.messages, total)

    def finish(self) -> Entries:
        if self.promised is not None:
            found = (len(self.grouped), self.messages)
            if found != self.promised:
                raise ToolArgumentError(
                    f"the header promises {self.promised[0]} sessions and {self.promised[1]} "
                    f"messages but the file holds {found[0]} and {found[1]}: it is "
                    "truncated or was edited; export it again"
                )
        return list(self.grouped.values())


def read_export(lines: Iterable[str | bytes], progress: Progress | None = None) -> Entries:
    """Parse a whole export (version 1 or 2; text or UTF-8 bytes) into (session, messages).

    Nothing is returned unless every line is valid: a problem raises ``ToolArgumentError``
    starting ``line N:``. Blank lines are ignored.
    """
    reader = _Reader(progress)
    number = 0
    for number, raw in enumerate(lines, start=1):
        try:
            text = _decode(raw)
            if text.strip():
                reader.feed(_load(text))
        except ToolArgumentError as exc:
            raise ToolArgumentError(f"line {number}: {exc}") from None
    try:
        return reader.finish()
    except ToolArgumentError as exc:
        raise ToolArgumentError(f"line {number}: {exc}") from None


def export_line(session: SessionRecord, message: MessageRecord | None) -> str:
    """One version-1 export line: ``{"session": {...}, "message": {...} | null}``.

    Exports are written in version 2 today (:class:`ExportWriter`); version-1 lines
    still import.
    """
    payload = {"session": session.to_dict(), "message": message.to_dict() if message else None}
    return json.dumps(payload, ensure_ascii=False, sort_keys=True)


def parse_export_line(line: str) -> tuple[SessionRecord, MessageRecord | None]:
    """Parse one version-1 export line; raises ``ToolArgumentError`` if malformed."""
    entries = read_export([line])
    if len(entries) != 1 or len(entries[0][1]) > 1:
        raise ToolArgumentError('expected one {"session": ..., "message": ...} line')
    session, messages = entries[0]
    return session, (messages[0] if messages else None)
