"""A small MCP server for the tests, built on the SDK's MCPServer: stdio by default, ``--http PORT``
for streamable HTTP on 127.0.0.1 (``--require-header NAME=VALUE`` answers 401 without it).

``--start`` picks a misbehaviour: ``normal``, ``exit`` (write a line to stderr and exit 3 before
speaking MCP) or ``hang`` (never answer anything). ``--tools N`` serves N numbered ``tool_<i>``
tools (for the prompt budget bench) instead of the test set.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Annotated

from pydantic import Field


def build(tools: int):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("picoora-test-server")
    if tools:
        for index in range(tools):
            def numbered(query: str, limit: int = 10, index: int = index) -> str:
                return f"tool {index}: {query} ({limit})"
            server.add_tool(numbered, name=f"tool_{index}",
                            description=f"Look something up in data set {index} and return the matching rows.")
        return server

    @server.tool(description="Echo the text back. " + "This description goes on and on. " * 20)
    def echo(text: Annotated[str, Field(description="What to echo")]) -> str:
        return f"echo: {text}"

    @server.tool(description="Add two whole numbers.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Return a text of the given length.")
    def huge(size: int) -> str:
        return "x" * size

    @server.tool(description="Sleep, then answer.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="Exit the server process at once.")
    def crash() -> str:
        os._exit(7)

    @server.tool(description="The value of an environment variable in the server, or <unset>.")
    def env_value(name: str) -> str:
        return os.environ.get(name, "<unset>")

    @server.tool(description="Fail on purpose.")
    def fail() -> str:
        raise ValueError("this tool always fails")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", choices=("normal", "exit", "hang"), default="normal")
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--require-header", default="")
    parser.add_argument("--tools", type=int, default=0)
    args = parser.parse_args()
    if args.start == "exit":
        print("test server: refusing to start (no database)", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.start == "hang":
        time.sleep(3600)
    server = build(args.tools)
    if not args.http:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp")
    if args.require_header:
        name, _, value = args.require_header.partition("=")
        inner = app

        async def app(scope, receive, send):  # type: ignore[no-redef]
            headers = dict(scope.get("headers") or [])
            if scope["type"] == "http" and headers.get(name.lower().encode()) != value.encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
            await inner(scope, receive, send)
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
