"""Session pages: the list with filters, full-text search with ``session_search``'s query
syntax and highlights (also as you type), a session with its lineage and readable tool
calls, forgetting a message or a session (after a confirmation page), export."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memoryport.admin.audit import record
from memoryport.admin.pause import MemoryPaused, check_writes
from memoryport.admin.sessions import SessionStore, export, open_store
from memoryport.errors import MemoryportError, SessionNotFound, StoreError
from memoryport.ui.app import UiSettings, form_of, redirect, render, settings_of

__all__ = ["session_routes"]

SHELL = "ui"
PAGE = 50
HITS = 20
SCAN_PAGES = 20
MESSAGES = 500


@contextmanager
def _store(ui: UiSettings) -> Iterator[SessionStore]:
    store = open_store(ui.home, ui.user_id or None)
    try:
        yield store
    finally:
        store.close()


def _day(text: str, end: bool = False) -> float | None:
    if not text:
        return None
    try:
        day = datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        return None
    return day.timestamp() + (86_399.999 if end else 0)


def _filters(request: Request) -> dict[str, Any]:
    q = request.query_params
    raw = q.get("offset", "0")
    return {"q": q.get("q", "").strip(), "source": q.get("source", "").strip(),
            "user": q.get("user", "").strip(),
            "since": q.get("since", ""), "until": q.get("until", ""),
            "tools": q.get("tools") == "1", "offset": int(raw) if raw.isdigit() else 0}


def _in_range(ts: float, f: dict[str, Any]) -> bool:
    since, until = _day(f["since"]), _day(f["until"], end=True)
    return (since is None or ts >= since) and (until is None or ts <= until)


def _listed(store: SessionStore, f: dict[str, Any], sources: list[str] | None,
            user: str | None) -> list[Any]:
    """A page of sessions passing the date and tool-call filters, newest first; with
    those filters on, up to ``SCAN_PAGES`` store pages are read to fill it."""
    filtered = bool(f["since"] or f["until"] or f["tools"])
    rows: list[Any] = []
    offset = f["offset"]
    for _ in range(SCAN_PAGES if filtered else 1):
        page = store.list_sessions(sources=sources, user_id=user, limit=PAGE, offset=offset)
        offset += len(page)
        rows.extend(r for r in page if _in_range(r.session.started_at, f)
                    and (not f["tools"] or r.session.tool_call_count > 0))
        if len(page) < PAGE or len(rows) >= PAGE:
            break
    return rows[:PAGE]


def _results(ui: UiSettings, f: dict[str, Any]) -> dict[str, Any]:
    sources = [f["source"]] if f["source"] else None
    user = f["user"] or None
    with _store(ui) as store:
        if f["q"]:
            found = store.search_messages(f["q"], sources=sources, user_id=user, limit=HITS,
                                          offset=f["offset"])
            hits = [h for h in found.hits if _in_range(h.message.timestamp, f)
                    and (not f["tools"] or h.message.tool_calls or h.message.role == "tool")]
            record(ui.home, SHELL, "read", "sessions.search", target=f["q"][:200],
                   user_id=ui.user_id)
            return {"hits": hits, "warnings": found.warnings, "sessions": None}
        rows = _listed(store, f, sources, user)
        record(ui.home, SHELL, "read", "sessions.list", user_id=ui.user_id)
        return {"hits": None, "warnings": [], "sessions": rows}


def sessions_page(request: Request) -> Response:
    """``GET /sessions``: filters, search box and results."""
    f = _filters(request)
    data = _results(settings_of(request), f)
    return render(request, "sessions.html", {"title": "Sessions", "f": f, "page": PAGE,
                                             "hits_page": HITS,
                                             "msg": request.query_params.get("msg", ""),
                                             **data})


def results_fragment(request: Request) -> Response:
    """``GET /sessions/results``: the results block alone (search as you type)."""
    f = _filters(request)
    data = _results(settings_of(request), f)
    return render(request, "_results.html", {"f": f, "page": PAGE, "hits_page": HITS, **data})


def _calls(message: Any) -> list[dict[str, str]]:
    calls = []
    for call in message.tool_calls or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        raw = function.get("arguments", "")
        try:
            pretty = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            pretty = str(raw)
        calls.append({"id": str(call.get("id", "")) if isinstance(call, dict) else "",
                      "name": str(function.get("name", "?")), "arguments": pretty})
    return calls


def _pretty(content: str) -> str:
    try:
        return json.dumps(json.loads(content), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return content


def session_page(request: Request) -> Response:
    """``GET /sessions/{sid}``: the record, lineage, messages and tool calls."""
    ui = settings_of(request)
    sid = request.path_params["sid"]
    with _store(ui) as store:
        try:
            session = store.get_session(sid)
        except SessionNotFound:
            return render(request, "error.html", {"title": "Not found",
                                                  "error": f"no session {sid!r}"}, 404)
        raw = request.query_params.get("offset", "0")
        offset = int(raw) if raw.isdigit() else 0
        messages = store.get_messages(sid, limit=MESSAGES, offset=offset)
        children, lineage = store.children(sid), store.lineage(sid)
    record(ui.home, SHELL, "read", "sessions.view", target=sid, session_id=sid,
           user_id=ui.user_id)
    shown = [{"m": m, "calls": _calls(m),
              "text": _pretty(m.content) if m.role == "tool" else m.content}
             for m in messages]
    return render(request, "session.html", {
        "title": session.title or sid, "s": session, "messages": shown,
        "children": children, "lineage": lineage, "offset": offset, "page": MESSAGES,
        "more": session.message_count > offset + MESSAGES,
        "msg": request.query_params.get("msg", ""),
    })


def forget_confirm(request: Request) -> Response:
    """``GET /sessions/{sid}/forget[?message=ID]``: what would be deleted, and the button."""
    ui = settings_of(request)
    sid, mid = request.path_params["sid"], request.query_params.get("message", "")
    with _store(ui) as store:
        try:
            session = store.get_session(sid)
            message = store.get_message(int(mid)) if mid.isdigit() else None
        except (SessionNotFound, StoreError) as exc:
            return render(request, "error.html", {"title": "Not found", "error": str(exc)}, 404)
    if message is not None and message.session_id != sid:
        return render(request, "error.html", {"title": "Not found",
                                              "error": f"message {mid} is not in {sid}"}, 404)
    return render(request, "forget.html", {"title": "Forget", "s": session, "message": message})


def _forget(ui: UiSettings, sid: str, mid: str) -> str:
    with _store(ui) as store:
        store.get_session(sid)
        if mid:
            message = store.get_message(int(mid))
            if message.session_id != sid:
                raise StoreError(f"message {mid} is not in session {sid}")
            gone = store.forget_message(int(mid))
            record(ui.home, SHELL, "write", "sessions.forget_message", target=mid,
                   session_id=sid, user_id=ui.user_id)
            return f"forgot {gone} message"
        gone = store.forget_session(sid)
        record(ui.home, SHELL, "write", "sessions.forget_session", target=sid,
               session_id=sid, user_id=ui.user_id)
        return f"forgot session {sid} ({gone} messages)"


async def forget(request: Request) -> Response:
    """``POST /sessions/{sid}/forget``: delete one message (``message`` field) or the
    whole session, from the table and every index."""
    ui = settings_of(request)
    form = await form_of(request)
    sid, mid = request.path_params["sid"], form.get("message", "")
    if mid and not mid.isdigit():
        return render(request, "error.html", {"title": "Bad request",
                                              "error": f"bad message id {mid!r}"}, 400)
    try:
        check_writes(ui.home, "the forget")
        said = await run_in_threadpool(_forget, ui, sid, mid)
    except MemoryPaused as exc:
        return render(request, "error.html", {"title": "Paused", "error": str(exc)}, 409)
    except MemoryportError as exc:
        return render(request, "error.html", {"title": "Not forgotten", "error": str(exc)}, 404)
    target = f"/sessions/{quote(sid, safe='')}" if mid else "/sessions"
    return redirect(f"{target}?msg={quote(said)}")


def export_session(request: Request) -> Response:
    """``GET /sessions/{sid}/export``: the session as a JSONL export (a download)."""
    ui = settings_of(request)
    sid = request.path_params["sid"]
    out = io.StringIO()
    with _store(ui) as store:
        try:
            store.get_session(sid)
        except SessionNotFound:
            return render(request, "error.html", {"title": "Not found",
                                                  "error": f"no session {sid!r}"}, 404)
        export(store, out, session_ids=[sid])
    record(ui.home, SHELL, "read", "sessions.export", target=sid, session_id=sid,
           user_id=ui.user_id)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in sid)
    return Response(out.getvalue(), media_type="application/x-ndjson", headers={
        "Content-Disposition": f'attachment; filename="session-{safe}.jsonl"'})


def session_routes() -> list[Route]:
    """The session routes."""
    return [
        Route("/sessions", sessions_page, methods=["GET"]),
        Route("/sessions/results", results_fragment, methods=["GET"]),
        Route("/sessions/{sid}", session_page, methods=["GET"]),
        Route("/sessions/{sid}/forget", forget_confirm, methods=["GET"]),
        Route("/sessions/{sid}/forget", forget, methods=["POST"]),
        Route("/sessions/{sid}/export", export_session, methods=["GET"]),
    ]
