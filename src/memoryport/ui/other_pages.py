"""Facts (list, search, trust, contradictions, supersession chain, provenance), providers
(health, config with secrets masked), the pause switch and the audit log."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memoryport.admin.audit import events, parse_since, record, retention_days, set_retention_days
from memoryport.admin.facts import list_facts, open_facts, search_facts, show_fact, why_fact
from memoryport.admin.pause import pause, resume
from memoryport.admin.status import gather_status
from memoryport.errors import MemoryportError
from memoryport.ui.app import form_of, redirect, render, settings_of

__all__ = ["other_routes"]

SHELL = "ui"
FACTS = 100
EVENTS = 200
STATUS_TTL = 10.0


def facts_page(request: Request) -> Response:
    """``GET /facts?q=&retired=1``: facts newest first, or ranked for ``q``; trust shown;
    the latest contradictions (a retired fact and the one that replaced it)."""
    ui = settings_of(request)
    q, retired = request.query_params.get("q", "").strip(), request.query_params.get("retired")
    try:
        with open_facts(ui.home, ui.user_id or None) as store:
            facts = (search_facts(store, q, limit=FACTS) if q else
                     list_facts(store, limit=FACTS, include_retired=retired == "1"))
            contradictions = [c.to_dict() for c in store.contradictions(limit=20)]
            total = store.count()
    except MemoryportError as exc:
        return render(request, "facts.html", {"title": "Facts", "error": str(exc), "facts": [],
                                              "contradictions": [], "q": q, "total": 0})
    record(ui.home, SHELL, "read", "facts.search" if q else "facts.list",
           target=q[:200], user_id=ui.user_id)
    return render(request, "facts.html", {
        "title": "Facts", "facts": [f.to_dict() for f in facts], "q": q, "total": total,
        "contradictions": contradictions, "retired": retired == "1", "error": "",
    })


def fact_page(request: Request) -> Response:
    """``GET /facts/{fid}``: one fact, its revisions, contradictions, chain and why."""
    ui = settings_of(request)
    raw = request.path_params["fid"]
    if not raw.isdigit():
        return render(request, "error.html", {"title": "Bad request",
                                              "error": f"bad fact id {raw!r}"}, 400)
    try:
        with open_facts(ui.home, ui.user_id or None) as store:
            shown = show_fact(store, int(raw))
            why = why_fact(store, int(raw))
    except MemoryportError as exc:
        return render(request, "error.html", {"title": "Not found", "error": str(exc)}, 404)
    record(ui.home, SHELL, "read", "facts.show", target=raw, user_id=ui.user_id)
    return render(request, "fact.html", {"title": f"Fact #{raw}", **shown, "why": why})


_status_cache: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
_status_lock = threading.Lock()


def _status(home: Path, probe: bool, fresh: bool) -> dict[str, Any]:
    """``gather_status``; without a probe, reused for ``STATUS_TTL`` seconds (it loads
    the provider plugin and counts its rows: hundreds of milliseconds on a big home)."""
    if probe:
        return gather_status(home, probe=True)
    key, now = (str(home), ""), time.monotonic()
    with _status_lock:
        cached = _status_cache.get(key)
    if cached is not None and not fresh and now - cached[0] < STATUS_TTL:
        return cached[1]
    data = gather_status(home, probe=False)
    with _status_lock:
        _status_cache[key] = (now, data)
    return data


def providers_page(request: Request) -> Response:
    """``GET /providers[?probe=1][&fresh=1]``: built-in memory, the selected provider
    (config with secrets masked, health when probed) and the installed providers."""
    ui = settings_of(request)
    probe = request.query_params.get("probe") == "1"
    data = _status(ui.home, probe, request.query_params.get("fresh") == "1")
    record(ui.home, SHELL, "read", "providers.status", user_id=ui.user_id)
    return render(request, "providers.html", {"title": "Providers", "data": data,
                                              "probed": probe})


def pause_page(request: Request) -> Response:
    """``GET /pause``: the switch, and how many provider syncs are held."""
    return render(request, "pause.html", {"title": "Pause",
                                          "msg": request.query_params.get("msg", "")})


async def pause_write(request: Request) -> Response:
    """``POST /pause``: pause writes and/or recall (both unchecked: resume)."""
    ui = settings_of(request)
    form = await form_of(request)
    writes, recall = form.get("writes") == "on", form.get("recall") == "on"
    if form.get("resume") == "1" or not (writes or recall):
        await run_in_threadpool(resume, ui.home, by=SHELL)
        return redirect("/pause?msg=" + quote("resumed: memory writes and recall are on"))
    state = await run_in_threadpool(pause, ui.home, writes=writes, recall=recall, by=SHELL,
                                    reason=form.get("reason", "")[:500])
    said = " and ".join(n for n, on in (("writes", state.writes), ("recall", state.recall))
                        if on)
    return redirect("/pause?msg=" + quote(f"paused: {said}"))


def _audit_filters(request: Request) -> tuple[dict[str, str], dict[str, Any], str]:
    q = request.query_params
    shown = {key: q.get(key, "").strip() for key in ("since", "shell", "kind", "action")}
    query: dict[str, Any] = {k: v or None for k, v in shown.items() if k != "since"}
    error = ""
    if shown["since"]:
        try:
            query["since"] = parse_since(shown["since"])
        except ValueError as exc:
            error = str(exc)
    return shown, query, error


def audit_page(request: Request) -> Response:
    """``GET /audit``: recorded reads and writes, newest first, with filters and the
    retention setting."""
    ui = settings_of(request)
    shown, query, error = _audit_filters(request)
    rows = [e.to_dict() for e in events(ui.home, limit=EVENTS, **query)] if not error else []
    return render(request, "audit.html", {
        "title": "Audit log", "rows": rows, "f": shown, "error": error,
        "retention": retention_days(ui.home), "msg": request.query_params.get("msg", ""),
    })


async def audit_retention(request: Request) -> Response:
    """``POST /audit/retention``: keep events N days (0: forever); prunes at once."""
    ui = settings_of(request)
    form = await form_of(request)
    raw = form.get("days", "").strip()
    if not raw.isdigit() or int(raw) > 36_500:
        return redirect("/audit?msg=" + quote(
            f"retention must be a whole number of days from 0 (forever) to 36500, not {raw!r}"))
    removed = await run_in_threadpool(set_retention_days, ui.home, int(raw))
    record(ui.home, SHELL, "write", "audit.retention", target=raw, user_id=ui.user_id)
    return redirect("/audit?msg=" + quote(f"retention set to {raw} days; {removed} pruned"))


def index(request: Request) -> Response:
    """``GET /``: to the curated memory page."""
    return redirect("/memory")


def other_routes() -> list[Route]:
    """Facts, providers, pause and audit routes."""
    return [
        Route("/", index, methods=["GET"]),
        Route("/facts", facts_page, methods=["GET"]),
        Route("/facts/{fid}", fact_page, methods=["GET"]),
        Route("/providers", providers_page, methods=["GET"]),
        Route("/pause", pause_page, methods=["GET"]),
        Route("/pause", pause_write, methods=["POST"]),
        Route("/audit", audit_page, methods=["GET"]),
        Route("/audit/retention", audit_retention, methods=["POST"]),
    ]
