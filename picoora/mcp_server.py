"""``picoora mcp``: picoora's long-term memory as an MCP server, for other assistants and editors.

Four tools on the configured store: ``remember``, ``recall``, ``forget`` (the assistant's own tool
classes, so their argument schemas, validation, texts and secret scrubbing are the same ones the
model uses) and ``list_memories``. Only the store is opened: no model, no other tool.

Transports: stdio (``serve_stdio``; stdout carries the protocol, so nothing else may print there)
and streamable HTTP as a mountable ASGI app behind a bearer token (``MemoryHttpApp``), for the
gateway to serve next to its own endpoints.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.memory import Forget, Recall, Remember, memory_label
from picoora.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import Receive, Scope, Send

    from picoora.store.base import Store

SERVER_NAME = "picoora-memory"
INSTRUCTIONS = (
    "picoora's long-term memory: facts, preferences and decisions saved by meaning. Use recall before "
    "answering questions about the user, and remember what is worth keeping across conversations."
)
MAX_LISTED = 200


class ListMemoriesArgs(BaseModel):
    limit: int = Field(50, ge=1, le=MAX_LISTED, description="How many memories to list, newest first")


class ListMemories(Tool):
    name = "list_memories"
    description = "List stored memories, newest first, with their IDs, categories and importance."
    Args = ListMemoriesArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, ListMemoriesArgs)
        memories = await asyncio.to_thread(ctx.store.list_memories, args.limit)
        if not memories:
            return ToolResult("No memories stored yet.")
        lines = [f"{len(memories)} memories, newest first:"]
        lines += [f"- {memory_label(m)} {m.content}" for m in memories]
        return ToolResult("\n".join(lines))


MEMORY_SERVER_TOOLS: tuple[type[Tool], ...] = (Remember, Recall, Forget, ListMemories)
_READ_ONLY = {"recall", "list_memories"}


def memory_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for tool_class in MEMORY_SERVER_TOOLS:
        registry.register(tool_class())
    return registry


def build_memory_server(store: Store, *, secrets: list[str] | None = None, workspace: Path | None = None) -> Server:
    """An MCP server (the SDK's low-level ``Server``) whose tools run on ``store``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    registry = memory_registry()
    ctx = ToolContext(workspace=workspace or Path.cwd(), store=store, session_key="mcp", secrets=list(secrets or []))
    schemas = {name: registry.get(name).schema()["function"] for name in registry.names()}  # type: ignore[union-attr]

    def listed(name: str) -> types.Tool:
        fn = schemas[name]
        hints = types.ToolAnnotations(read_only_hint=name in _READ_ONLY, destructive_hint=name == "forget")
        return types.Tool(name=name, description=fn["description"], input_schema=fn["parameters"], annotations=hints)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[listed(name) for name in schemas])

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await registry.execute(params.name, params.arguments or {}, ctx)
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.content)],
                                    is_error=result.is_error)

    def input_schema(name: str) -> dict[str, Any] | None:
        fn = schemas.get(name)
        return fn["parameters"] if fn else None

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=input_schema)


async def serve_stdio(store: Store, *, secrets: list[str] | None = None, workspace: Path | None = None) -> None:
    """Serve one client on this process's stdin and stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    server = build_memory_server(store, secrets=secrets, workspace=workspace)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class MemoryHttpApp:
    """The memory server over streamable HTTP, as an ASGI app that wants ``Authorization: Bearer <token>``.

    Mount ``app`` anywhere (``Mount("/mcp", app=memory.app)`` serves it at ``/mcp/``) and run
    ``lifespan()`` for as long as it serves (a mounted app's own lifespan is not run by Starlette)."""

    def __init__(self, store: Store, token: str, *, secrets: list[str] | None = None, workspace: Path | None = None,
                 host: str = "127.0.0.1"):
        if not token:
            raise ValueError("the MCP memory endpoint needs a token (gateway.token)")
        server = build_memory_server(store, secrets=secrets, workspace=workspace)
        # host: the DNS-rebinding guard admits only Host headers naming a loopback address when it is one.
        self._inner = server.streamable_http_app(streamable_http_path="/", host=host)
        self._server = server
        self._expected = f"Bearer {token}".encode()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._server.session_manager.run():
            yield

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": b'{"error": "missing or wrong bearer token"}'})
            return
        await self._inner(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return hmac.compare_digest(given, self._expected)
