"""``memoryport serve``: the MCP server over stdio (default) or streamable HTTP.

See ``docs/mcp.md`` for client configuration. Needs the ``mcp`` extra.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import click

from memoryport.cli._common import get_home, home_option

__all__ = ["serve_command"]

TOKEN_ENV = "MEMORYPORT_MCP_TOKEN"


def _tokens(token: str | None, tokens_file: Path | None) -> dict[str, str]:
    tokens: dict[str, str] = {}
    if token is not None:
        if not token.strip():
            raise click.BadParameter("the token is empty; pass a long random string",
                                     param_hint="--token")
        tokens[token.strip()] = ""
    if tokens_file is not None:
        try:
            data: Any = json.loads(tokens_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise click.BadParameter(f"cannot read {tokens_file}: {exc}",
                                     param_hint="--tokens-file") from None
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in data.items()
        ):
            raise click.BadParameter(
                'expected a JSON object {"<token>": "<user id>", ...} with non-empty tokens',
                param_hint="--tokens-file",
            )
        tokens.update({k.strip(): v for k, v in data.items()})
    return tokens


@click.command("serve")
@click.option("--http", "use_http", is_flag=True,
              help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP bind address (beyond loopback a bearer token is required).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True,
              help="HTTP port.")
@click.option("--path", "http_path", default="/mcp", show_default=True, help="HTTP endpoint.")
@click.option("--token", envvar=TOKEN_ENV, default=None,
              help=f"Bearer token HTTP clients must send [env: {TOKEN_ENV}].")
@click.option("--tokens-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help='JSON {"<token>": "<user id>"}: each token acts for its user.')
@click.option("--user", "user_id", default="",
              help="User of requests that name none (default: the home's single user).")
@click.option("--max-argument-bytes", type=click.IntRange(1024, 64 * 1024 * 1024),
              default=256 * 1024, show_default=True,
              help="Largest tool-call arguments accepted (serialized JSON).")
@click.option("--max-clients", type=click.IntRange(1, 10_000), default=64, show_default=True,
              help="Most clients with an open session at once.")
@home_option
def serve_command(
    use_http: bool, host: str, port: int, http_path: str, token: str | None,
    tokens_file: Path | None, user_id: str, max_argument_bytes: int, max_clients: int,
    home: Path | None,
) -> None:
    """Serve this memory to MCP clients (Claude Desktop, Cursor, VS Code, agents)."""
    try:
        import anyio

        from memoryport.mcp import ServeOptions, build_server
        from memoryport.mcp.http import is_loopback
    except ImportError as exc:
        raise click.ClickException(
            f"the MCP server needs the mcp extra ({exc}); install it with: "
            "pip install 'memoryport[mcp]'"
        ) from None
    tokens = _tokens(token, tokens_file)
    if tokens and not use_http:
        raise click.UsageError("--token/--tokens-file apply to --http only (stdio has no auth)")
    options = ServeOptions(user_id=user_id, max_argument_bytes=max_argument_bytes,
                           max_clients=max_clients, tokens=tokens)
    if use_http and not tokens and not is_loopback(host):
        raise click.UsageError(
            f"refusing to listen on {host} without a bearer token: anyone who can reach it "
            f"could read and write this memory. Pass --token (or {TOKEN_ENV}, or "
            "--tokens-file), or bind 127.0.0.1."
        )
    resolved = get_home(None, home)
    server = build_server(resolved, options)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if use_http:
            click.echo(f"memoryport MCP server on http://{host}:{port}{http_path}", err=True)
            anyio.run(_run_http, server, host, port, http_path)
        else:
            from memoryport.mcp.stdio import serve_stdio

            anyio.run(serve_stdio, server.mcp)
    except KeyboardInterrupt:
        pass  # SIGINT/SIGTERM: a normal stop
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM stops the server like Ctrl+C, so every client's session is closed."""
    raise KeyboardInterrupt


async def _run_http(server: Any, host: str, port: int, path: str) -> None:
    from memoryport.mcp.http import serve_http

    await serve_http(server, host=host, port=port, path=path)
