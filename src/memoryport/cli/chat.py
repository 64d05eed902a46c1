"""``memoryport chat``: an interactive terminal chat with the reference agent.

The model, base URL and API key come from the ``agent:`` block of ``config.yaml``
(``agent.model``, ``agent.base_url``, and the environment variable named by
``agent.api_key_env``); ``--model`` and ``--base-url`` override them. ``-m TEXT`` sends one
message and prints only the (scrubbed) answer. Slash commands: ``/new``, ``/resume ID``,
``/branch``, ``/title TEXT``, ``/memory``, ``/search QUERY``, ``/help``, ``/exit``.
Ctrl+C interrupts the running answer; a second Ctrl+C exits after flushing memory.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from memoryport.cli._common import get_home, plural
from memoryport.errors import MemoryportError

if TYPE_CHECKING:
    from memoryport.agent import Agent
    from memoryport.api import Memory

__all__ = ["SLASH_HELP", "chat_command", "run_command"]

PROMPT = "you> "

SLASH_HELP = """Commands:
  /new            start a new session
  /resume ID      continue a stored session
  /branch         continue in a child session (the conversation so far is kept)
  /title TEXT     name the current session
  /memory         show curated memory (MEMORY.md and USER.md entries)
  /search QUERY   search past sessions
  /retry          store turns that could not be saved (disk full, database locked)
  /help           this list
  /exit           quit (Ctrl+D works too)"""
"""The ``/help`` text."""

Echo = Callable[[str], None]


def _require_openai() -> None:
    if importlib.util.find_spec("openai") is None:
        raise click.ClickException(
            "memoryport chat needs the openai package; install memoryport[agent] "
            "(pip install 'memoryport[agent]')"
        )


def _show_memory(memory: Memory, echo: Echo) -> None:
    curated = memory.curated
    store = curated.store if curated is not None else None
    if store is None:
        echo("Curated memory is disabled.")
        return
    for target in store.targets:
        entries = store.entries(target)
        echo(f"[{target}] {plural(len(entries), 'entry')}")
        for entry in entries:
            echo("  - " + entry.replace("\n", "\n    "))


def _show_search(memory: Memory, query: str, echo: Echo) -> None:
    result: dict[str, Any] = json.loads(memory.call_tool("session_search", {"query": query}))
    if not result.get("success", False):
        echo(f"search failed: {result.get('error', 'unknown error')}")
        return
    hits = result.get("results") or []
    if not hits:
        echo(f"No past sessions match {query!r}.")
        return
    for hit in hits:
        title = hit.get("title") or "(untitled)"
        echo(f"{hit.get('session_id')}  {hit.get('when', '')}  {title}")
        echo(f"    {hit.get('snippet', '')}")


def _retry_unsaved(agent: Agent, echo: Echo) -> None:
    count = len(agent.unsaved)
    if not count:
        echo("Nothing to retry: every turn is saved.")
        return
    error = agent.save_unsaved()
    if error:
        echo(f"Still not saved ({plural(len(agent.unsaved), 'turn')}): {error}")
    else:
        echo(f"Saved {plural(count, 'turn')}.")


def unsaved_notice(error: str) -> str:
    """What the user is told when a turn could not be stored."""
    return (
        f"warning: this conversation is not saved yet: {error}\n"
        "It is kept in memory and saved with your next message; /retry tries now."
    )


def model_error(exc: Exception, agent: Agent) -> str:
    """One line for a failed model call; a connection failure names the endpoint URL."""
    from openai import APIConnectionError, APITimeoutError

    url = getattr(agent.client, "base_url", "") or "(default endpoint)"
    if isinstance(exc, APITimeoutError):
        return f"the model endpoint at {url} did not answer in time"
    if isinstance(exc, APIConnectionError):
        cause = exc.__cause__ or exc
        return (
            f"cannot reach the model endpoint at {url} ({type(cause).__name__}: {cause}); "
            "check --base-url / agent.base_url and that the server is running"
        )
    return f"model error: {type(exc).__name__}: {exc}"


def run_command(agent: Agent, line: str, echo: Echo) -> bool:
    """Run one slash command; return False when the chat should end."""
    name, _, arg = line.strip().partition(" ")
    arg = arg.strip()
    if name in ("/exit", "/quit"):
        return False
    if name == "/new":
        echo(f"New session {agent.new_session()}.")
    elif name == "/resume" and arg:
        agent.resume(arg)
        echo(f"Resumed session {arg} ({plural(len(agent.history), 'message')}).")
    elif name == "/branch":
        echo(f"Branched into session {agent.branch()}.")
    elif name == "/title" and arg:
        agent.set_title(arg)
        echo(f"Title set: {arg}")
    elif name == "/memory":
        _show_memory(agent.memory, echo)
    elif name == "/search" and arg:
        _show_search(agent.memory, arg, echo)
    elif name == "/retry":
        _retry_unsaved(agent, echo)
    elif name == "/help":
        echo(SLASH_HELP)
    else:
        echo(f"Unknown command or missing argument: {line.strip()}\n{SLASH_HELP}")
    return True


@dataclass
class _Repl:
    """The interactive loop's state: two Ctrl+C in a row end the chat."""

    agent: Agent
    interrupted: bool = False

    def write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def ask(self) -> str | None:
        try:
            line = input(PROMPT)
        except EOFError:
            return None
        except KeyboardInterrupt:
            if self.interrupted:
                return None
            self.interrupted = True
            self.write("\n(press Ctrl+C again or type /exit to quit)\n")
            return ""
        self.interrupted = False
        return line

    def answer(self, text: str) -> None:
        try:
            outcome = self.agent.run_turn(text, on_text=self.write)
        except KeyboardInterrupt:
            self.interrupted = True
            self.write("\n[interrupted — press Ctrl+C again to exit]\n")
            return
        except (MemoryportError, OSError) as exc:
            self.write(f"\nerror: {exc}\n")
            return
        except Exception as exc:  # the API client raises its own errors; show, keep going
            self.write(f"\n{model_error(exc, self.agent)}\n")
            return
        if outcome.unsaved:
            self.write(f"\n{unsaved_notice(outcome.unsaved)}")
        if outcome.interrupted:
            self.interrupted = True
            self.write("\n[interrupted — press Ctrl+C again to exit]\n")
        else:
            self.write("\n")

    def run(self) -> None:
        while True:
            line = self.ask()
            if line is None:
                return
            if not line.strip():
                continue
            if line.lstrip().startswith("/"):
                try:
                    if not run_command(self.agent, line, click.echo):
                        return
                except MemoryportError as exc:
                    click.echo(f"error: {exc}")
                continue
            self.answer(line)


