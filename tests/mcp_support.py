"""Driving picoora's MCP server with the official `mcp` SDK client, over any transport, as editors do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


@asynccontextmanager
async def connect(target: Any, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """A connected ``mcp.Client``: ``target`` a URL (streamable HTTP with ``headers``) or stdio parameters."""
    from mcp import Client

    if isinstance(target, str):
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=headers) as http:
            async with Client(streamable_http_client(target, http_client=http)) as client:
                yield client
        return
    async with Client(target, read_timeout_seconds=60) as client:
        yield client


async def session(target: Any, calls: list[tuple[str, dict]], headers: dict[str, str] | None = None):
    """Connect, list the tools, make ``calls``; (tool names, [(is_error, text)])."""
    async with connect(target, headers) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        return names, [await call(client, name, args) for name, args in calls]


async def call(client: Any, name: str, args: dict) -> tuple[bool, str]:
    result = await client.call_tool(name, args)
    return bool(result.is_error), "\n".join(part.text for part in result.content)


async def protocol_facts(target: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """What a client learns about the server: its version, each tool's annotations and schema as sent on
    the wire (camelCase), the JSON-RPC error of an unknown tool, and the result of an extra argument."""
    from mcp.shared.exceptions import MCPError

    async with connect(target, headers) as client:
        tools = {tool.name: tool.model_dump(by_alias=True, exclude_none=True)
                 for tool in (await client.list_tools()).tools}
        try:
            await client.call_tool("no_such_tool", {})
            unknown: Any = None
        except MCPError as err:
            unknown = (err.code, err.message)
        extra = await call(client, "list_memories", {"limit": 1, "sudo": True})
        return {"version": client.server_info.version, "tools": tools, "unknown_tool": unknown, "extra": extra}


def check_protocol_facts(facts: dict[str, Any]) -> None:
    """The promises of ``picoora.mcp_server`` to MCP clients, whichever the transport."""
    from picoora import __version__

    assert facts["version"] == __version__
    for name, tool in facts["tools"].items():
        hints = tool["annotations"]
        assert hints["openWorldHint"] is False, name
        assert hints["readOnlyHint"] is (name in {"recall", "list_memories", "search_docs"}), name
        assert hints["destructiveHint"] is (name == "forget"), name
        assert tool["inputSchema"]["additionalProperties"] is False, name
    code, message = facts["unknown_tool"]
    assert code == -32602 and "no_such_tool" in message and "remember" in message
    failed, text = facts["extra"]
    assert failed and "sudo: unknown field" in text
