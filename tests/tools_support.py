"""Helpers for the tool tests: a workspace context and a one-call way to run a tool through a registry."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.registry import ToolRegistry


def make_ctx(tmp_path: Path, store: Any = None, **overrides: Any) -> ToolContext:
    """A context whose workspace is ``tmp_path/ws`` (created)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return ToolContext(workspace=workspace, store=store, **overrides)


def call(tool: Tool, ctx: ToolContext, **args: Any) -> ToolResult:
    """Run one tool through a registry (validation, scrubbing, capping) with ``args``."""
    registry = ToolRegistry()
    registry.register(tool)
    return asyncio.run(registry.execute(tool.name, args, ctx))


def require_sandbox() -> None:
    """Skip, saying why, where bubblewrap cannot create its namespaces."""
    import pytest

    from picoora.tools.os_sandbox import probe

    support = probe()
    if not support.available:
        pytest.skip(f"no OS sandbox on this machine: {support.reason}")


def mcp_data(content: str) -> str:
    """What an MCP tool returned, from inside the untrusted-content fence every result comes in."""
    from picoora.untrusted import MCP_NOTICE

    head, marker, rest = content.partition("<untrusted_content ")
    assert marker and MCP_NOTICE in head, content[:300]
    return rest.split(">\n", 1)[1].removesuffix("\n</untrusted_content>")
