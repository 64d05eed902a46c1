"""``memoryport facts``: the durable facts of the ``holographic`` provider (list, search,
show, forget). A thin shell over :mod:`memoryport.admin.facts`; stored text is printed
through :func:`memoryport.display.printable`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from memoryport.admin import facts as admin_facts
from memoryport.admin.facts import Fact, FactStore
from memoryport.cli._common import Column, audited, echo_json, get_home, home_option, print_table
from memoryport.display import printable
from memoryport.errors import MemoryportError

__all__ = ["facts_group"]

F = TypeVar("F", bound=Callable[..., Any])

_MAX_LIST = 10_000
_MAX_ID = 2**63 - 1
_COLUMNS: list[str | Column] = [Column("id", fold=True), "date", "trust", "state", "fact"]


@contextmanager
def _open(home: Path | None, user_id: str) -> Iterator[FactStore]:
    try:
        with admin_facts.open_facts(get_home(None, home), user_id or None) as store:
            yield store
    except MemoryportError as exc:
        raise click.ClickException(str(exc)) from exc


def _options(func: F) -> F:
    func = click.option("--user", "user_id", default="", metavar="USER_ID",
                        help="This user's facts (default: the no-user scope).")(func)
    return home_option(func)


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch)) if epoch else "-"


def _table(title: str, facts: list[Fact]) -> None:
    rows = [
        (f.id, _when(f.valid_from or f.recorded_at), f"{f.trust_score:.2f}",
         "live" if f.live else f"retired ({f.retired_reason})", printable(f.content)[:90])
        for f in facts
    ]
    print_table(title, _COLUMNS, rows)


@click.group("facts")
def facts_group() -> None:
    """Durable facts kept by the holographic provider: list, search, show, why, forget."""


@facts_group.command("list")
@_options
@click.option("--limit", type=click.IntRange(1, _MAX_LIST), default=50, show_default=True,
              help=f"How many facts (1-{_MAX_LIST}).")
@click.option("--retired", "include_retired", is_flag=True,
              help="Also retired (superseded or removed) facts.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "facts list")
def list_command(home: Path | None, user_id: str, limit: int, include_retired: bool,
                 as_json: bool) -> None:
    """Facts newest first, also those hidden from recall by low trust."""
    with _open(home, user_id) as store:
        facts = admin_facts.list_facts(store, limit=limit, include_retired=include_retired)
    if as_json:
        echo_json({"facts": [f.to_dict() for f in facts], "count": len(facts)})
        return
    _table("facts", facts)


@facts_group.command("search")
@_options
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True,
              help="How many results (1-100).")
@click.option("--as-of", "as_of", default=None, metavar="DATE",
              help="What was believed then (2024-03-01 or an ISO date-time).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "facts search", target="query")
def search_command(home: Path | None, user_id: str, query: str, limit: int,
                   as_of: str | None, as_json: bool) -> None:
    """Live facts ranked for QUERY, as recall sees them (or as of a date)."""
    with _open(home, user_id) as store:
        try:
            facts = admin_facts.search_facts(store, query, limit=limit, as_of=as_of)
        except MemoryportError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json({"results": [f.to_dict() for f in facts], "count": len(facts),
                   "query": query} | ({"as_of": as_of} if as_of else {}))
        return
    _table(f"facts matching {printable(query)!r}", facts)


@facts_group.command("show")
@_options
@click.argument("fact_id", type=click.IntRange(1, _MAX_ID))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "facts show", target="fact_id")
def show_command(home: Path | None, user_id: str, fact_id: int, as_json: bool) -> None:
    """One fact with its entities, provenance, history and contradictions."""
    with _open(home, user_id) as store:
        try:
            shown = admin_facts.show_fact(store, fact_id)
        except MemoryportError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(shown)
        return
    fact = shown["fact"]
    click.echo(f"#{fact_id}  {printable(fact['content'])}")
    click.echo(f"trust {fact['trust_score']:.2f}  category {printable(fact['category'])}"
               f"  recorded {_when(fact['recorded_at'])}  retired {_when(fact['retired_at'])}")
    click.echo(f"source {printable(fact['source_kind'] or '-')}  session "
               f"{printable(fact['session_id'] or '-')}  speaker {printable(fact['speaker'])}")
    click.echo("entities: " + printable(", ".join(fact["entities"]) or "-"))
    for rev in shown["revisions"]:
        click.echo(f"  {_when(rev['at'])}  {rev['action']}  by {printable(rev['actor'] or '-')}")
    for pair in shown["contradictions"]:
        click.echo(f"  contradiction: {printable(pair['old_value'])} -> "
                   f"{printable(pair['new_value'])}")


@facts_group.command("why")
@_options
@click.argument("fact_id", type=click.IntRange(1, _MAX_ID))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@audited("read", "facts why", target="fact_id")
def why_command(home: Path | None, user_id: str, fact_id: int, as_json: bool) -> None:
    """Where a fact came from: session, message, source, when, and the source text."""
    with _open(home, user_id) as store:
        try:
            why = admin_facts.why_fact(store, fact_id)
        except MemoryportError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(why)
        return
    click.echo(f"#{fact_id}  {printable(why['content'])}")
    click.echo(f"source {printable(why['source_kind'] or '-')} by {printable(why['actor'] or '-')}"
               f"  session {printable(why['session_id'] or '-')}  message "
               f"{printable(why['message_id'] or '-')}  speaker {printable(why['speaker'])}")
    click.echo(f"recorded {_when(why['recorded_at'])}  valid from {_when(why['valid_from'])}"
               f"  to {_when(why['valid_to'])}")
    click.echo("said: " + printable(why["source_text"] or "(no source text kept)"))
    for fact in why["chain"]:
        state = "live" if fact["retired_at"] is None else "retired"
        click.echo(f"  chain #{fact['fact_id']} ({state}): {printable(fact['content'])}")


@facts_group.command("forget")
@_options
@click.argument("fact_id", type=click.IntRange(1, _MAX_ID))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@audited("write", "facts forget", target="fact_id")
def forget_command(home: Path | None, user_id: str, fact_id: int, yes: bool) -> None:
    """Delete a fact for good (its entities and history content too)."""
    if not yes and not click.confirm(f"Permanently delete fact #{fact_id}?", default=False):
        click.echo("Nothing deleted.")
        return
    with _open(home, user_id) as store:
        if not admin_facts.forget_fact(store, fact_id):
            raise click.ClickException(f"no fact #{fact_id}; list facts with: memoryport facts"
                                       " list")
    click.echo(f"deleted fact #{fact_id}")
