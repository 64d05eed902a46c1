"""One live MCP client session, owned by one asyncio task on the caller's event loop.

The ``mcp`` client's ``async with Client(...)`` must be entered and left in the same task,
so :class:`Connection` runs it in a task of its own that holds the session open until
``close()``; any coroutine on the same loop can call tools through it meanwhile. No thread
is started: the provider's hooks are ``async def`` and the manager runs them on its event
loop. Every wait is bounded (``connect_timeout_s``, ``call_timeout_s``), so a dead or hung
server costs a turn at most one timeout and never stalls it past the manager's deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, Tool

from memoryport.errors import ProviderError
from memoryport.providers.mcp.settings import Settings

__all__ = ["Connection"]


class Connection:
    """A started MCP client session (see the module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.tools: list[Tool] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.error = ""
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """True while the session is open on the running loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._client is not None and self.loop is running

    @property
    def connecting(self) -> bool:
        """True while the first connect is still under way on the running loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        task = self._task
        return (task is not None and not task.done() and self._client is None
                and self.loop is running)

    async def start(self, wait: float) -> None:
        """Start connecting (once) and wait up to ``wait`` seconds for the tool list.

        ``ProviderError`` when the connect failed, or is still under way after ``wait``
        (it goes on in the background, bounded by ``connect_timeout_s``: a later hook
        finds the session open). Never blocks longer than ``wait``.
        """
        if self._task is None:
            self.loop = asyncio.get_running_loop()
            self._task = self.loop.create_task(self._run(), name="memoryport-mcp-client")
            self.loop.call_later(self.settings.connect_timeout_s, self._give_up)
        try:
            await asyncio.wait_for(asyncio.shield(self._ready.wait()), wait)
        except TimeoutError:
            raise ProviderError(
                f"mcp: still connecting to {self.describe()} after {wait:g} s"
            ) from None
        if self._client is None:
            raise ProviderError(f"mcp: cannot connect to {self.describe()}: {self.error}")

    def _give_up(self) -> None:
        """``connect_timeout_s`` passed: a connect still under way is abandoned."""
        task = self._task
        if task is not None and not task.done() and not self._ready.is_set():
            self.error = (
                f"no answer from the MCP server within {self.settings.connect_timeout_s} s "
                "(raise mcp.connect_timeout_s, or check the command/url)"
            )
            task.cancel()

    def describe(self) -> str:
        """The server as configured (command line or URL), for messages."""
        if self.settings.url:
            return self.settings.url
        return " ".join([self.settings.command, *self.settings.args])

    def _target(self) -> Any:
        s = self.settings
        if s.url:
            token = os.environ.get(s.token_env, "") if s.token_env else ""
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return streamable_http_client(s.url, http_client=create_mcp_http_client(headers))
        env = {**os.environ, **s.env}
        return StdioServerParameters(command=s.command, args=list(s.args), env=env)

    async def _run(self) -> None:
        try:
            mode: Any = self.settings.protocol
            async with Client(self._target(), mode=mode) as client:
                self.tools = list((await client.list_tools()).tools)
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            self.error = self.error or "the connection was cancelled"
        except BaseException as exc:  # an ExceptionGroup from the SDK too
            self.error = _reason(exc)
        else:
            self.error = self.error or "closed"
        finally:
            self._client = None
            self._ready.set()

    async def call(
        self, name: str, arguments: Mapping[str, Any], meta: Mapping[str, Any] | None = None
    ) -> CallToolResult:
        """Call a server tool; ``ProviderError`` when the session is gone or times out."""
        client = self._client
        if client is None or not self.alive:
            raise ProviderError(f"mcp: the server {self.describe()} is not connected "
                                f"({self.error or 'not started'})")
        wire_meta: Any = dict(meta) if meta else None
        try:
            return await asyncio.wait_for(
                client.call_tool(name, dict(arguments), meta=wire_meta),
                self.settings.call_timeout_s,
            )
        except TimeoutError:
            raise ProviderError(
                f"mcp: {name} took over {self.settings.call_timeout_s} s on {self.describe()}"
            ) from None
        except Exception as exc:
            if self._client is None:
                raise ProviderError(f"mcp: the server {self.describe()} went away: "
                                    f"{self.error or exc}") from None
            raise ProviderError(f"mcp: {name} failed on {self.describe()}: {exc}") from None

    async def close(self) -> None:
        """End the session (the server process is stopped); bounded, idempotent."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if task.get_loop() is not asyncio.get_running_loop():
            with contextlib.suppress(RuntimeError):  # that loop is closed: task already ended
                task.get_loop().call_soon_threadsafe(task.cancel)
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), 5.0)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 2.0)


def _reason(exc: BaseException) -> str:
    """The innermost useful message of ``exc`` (unwrapping exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
