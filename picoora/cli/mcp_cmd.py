"""``picoora mcp``: serve picoora's memory to MCP clients (Claude Desktop, editors, other assistants).

stdio by default: stdout carries the protocol, so every other line (a storage fallback, errors)
goes to stderr. ``--http`` serves streamable HTTP on 127.0.0.1 instead, behind gateway.token (the owner's
memory) and people's API tokens (``picoora token create NAME``: each person's own memory), as the gateway's
``/mcp`` does.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, config_path, load_config, warn

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.config import Config
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
            asyncio.run(_serve_http(config, store, config_path(ctx), port, secrets=secrets, workspace=workspace))
        else:
            from picoora.mcp_server import serve_stdio

            asyncio.run(serve_stdio(store, secrets=secrets, workspace=workspace))
    except KeyboardInterrupt:
        pass
    finally:
        store.close()


async def _serve_http(config: Config, store: Store, config_file: Path | None, port: int, *, secrets: list[str],
                      workspace: Path) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Route

    from picoora.config import default_config_path
    from picoora.mcp_server import BearerGuard, MemoryHttpApp, people_stores, people_tokens

    async with people_stores(config, store) as store_for:
        memory = MemoryHttpApp(store_for, secrets=secrets, workspace=workspace)
        authenticate = people_tokens(config, store, config_file or default_config_path())
        guarded = BearerGuard(authenticate, memory)

        def lifespan(_app: Starlette) -> AbstractAsyncContextManager[None]:
            return memory.lifespan()

        app = Starlette(routes=[Route("/mcp", guarded), Route("/mcp/", guarded)], lifespan=lifespan)
        warn(f"picoora memory over MCP at http://127.0.0.1:{port}/mcp (Authorization: Bearer <gateway.token>, or a "
             "person's token from `picoora token create NAME`)")
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).serve()
