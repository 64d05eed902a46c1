"""``memoryport sessions``: browse, search, show, export/import, prune and forget history.

A thin shell over the configured ``SessionStore`` (``<home>/state.db`` by default, or the
PostgreSQL backend from ``config.yaml``). Errors exit with status 1 and a message on
stderr; bad options exit 2. Stored text is escaped for the terminal
(:func:`memoryport.display.printable`) and tool calls are shown as ``name(args)``.
The commands that move whole stores live in :mod:`memoryport.cli.sessions_io`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from memoryport.admin.sessions import (
    SORT_ORDERS,
    SortOrder,
    all_sessions,
    message_text,
    readable_snippet,
)
from memoryport.cli._common import Column, audited, echo_json, plural, print_table
from memoryport.cli.sessions_common import (
    open_store,
    require_session,
    session_options,
    short,
    when,
)
from memoryport.cli.sessions_io import (
    export_command,
    import_command,
    prune_command,
    rebuild_index_command,
)
from memoryport.display import printable

__all__ = ["sessions_group"]

_MAX_LIST = 10_000
_MAX_SEARCH = 1_000
_MAX_ID = 2**63 - 1


F = TypeVar("F", bound=Callable[..., Any])


def _source_options(command: F) -> F:
    """``--source`` (repeatable) and ``--all-sources``; :func:`_source_filters` reads them."""
    command = click.option(
        "--all-sources", is_flag=True, help="Include hidden sources (tool, subagent)."
    )(command)
    return click.option(
        "--source", "sources", multiple=True, help="Only these sources (repeatable)."
    )(command)


def _source_filters(sources: tuple[str, ...], all_sources: bool) -> dict[str, Any]:
    """The store's ``sources``/``exclude_sources`` keywords for :func:`_source_options`:
    ``--all-sources`` excludes nothing; otherwise the store hides its hidden sources."""
    return {"sources": sources or None, "exclude_sources": () if all_sources else None}


@click.group("sessions")
def sessions_group() -> None:
    """Conversation history: list, search, show, export, import, prune, forget, rebuild-index."""


@sessions_group.command("list")
@session_options
@click.option(
    "--limit",
    type=click.IntRange(1, _MAX_LIST),
    default=20,
    show_default=True,
    help=f"How many sessions (1-{_MAX_LIST}); see --all.",
)
@click.option("--all", "show_all", is_flag=True, help="Every session (no --limit).")
@_source_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "sessions list")
def list_command(
    home: Path | None,
    user_id: str,
    limit: int,
    show_all: bool,
    sources: tuple[str, ...],
    all_sources: bool,
    as_json: bool,
) -> None:
    """Recent sessions, most recently active first."""
    filters = _source_filters(sources, all_sources)
    with open_store(home, user_id) as store:
        if show_all:
            rows = all_sessions(store, **filters)
        else:
            rows = store.list_sessions(limit=limit, **filters)
    if as_json:
        sessions = [{**r.session.to_dict(), "preview": r.preview} for r in rows]
        echo_json({"sessions": sessions, "count": len(sessions)})
        return
    print_table(
        "sessions",
        [Column("id", fold=True), "source", "last active", "messages", "title / preview"],
        [
            (
                printable(r.session.id),
                short(r.session.source, 20),
                when(r.session.last_active_at),
                r.session.message_count,
                short(r.session.title or r.preview, 50),
            )
            for r in rows
        ],
    )


@sessions_group.command("search")
@session_options
@click.argument("query")
@click.option(
    "--limit",
    type=click.IntRange(1, _MAX_SEARCH),
    default=20,
    show_default=True,
    help=f"How many hits (1-{_MAX_SEARCH}).",
)
@click.option("--sort", type=click.Choice(SORT_ORDERS), default=SORT_ORDERS[0])
@click.option("--role", "roles", multiple=True, help="Only these roles (repeatable).")
@_source_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "sessions search", target="query")
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
    with open_store(home, user_id) as store:
        result = store.search_messages(
            query,
            sort=cast(SortOrder, sort),
            limit=limit,
            roles=roles or None,
            **_source_filters(sources, all_sources),
        )
    hits = [(h, readable_snippet(h.message, h.snippet, query)) for h in result.hits]
    if as_json:
        results = [
            {**h.message.to_dict(), "snippet": snippet, "score": h.score, "source": h.source}
            for h, snippet in hits
        ]
        echo_json(
            {
                "results": results,
                "count": len(results),
                "query": query,
                "plan": result.plan,
                "warnings": result.warnings,
            }
        )
        return
    for warning in result.warnings:
        click.echo(f"note: {printable(warning)}", err=True)
    print_table(
        f"{plural(len(hits), 'hit')} ({result.plan})",
        ["message", Column("session", fold=True), "when", "role", "snippet"],
        [
            (
                h.message.id,
                printable(h.message.session_id),
                when(h.message.timestamp),
                short(h.message.role, 20),
                short(snippet, 80),
            )
            for h, snippet in hits
        ],
    )


@sessions_group.command("show")
@session_options
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "sessions show", target="session_id")
def show_command(home: Path | None, user_id: str, session_id: str, as_json: bool) -> None:
    """One session's metadata and messages (tool calls shown as ``name(args)``)."""
    with open_store(home, user_id) as store:
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
    click.echo(printable(f"{session.id}  [{session.source}]  {session.title}"))
    click.echo(
        f"started {when(session.started_at)}  ended {when(session.ended_at) or '-'}  "
        f"model {printable(session.model) or '-'}  messages {session.message_count}"
    )
    if len(lineage) > 1:
        click.echo("lineage: " + printable(" > ".join(lineage)))
    for m in messages:
        label = printable(m.role + (f":{m.tool_name}" if m.tool_name else ""))
        click.echo(f"\n#{m.id} {label} {when(m.timestamp)}\n{printable(message_text(m))}")


def _forget_target(message_id: int | None, session_id: str | None, user: str | None) -> str:
    chosen = [x for x in (message_id, session_id, user) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --message, --session, --all-of-user")
    if message_id is not None:
        return f"message {message_id}"
    if session_id is not None:
        return f"session {printable(session_id)}"
    return f"all sessions of user {printable(str(user))}"


@sessions_group.command("forget")
@session_options
@click.option(
    "--message",
    "message_id",
    type=click.IntRange(1, _MAX_ID),
    default=None,
    help="Delete one message.",
)
@click.option("--session", "session_id", default=None, help="Delete one session.")
@click.option(
    "--all-of-user",
    "forget_user",
    default=None,
    metavar="USER_ID",
    help="Delete every session of a user.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@audited("write", "sessions forget", target="session_id")
def forget_command(
    home: Path | None,
    user_id: str,
    message_id: int | None,
    session_id: str | None,
    forget_user: str | None,
    yes: bool,
) -> None:
    """Delete a message, a session, or all of a user's history (from every index).

    Answering "no" to the confirmation is not an error: it exits 0 and deletes nothing.
    """
    what = _forget_target(message_id, session_id, forget_user)
    if not yes and not click.confirm(f"Permanently delete {what}?", default=False):
        click.echo("Nothing deleted.")
        return
    with open_store(home, user_id) as store:
        if message_id is not None:
            count = store.forget_message(message_id)
            if not count:
                raise click.ClickException(f"no message {message_id}")
        elif session_id is not None:
            require_session(store, session_id)
            count = store.forget_session(session_id)
        else:
            count = store.forget_user(str(forget_user))
    click.echo(f"deleted {what} ({plural(count, 'message')})")


for _command in (export_command, import_command, prune_command, rebuild_index_command):
    sessions_group.add_command(_command)
