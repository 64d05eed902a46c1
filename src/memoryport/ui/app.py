"""The ASGI app of ``memoryport ui``: Starlette, server-rendered Jinja2 templates, no Node.

Safety rules, all enforced here:

- **Where it listens**: loopback by default; ``check_bind`` refuses any other address
  without a token. With a token every request must carry it (``?token=`` once, then a
  cookie; or ``Authorization: Bearer``).
- **Which host names it answers** (without a token): only ``127.0.0.1``, ``localhost`` and
  ``[::1]``, so a web page cannot reach it through DNS rebinding.
- **CSRF**: every write is a POST carrying the app's secret token (a hidden ``csrf`` form
  field or the ``X-CSRF-Token`` header); anything else is refused with 403 and changes
  nothing.
- **Escaping**: Jinja autoescape is on for every template, and the Content-Security-Policy
  allows only the app's own script file, so stored text (attacker-controlled memory,
  session titles, messages) always renders as text.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from memoryport.admin.pause import pause_state
from memoryport.errors import MemoryportError

__all__ = ["UiSettings", "check_bind", "form_of", "guard", "http_error", "is_loopback", "redirect",
           "render"]

HERE = Path(__file__).resolve().parent
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
TOKEN_COOKIE = "memoryport_ui_token"


@dataclass
class UiSettings:
    """What one UI app serves: the home, the user scope, the access and CSRF tokens."""

    home: Path
    user_id: str = ""
    token: str = ""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (v4 or v6)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str) -> None:
    """``MemoryportError`` when ``host`` is not loopback and no token is set."""
    if not is_loopback(host) and not token:
        raise MemoryportError(
            f"refusing to listen on {host!r} without a token: the UI shows and edits everything "
            "the agent remembers. Bind 127.0.0.1 (the default), or pass --token SECRET "
            "(or set MEMORYPORT_UI_TOKEN) and open the printed URL."
        )


def _highlight(snippet: str) -> Markup:
    """A search snippet with its ``>>>``/``<<<`` match markers as ``<mark>``; the text
    itself is escaped first, so stored markup never becomes HTML."""
    text = str(escape(snippet))
    return Markup(text.replace("&gt;&gt;&gt;", "<mark>").replace("&lt;&lt;&lt;", "</mark>"))


def _when(ts: Any) -> str:
    """A Unix time as ``YYYY-MM-DD HH:MM`` UTC ("" for none)."""
    if not isinstance(ts, int | float) or not ts:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def _templates() -> Jinja2Templates:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["highlight"] = _highlight
    env.filters["when"] = _when
    return Jinja2Templates(env=env)


TEMPLATES = _templates()


def settings_of(request: Request) -> UiSettings:
    """The app's settings."""
    found: UiSettings = request.app.state.ui
    return found


def render(request: Request, name: str, context: dict[str, Any], status: int = 200
           ) -> HTMLResponse:
    """Render a page with the shared context (csrf token, pause banner, user)."""
    ui = settings_of(request)
    base = {"csrf": ui.csrf, "pause": pause_state(ui.home), "user": ui.user_id,
            "home": str(ui.home), "path": request.url.path}
    response: HTMLResponse = TEMPLATES.TemplateResponse(
        request, name, {**base, **context}, status_code=status)
    return response


async def form_of(request: Request) -> dict[str, str]:
    """The POSTed form as strings, after checking the CSRF token (403 when missing or wrong:
    nothing is changed)."""
    form = await request.form()
    sent = str(form.get("csrf") or request.headers.get("x-csrf-token") or "")
    if not hmac.compare_digest(sent.encode(), settings_of(request).csrf.encode()):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")
    return {key: str(value) for key, value in form.items() if isinstance(value, str)}


def _host_allowed(request: Request, ui: UiSettings) -> bool:
    if ui.token:
        return True
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.lower() in LOOPBACK_NAMES or is_loopback(name)


def _token_ok(request: Request, ui: UiSettings) -> bool:
    if not ui.token:
        return True
    sent = (request.cookies.get(TOKEN_COOKIE) or request.query_params.get("token") or
            request.headers.get("authorization", "").removeprefix("Bearer ").strip())
    return hmac.compare_digest(sent.encode(), ui.token.encode())


async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]
                ) -> Response:
    """Middleware: host names, the access token and the security headers."""
    ui = settings_of(request)
    if not _host_allowed(request, ui):
        return PlainTextResponse("unknown host name: open http://127.0.0.1:<port>/", 421)
    if not _token_ok(request, ui):
        return PlainTextResponse(
            "a token is required: open the URL `memoryport ui` printed (…/?token=…)", 401)
    response = await call_next(request)
    if ui.token and request.query_params.get("token"):
        response.set_cookie(TOKEN_COOKIE, ui.token, httponly=True, samesite="strict")
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


async def http_error(request: Request, exc: Exception) -> Response:
    """An HTTP or core error as the error page."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return render(request, "error.html", {"title": f"Error {status}", "error": detail}, status)


def redirect(url: str) -> RedirectResponse:
    """A 303 redirect after a POST."""
    return RedirectResponse(url, status_code=303)
