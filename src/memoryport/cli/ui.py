"""``memoryport ui``: serve the local web inspector (the ``ui`` extra) over this home.

Loopback only unless a token is given: binding any other address without ``--token`` (or
``MEMORYPORT_UI_TOKEN``) is refused before anything listens. Safe to run while the agent
runs: every page reads and writes through the same API the agent uses.
"""

from __future__ import annotations

import secrets
import threading
import webbrowser
from pathlib import Path
from urllib.parse import quote

import click

from memoryport.cli._common import get_home, home_option
from memoryport.config import ensure_home
from memoryport.errors import MemoryportError

__all__ = ["ui_command"]


def _url(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={quote(token)}" if token else "")


@click.command("ui")
@home_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs --token.")
@click.option("--port", type=click.IntRange(min=1, max=65_535), default=8766,
              show_default=True, help="Port to listen on.")
@click.option("--token", envvar="MEMORYPORT_UI_TOKEN", default="",
              help="Require this token on every request [env MEMORYPORT_UI_TOKEN]; "
                   "'generate' makes a random one.")
@click.option("--user", "user_id", default="", metavar="USER_ID",
              help="Show this user's curated files and sessions.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
def ui_command(home: Path | None, host: str, port: int, token: str, user_id: str,
               open_browser: bool) -> None:
    """Browse, search, edit, undo and pause memory in a local web page; audit log included."""
    try:
        from memoryport.ui import check_bind, create_app
    except ImportError as exc:
        raise click.ClickException(
            f"the web inspector needs the ui extra ({exc.name} is missing): "
            "pip install 'memoryport[ui]'"
        ) from exc
    import uvicorn

    token = secrets.token_urlsafe(24) if token == "generate" else token
    try:
        check_bind(host, token)
        resolved = get_home(None, home)
        ensure_home(resolved)
    except (MemoryportError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    app = create_app(resolved, user_id=user_id, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)
    url = _url(host, port, token)
    click.echo(f"memoryport ui: serving {resolved} at {url} (Ctrl-C stops)")
    if open_browser:
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    server.run()
