"""``picoora mcp``: picoora's long-term memory as an MCP server, for other assistants and editors.

Five tools on the configured store: ``remember``, ``recall``, ``forget``, ``search_docs`` (the assistant's
own tool classes, so their argument schemas, validation, texts and secret scrubbing are the same ones the
model uses) and ``list_memories``. Only the store is opened: no model, no other tool.

Transports: stdio (``serve_stdio``; stdout carries the protocol, so nothing else may print there)
and streamable HTTP as an ASGI app (``MemoryHttpApp``) behind a bearer token (``BearerGuard``), for
``picoora mcp --http`` and the gateway's ``/mcp``. Whose memory a call reaches is the caller's:
``store_for(person)`` opens it for the call (over HTTP the person the token names; over stdio, or
``None``, the configured store's).

What MCP clients rely on: ``serverInfo.version`` is picoora's; an unknown tool is JSON-RPC error -32602;
each tool says ``openWorldHint: false`` (it reaches only this store), ``readOnlyHint`` or
``destructiveHint`` where true, and ``additionalProperties: false`` (the registry refuses unknown
arguments). A refused HTTP caller gets 401 with a plain ``WWW-Authenticate: Bearer`` and a body saying
which header to send: there is no OAuth here for a client to discover.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.docs import SearchDocs
from picoora.tools.memory import Forget, Recall, Remember, memory_label
from picoora.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import Receive, Scope, Send

    from picoora.config import Config
    from picoora.identities import Person
    from picoora.store.protocol import Store

StoreFor = Callable[["Person | None"], AbstractAsyncContextManager["Store"]]  # the caller's store, for one call
Authenticate = Callable[[str], Awaitable["Person | None"]]  # a bearer token -> its person, or None

SERVER_NAME = "picoora-memory"
INSTRUCTIONS = (
    "picoora's long-term memory: facts, preferences and decisions saved by meaning. Use recall before "
    "answering questions about the user, and remember what is worth keeping across conversations."
)
MAX_LISTED = 200
PERSON_SCOPE_KEY = "picoora.person"  # the ASGI scope key carrying the caller of an HTTP request
TOKEN_NEEDED = ("this MCP endpoint needs 'Authorization: Bearer <token>': gateway.token, or a person's API token "
                "from `picoora token create NAME` (no OAuth)")


class ListMemoriesArgs(BaseModel):
    limit: int = Field(50, ge=1, le=MAX_LISTED, description="How many memories to list, newest first")


class ListMemories(Tool):
    name = "list_memories"
    description = "List stored memories, newest first, with their IDs, categories and importance."
    Args = ListMemoriesArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, ListMemoriesArgs)
        memories = await asyncio.to_thread(ctx.store.memories.list, args.limit)
        if not memories:
            return ToolResult("No memories stored yet.")
        lines = [f"{len(memories)} memories, newest first:"]
        lines += [f"- {memory_label(m)} {m.content}" for m in memories]
        return ToolResult("\n".join(lines))


MEMORY_SERVER_TOOLS: tuple[type[Tool], ...] = (Remember, Recall, Forget, ListMemories, SearchDocs)
_READ_ONLY = {"recall", "list_memories", "search_docs"}
_DESTRUCTIVE = {"forget"}


def memory_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for tool_class in MEMORY_SERVER_TOOLS:
        registry.register(tool_class())
    return registry


def fixed_store(store: Store) -> StoreFor:
    """``store`` for every caller (stdio and ``picoora mcp --http``: one person's memory)."""

    @asynccontextmanager
    async def store_for(_person: Person | None) -> AsyncIterator[Store]:
        yield store

    return store_for


@asynccontextmanager
async def people_stores(config: Config, owner_store: Store) -> AsyncIterator[StoreFor]:
    """A ``StoreFor`` giving the owner ``owner_store`` and each other person their own store (opened at their
    first call, kept until the block ends, then closed): ``picoora mcp --http`` with people's tokens."""
    from picoora.store.scoped import open_person_store

    opened: dict[str, Store] = {}

    @asynccontextmanager
    async def store_for(person: Person | None) -> AsyncIterator[Store]:
        if person is None or person.owner:
            yield owner_store
            return
        if person.name not in opened:
            opened[person.name] = open_person_store(config, owner_store, person.name)
        yield opened[person.name]

    try:
        yield store_for
    finally:
        for store in opened.values():
            store.close()


def people_tokens(config: Config, store: Store, config_file: Path | None) -> Authenticate:
    """An ``Authenticate`` admitting gateway.token as the owner and each person's API token as that person
    (``picoora.api_tokens``, looked up in ``store``, the owner's, off the event loop)."""
    from picoora.api_tokens import ApiTokens
    from picoora.identities import Person, owner_name

    owner_token = token_checker(config.gateway.token, Person(owner_name(config), owner=True))
    tokens = ApiTokens(store, config, config_file=config_file)

    async def authenticate(given: str) -> Person | None:
        return await owner_token(given) or await asyncio.to_thread(tokens.person_of, given)

    return authenticate


def build_memory_server(store_for: StoreFor, *, secrets: list[str] | None = None,
                        workspace: Path | None = None) -> Server:
    """An MCP server (the SDK's low-level ``Server``) whose tools run on the caller's store."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from picoora import __version__

    registry = memory_registry()
    schemas = {name: _refusing_extras(registry.get(name).schema()["function"])  # type: ignore[union-attr]
               for name in registry.names()}

    def listed(name: str) -> types.Tool:
        fn = schemas[name]
        hints = types.ToolAnnotations(read_only_hint=name in _READ_ONLY, destructive_hint=name in _DESTRUCTIVE,
                                      open_world_hint=False)
        return types.Tool(name=name, description=fn["description"], input_schema=fn["parameters"], annotations=hints)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[listed(name) for name in schemas])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in schemas:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}; the tools are {', '.join(schemas)}")
        async with store_for(_caller(ctx)) as store:
            tool_ctx = ToolContext(workspace=workspace or Path.cwd(), store=store, session_key="mcp",
                                   secrets=list(secrets or []))
            result = await registry.execute(params.name, params.arguments or {}, tool_ctx)
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.content)],
                                    is_error=result.is_error)

    def input_schema(name: str) -> dict[str, Any] | None:
        fn = schemas.get(name)
        return fn["parameters"] if fn else None

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, get_tool_input_schema=input_schema)


def _refusing_extras(function: dict[str, Any]) -> dict[str, Any]:
    """The tool's schema saying what the registry does: an argument it does not name is refused. (Only for
    MCP clients: the model's own schemas stay as they are, every word of them costs prompt tokens.)"""
    return {**function, "parameters": {**function["parameters"], "additionalProperties": False}}


def _caller(ctx: Any) -> Person | None:
    request = getattr(ctx, "request", None)  # the HTTP request of this message; None over stdio
    scope = getattr(request, "scope", None) or {}
    return scope.get(PERSON_SCOPE_KEY)


async def serve_stdio(store: Store, *, secrets: list[str] | None = None, workspace: Path | None = None) -> None:
    """Serve one client on this process's stdin and stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    server = build_memory_server(fixed_store(store), secrets=secrets, workspace=workspace)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _bearer_token(scope: Scope) -> str:
    """The token of the request's ``Authorization: Bearer <token>``, or ""."""
    header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _send_unauthorized(send: Send, message: str) -> None:
    """401 with a plain Bearer challenge (no ``resource_metadata``: nothing to discover) and which header to send."""
    body = json.dumps({"error": {"type": "unauthorized", "message": message}}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": body})


def token_checker(token: str, person: Person) -> Authenticate:
    """An ``Authenticate`` admitting ``token`` alone, as ``person`` (compared in constant time)."""
    if not token:
        raise ValueError("the MCP memory endpoint needs a token (gateway.token)")
    expected = token.encode("utf-8", "surrogatepass")

    async def authenticate(given: str) -> Person | None:
        return person if hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected) else None

    return authenticate


class MemoryHttpApp:
    """The memory server over streamable HTTP, as an ASGI app for a caller already authenticated (the person in
    the scope under ``PERSON_SCOPE_KEY``; put ``BearerGuard`` in front, or check the token yourself).

    Serve it at any path (it does no routing of its own) and run ``lifespan()`` for as long as it serves: the
    SDK's session manager lives in it (a mounted app's own lifespan is not run by Starlette)."""

    def __init__(self, store_for: StoreFor, *, secrets: list[str] | None = None, workspace: Path | None = None,
                 host: str = "127.0.0.1"):
        server = build_memory_server(store_for, secrets=secrets, workspace=workspace)
        # host: the DNS-rebinding guard admits only Host headers naming a loopback address when it is one.
        server.streamable_http_app(host=host)  # sets up the session manager with the SDK's guards
        self._server = server

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._server.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._server.session_manager.handle_request(scope, receive, send)


class BearerGuard:
    """An ASGI app that lets only ``Authorization: Bearer <token>`` naming a person through to ``inner``, with that
    person in the scope under ``PERSON_SCOPE_KEY``; anyone else gets 401 saying ``refusal``."""

    def __init__(self, authenticate: Authenticate, inner: Any, refusal: str = TOKEN_NEEDED):
        self._authenticate, self._inner, self._refusal = authenticate, inner, refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        token = _bearer_token(scope)
        person = await self._authenticate(token) if token else None
        if person is None:
            await _send_unauthorized(send, self._refusal)
            return
        scope[PERSON_SCOPE_KEY] = person
        await self._inner(scope, receive, send)
