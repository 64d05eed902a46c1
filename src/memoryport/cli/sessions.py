"""``memoryport sessions``: browse, search, show, export/import and forget conversation history.

A thin shell over the configured ``SessionStore`` (``<home>/state.db`` by default, or the
PostgreSQL backend from ``config.yaml``). Errors exit with status 1 and a message on stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from memoryport.cli._common import (
    Column,
    echo_json,
    get_home,
    home_option,
    load_home_env,
    plural,
    print_table,
)
from memoryport.errors import MemoryportError, SessionNotFound
from memoryport.storage.sessions.base import SessionStore, SortOrder

__all__ = ["sessions_group"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _options(func: _F) -> _F:
    """``--home`` and ``--user``, shared by every command."""
    func = click.option(
        "--user", "user_id", default="", metavar="USER_ID", help="Only this user's sessions."
    )(func)
    return home_option(func)


@contextmanager
def _store(home: Path | None, user_id: str) -> Iterator[SessionStore]:
    from memoryport.api import open_session_store
    from memoryport.config import load_config

    try:
        resolved = get_home(None, home)
        ctx = click.get_current_context(silent=True)
        if home is not None and ctx is not None:
            load_home_env(ctx, resolved)  # the root loaded the root home's .env
        store = open_session_store(load_config(resolved), resolved, user_id or None)
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        yield store
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()


def _require_session(store: SessionStore, session_id: str) -> None:
    """Exit 1 with ``no session 'ID'`` unless the session exists (for this user)."""
    try:
        store.get_session(session_id)
    except SessionNotFound:
        raise click.ClickException(f"no session {session_id!r}") from None


def _when(ts: float | None) -> str:
    return "" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group("sessions")
def sessions_group() -> None:
    """Conversation history: list, search, show, export, import, forget, rebuild-index."""


@sessions_group.command("list")
@_options
@click.option("--limit", default=20, show_default=True)
@click.option("--source", "sources", multiple=True, help="Only these sources (repeatable).")
@click.option("--all-sources", is_flag=True, help="Include hidden sources (tool, subagent).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(
    home: Path | None,
    user_id: str,
    limit: int,
    sources: tuple[str, ...],
    all_sources: bool,
    as_json: bool,
) -> None:
    """Recent sessions, most recently active first."""
    with _store(home, user_id) as store:
        rows = store.list_sessions(
            sources=sources or None, exclude_sources=() if all_sources else None, limit=limit
        )
    if as_json:
        echo_json([{**r.session.to_dict(), "preview": r.preview} for r in rows])
        return
    print_table(
        "sessions",
        [Column("id", fold=True), "source", "last active", "messages", "title / preview"],
        [
            (
                r.session.id,
                r.session.source,
                _when(r.session.last_active_at),
                r.session.message_count,
                _short(r.session.title or r.preview, 50),
            )
            for r in rows
        ],
    )


@sessions_group.command("search")
@_options
@click.argument("query")
@click.option("--limit", default=20, show_default=True)
@click.option("--sort", type=click.Choice(["relevance", "newest", "oldest"]), default="relevance")
@click.option("--role", "roles", multiple=True, help="Only these roles (repeatable).")
@click.option("--source", "sources", multiple=True, help="Only these sources (repeatable).")
@click.option("--all-sources", is_flag=True, help="Include hidden sources (tool, subagent).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def search_command(
    home: Path | None,
    user_id: str,
    query: str,
    limit: int,
    sort: str,
    roles: tuple[str, ...],
    sources: tuple[str, ...],
    all_sources: bool,
    as_json: bool,
) -> None:
    """Full-text search over messages (phrases, AND/OR/NOT, prefix*, CJK)."""
    with _store(home, user_id) as store:
        result = store.search_messages(
            query,
            sort=cast(SortOrder, sort),
            limit=limit,
            roles=roles or None,
            sources=sources or None,
            exclude_sources=() if all_sources else None,
        )
    if as_json:
        echo_json(
            {
                "query": query,
                "plan": result.plan,
                "warnings": result.warnings,
                "hits": [
                    {
                        **h.message.to_dict(),
                        "snippet": h.snippet,
                        "score": h.score,
                        "source": h.source,
                    }
                    for h in result.hits
                ],
            }
        )
        return
    for warning in result.warnings:
        click.echo(f"note: {warning}", err=True)
    print_table(
        f"{plural(len(result.hits), 'hit')} ({result.plan})",
        ["message", Column("session", fold=True), "when", "role", "snippet"],
        [
            (
                h.message.id,
                h.message.session_id,
                _when(h.message.timestamp),
                h.message.role,
                _short(h.snippet, 80),
            )
            for h in result.hits
        ],
    )


@sessions_group.command("show")
@_options
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(home: Path | None, user_id: str, session_id: str, as_json: bool) -> None:
    """One session's metadata and messages."""
    with _store(home, user_id) as store:
        session = store.get_session(session_id)
        messages = store.get_messages(session_id)
        lineage = store.lineage(session_id)
    if as_json:
        echo_json(
            {
                "session": session.to_dict(),
                "lineage": lineage,
                "messages": [m.to_dict() for m in messages],
            }
        )
        return
    click.echo(f"{session.id}  [{session.source}]  {session.title}")
    click.echo(
        f"started {_when(session.started_at)}  ended {_when(session.ended_at) or '-'}  "
        f"model {session.model or '-'}  messages {session.message_count}"
    )
    if len(lineage) > 1:
        click.echo("lineage: " + " > ".join(lineage))
    for m in messages:
        label = m.role + (f":{m.tool_name}" if m.tool_name else "")
        click.echo(f"\n#{m.id} {label} {_when(m.timestamp)}\n{m.content}")