def _provider_warning(message: Any) -> None:
    """``warning_callback`` for providers: a warning line on stderr."""
    from memoryport.display import printable

    click.echo(f"warning: {printable(str(message))}", err=True)


def _provider_status(message: Any) -> None:
    """``status_callback`` for providers: a status line on stderr."""
    from memoryport.display import printable

    click.echo(f"[memory] {printable(str(message))}", err=True)


def _build_agent(
    home_ctx: click.Context, model: str | None, base_url: str | None, user_id: str | None
) -> Agent:
    from memoryport.agent import Agent, ChatClient
    from memoryport.api import open_memory

    memory = open_memory(
        get_home(home_ctx), "default", user_id, platform="cli", handle_sigterm=True
    )
    memory.provider_kwargs.update(  # what Hermes' CLI passes to providers' initialize
        warning_callback=_provider_warning, status_callback=_provider_status
    )
    settings = memory.config.agent
    try:
        client = ChatClient(
            model or settings.model,
            base_url=base_url or settings.base_url or None,
            api_key_env=settings.api_key_env,
        )
    except BaseException:
        memory.close()
        raise
    return Agent(memory, client, source="cli")


def _check_user(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    user = value.strip()
    if not user or len(user) > 200 or not user.isprintable():
        raise click.BadParameter(
            "a user id is 1-200 printable characters (e.g. --user alice)", ctx, param
        )
    return user


def _one_shot(agent: Agent, message: str) -> None:
    try:
        outcome = agent.run_turn(message)
    except MemoryportError:
        raise
    except Exception as exc:  # the API client's errors become a clean exit 1
        raise click.ClickException(model_error(exc, agent)) from exc
    click.echo(outcome.text)
    if outcome.unsaved and agent.save_unsaved():
        raise click.ClickException(f"the conversation was not saved: {outcome.unsaved}")


@click.command("chat")
@click.option("-m", "--message", default=None, help="Send one message, print the answer, exit.")
@click.option("--model", default=None, help="Model name [config agent.model].")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint [agent.base_url].")
@click.option("--session", "session_id", default=None, help="Resume this session id.")
@click.option(
    "--user", "user_id", default=None, callback=_check_user,
    help="Chat as this user: sessions and search are scoped to them (multi-user agents).",
)
@click.pass_context
def chat_command(
    ctx: click.Context,
    message: str | None,
    model: str | None,
    base_url: str | None,
    session_id: str | None,
    user_id: str | None,
) -> None:
    """Chat with the reference agent (memory, session search, providers)."""
    _require_openai()
    agent = _build_agent(ctx, model, base_url, user_id)
    try:
        if session_id:
            agent.memory.sessions.get_session(session_id)  # SessionNotFound -> "Error: ..."
        agent.start(session_id)
        if message is not None:
            _one_shot(agent, message)
            return
        who = f" · user {user_id}" if user_id else ""
        click.echo(
            f"memoryport chat · model {agent.client.model}{who} · session "
            f"{agent.memory.session_id}\nType /help for commands, /exit to quit."
        )
        _Repl(agent).run()
        click.echo("Bye.")
    finally:
        try:
            agent.close()
        except KeyboardInterrupt:
            agent.memory.close()
        if agent.unsaved:
            click.echo(f"error: {plural(len(agent.unsaved), 'turn')} could not be saved", err=True)
