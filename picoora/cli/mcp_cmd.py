"""``picoora mcp``: serve picoora's memory to MCP clients (Claude Desktop, editors, other assistants).

stdio by default: stdout carries the protocol, so every other line (a storage fallback, errors)
goes to stderr. ``--http`` serves streamable HTTP on 127.0.0.1 instead, behind gateway.token (the
owner's memory; the gateway's ``/mcp`` also takes people's tokens).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config, warn

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.people import Person
    from picoora.store.protocol import Store

DEFAULT_HTTP_PORT = 18791


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP on 127.0.0.1 (needs gateway.token)."),
    port: int = typer.Option(DEFAULT_HTTP_PORT, "--port", help="The port for --http."),
) -> None:
    """Serve remember, recall, forget and list_memories on the configured store over MCP (stdio)."""
    import asyncio

    from picoora.config import secret_values, workspace_path
    from picoora.extras import missing
    from picoora.store import open_store
    from picoora.store.base import StoreError

    config = load_config(ctx)
    problem = missing("mcp")
    if problem is not None:
        raise CLIError(problem)
    if http and not config.gateway.token:
        raise CLIError("--http needs a token: set gateway.token (clients send it as 'Authorization: Bearer ...')",
                       EXIT_USAGE)
    try:
        store = open_store(config, on_fallback=warn)
    except StoreError as err:
        raise CLIError(str(err)) from None
    secrets, workspace = secret_values(config), workspace_path(config)
    try:
        if http:
            from picoora.people import Person, owner_name

            owner = Person(owner_name(config), owner=True)
            asyncio.run(_serve_http(store, config.gateway.token, owner, port, secrets=secrets, workspace=workspace))
        else:
            from picoora.mcp_server import serve_stdio

            asyncio.run(serve_stdio(store, secrets=secrets, workspace=workspace))
    except KeyboardInterrupt:
        pass
    finally:
        store.close()


async def _serve_http(store: Store, token: str, owner: Person, port: int, *, secrets: list[str],
                      workspace: Path) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Route

    from picoora.mcp_server import BearerGuard, MemoryHttpApp, fixed_store, token_checker

    memory = MemoryHttpApp(fixed_store(store), secrets=secrets, workspace=workspace)
    guarded = BearerGuard(token_checker(token, owner), memory)

    def lifespan(_app: Starlette) -> AbstractAsyncContextManager[None]:
        return memory.lifespan()

    app = Starlette(routes=[Route("/mcp", guarded), Route("/mcp/", guarded)], lifespan=lifespan)
    warn(f"picoora memory over MCP at http://127.0.0.1:{port}/mcp (Authorization: Bearer <gateway.token>)")
    await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).serve()
