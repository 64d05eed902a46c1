"""Every route of the UI app, page module by page module."""

from __future__ import annotations

from starlette.routing import Route

from memoryport.ui.memory_pages import memory_routes
from memoryport.ui.other_pages import other_routes
from memoryport.ui.session_pages import session_routes

__all__ = ["routes"]


def routes() -> list[Route]:
    """The routes of every page."""
    return [*other_routes(), *memory_routes(), *session_routes()]