@sessions_group.command("export")
@_options
@click.option("--session", "session_ids", multiple=True, help="Only these sessions.")
@click.option(
    "--output",
    "-o",
    type=click.File("w", encoding="utf-8"),
    default="-",
    help="File to write [default: stdout].",
)
def export_command(
    home: Path | None, user_id: str, session_ids: tuple[str, ...], output: Any
) -> None:
    """Export sessions as JSONL (one message per line, with session metadata)."""
    with _store(home, user_id) as store:
        for session_id in session_ids:
            _require_session(store, session_id)
        lines = store.export_jsonl(output, session_ids=session_ids or None)
    click.echo(f"exported {plural(lines, 'line')}", err=True)


@sessions_group.command("import")
@_options
@click.argument("source", type=click.File("r", encoding="utf-8"))
@click.option(
    "--on-conflict",
    type=click.Choice(["skip", "replace", "error"]),
    default="skip",
    show_default=True,
)
def import_command(home: Path | None, user_id: str, source: Any, on_conflict: str) -> None:
    """Import a JSONL export (ids, timestamps and metadata are kept)."""
    with _store(home, user_id) as store:
        report = store.import_jsonl(source, on_conflict=cast(Any, on_conflict))
    click.echo(
        f"imported {plural(report.sessions_imported, 'session')} "
        f"({plural(report.messages_imported, 'message')}), "
        f"skipped {report.sessions_skipped}"
    )


@sessions_group.command("forget")
@_options
@click.option("--message", "message_id", type=int, default=None, help="Delete one message.")
@click.option("--session", "session_id", default=None, help="Delete one session.")
@click.option(
    "--all-of-user",
    "forget_user",
    default=None,
    metavar="USER_ID",
    help="Delete every session of a user.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def forget_command(
    home: Path | None,
    user_id: str,
    message_id: int | None,
    session_id: str | None,
    forget_user: str | None,
    yes: bool,
) -> None:
    """Delete a message, a session, or all of a user's history (from every index)."""
    chosen = [x for x in (message_id, session_id, forget_user) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --message, --session, --all-of-user")
    what = (
        f"message {message_id}"
        if message_id is not None
        else f"session {session_id}"
        if session_id
        else f"all sessions of user {forget_user}"
    )
    if not yes and not click.confirm(f"Permanently delete {what}?", default=False):
        click.echo("nothing deleted")
        sys.exit(1)
    with _store(home, user_id) as store:
        if message_id is not None:
            count = store.forget_message(message_id)
            if not count:
                raise click.ClickException(f"no message {message_id}")
        elif session_id:
            _require_session(store, session_id)
            count = store.forget_session(session_id)
        else:
            count = store.forget_user(str(forget_user))
    click.echo(f"deleted {what} ({plural(count, 'message')})")


@sessions_group.command("rebuild-index")
@_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def rebuild_index_command(home: Path | None, user_id: str, as_json: bool) -> None:
    """Rebuild the full-text indexes from the stored messages, then verify them."""
    with _store(home, user_id) as store:
        store.rebuild_index()
        store.check_index()
    if as_json:
        echo_json({"rebuilt": True, "verified": True})
        return
    click.echo("full-text indexes rebuilt and verified")
