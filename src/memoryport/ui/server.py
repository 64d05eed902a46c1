"""``create_app``: the UI's Starlette app (routes, static files, middleware, errors)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from memoryport.errors import MemoryportError
from memoryport.ui.app import HERE, UiSettings, guard, http_error
from memoryport.ui.routes import routes

__all__ = ["create_app"]


def create_app(home: Path, *, user_id: str = "", token: str = "") -> Starlette:
    """The UI app over ``home`` (``user_id``'s curated files and sessions when given)."""
    all_routes: list[BaseRoute] = [
        *routes(),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(
        routes=all_routes,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
        exception_handlers={HTTPException: http_error, MemoryportError: http_error},
    )
    app.state.ui = UiSettings(home=Path(home), user_id=user_id, token=token)
    return app
