"""Curated memory pages: entry cards with the budget gauge; add, edit and remove through the
``memory`` tool's own path (scan, lock, drift guard, history, providers' ``on_memory_write``);
history per entry with the diff of each revision and one-click restore."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memoryport.admin.audit import record
from memoryport.admin.curated import (
    call_memory_tool,
    history_rows,
    open_curated,
    restore_revision,
    revision_diff,
    target_info,
)
from memoryport.admin.pause import check_writes
from memoryport.errors import MemoryportError
from memoryport.ui.app import form_of, redirect, render, settings_of

__all__ = ["memory_routes"]

SHELL = "ui"
TARGETS = ("memory", "user")


def _back(path: str, **params: str) -> Response:
    query = urlencode({k: v for k, v in params.items() if v})
    return redirect(f"{path}?{query}" if query else path)


def _user(request: Request, form: dict[str, str] | None = None) -> str:
    """The user whose files a page shows: ``?user=`` (or the form's ``user``), else the
    app's ``--user``; a malformed id is refused by ``open_curated``."""
    given = (form or {}).get("user") if form is not None else request.query_params.get("user")
    return (given or settings_of(request).user_id).strip()


def memory_page(request: Request) -> Response:
    """``GET /memory[?user=]``: both targets as entry cards with their budget gauge."""
    ui, user = settings_of(request), _user(request)
    store = open_curated(ui.home, user)
    targets = [target_info(store, target) for target in store.targets]
    record(ui.home, SHELL, "read", "memory.list", target=",".join(store.targets),
           user_id=user)
    return render(request, "memory.html", {
        "title": "Curated memory", "targets": targets, "who": user,
        "msg": request.query_params.get("msg", ""), "error": request.query_params.get("error", ""),
    })


def _tool_args(form: dict[str, str]) -> dict[str, Any]:
    target, op = form.get("target", ""), form.get("op", "")
    if target not in TARGETS or op not in ("add", "replace", "remove"):
        raise ValueError(f"unknown target {target!r} or operation {op!r}")
    args: dict[str, Any] = {"action": op, "target": target}
    if op in ("add", "replace"):
        args["content"] = form.get("content", "")
    if op in ("replace", "remove"):
        args["old_text"] = form.get("old_text", "")
    return args


async def memory_write(request: Request) -> Response:
    """``POST /memory``: one ``memory`` tool call (add, replace or remove) as the model
    would make it; a refusal (scan, budget, drift, pause) is shown, nothing changes."""
    ui = settings_of(request)
    form = await form_of(request)
    user = _user(request, form)
    try:
        args = _tool_args(form)
    except ValueError as exc:
        return _back("/memory", user=user, error=str(exc))
    try:
        result = await run_in_threadpool(call_memory_tool, ui.home, user, args, source=SHELL)
    except MemoryportError as exc:
        return _back("/memory", user=user, error=str(exc))
    if result.get("success") is False:
        return _back("/memory", user=user, error=str(result.get("error", "refused")))
    return _back("/memory", user=user,
                 msg=str(result.get("message") or f"{args['action']}: done"))


def _touches(row: dict[str, Any], text: str) -> bool:
    return any(text in (change.get("content"), change.get("previous"))
               for change in row.get("changes", []))


def history_page(request: Request) -> Response:
    """``GET /memory/history?target=&entry=``: revisions newest first (only those that
    touched ``entry``, an entry's text, when given)."""
    ui = settings_of(request)
    target = request.query_params.get("target") or None
    if target is not None and target not in TARGETS:
        return _back("/memory", error=f"unknown target {target!r}: use memory or user")
    entry, user = request.query_params.get("entry", ""), _user(request)
    store = open_curated(ui.home, user)
    rows = history_rows(store, target)
    if entry:
        rows = [row for row in rows if _touches(row, entry)]
    record(ui.home, SHELL, "read", "memory.history", target=target or "memory,user",
           user_id=user)
    return render(request, "history.html", {"who": user,
        "title": "Memory history", "rows": rows[:200], "total": len(rows),
        "target": target or "", "entry": entry, "error": request.query_params.get("error", ""),
    })


def revision_page(request: Request) -> Response:
    """``GET /memory/revision?id=memory:3``: the revision's diff and restore buttons."""
    ui = settings_of(request)
    rev_id, user = request.query_params.get("id", ""), _user(request)
    store = open_curated(ui.home, user)
    try:
        found = revision_diff(store, rev_id)
    except MemoryportError as exc:
        return _back("/memory/history", user=user, error=str(exc))
    record(ui.home, SHELL, "read", "memory.revision", target=found["revision"]["target"],
           user_id=user, revision=found["revision"]["id"])
    lines = [(line[:1] if line[:1] in "+-@" else " ", line.rstrip("\n"))
             for line in found["diff"].splitlines()]
    return render(request, "revision.html", {
        "title": f"Revision {found['revision']['id']}", "rev": found["revision"],
        "lines": lines, "error": request.query_params.get("error", ""), "who": user,
    })


async def restore(request: Request) -> Response:
    """``POST /memory/restore``: the file as it was after (or before) a revision, through
    the built-in provider (budget and scan apply; the restore is a new revision)."""
    ui = settings_of(request)
    form = await form_of(request)
    rev_id, before, user = form.get("id", ""), form.get("before") == "1", _user(request, form)
    try:
        check_writes(ui.home, "the restore")
        result = await run_in_threadpool(restore_revision, ui.home, user, rev_id,
                                         before=before, source=SHELL)
    except MemoryportError as exc:
        return _back("/memory/revision", id=rev_id, user=user, error=str(exc))
    record(ui.home, SHELL, "write", "memory.restore", target=result["target"],
           user_id=user, revision=result["revision"] or "",
           detail=f"restored {'before' if before else 'after'} {rev_id}")
    return _back("/memory", user=user, msg=f"restored {rev_id}: {result['message']}")


def memory_routes() -> list[Route]:
    """The curated-memory routes."""
    return [
        Route("/memory", memory_page, methods=["GET"]),
        Route("/memory", memory_write, methods=["POST"]),
        Route("/memory/history", history_page, methods=["GET"]),
        Route("/memory/revision", revision_page, methods=["GET"]),
        Route("/memory/restore", restore, methods=["POST"]),
    ]
