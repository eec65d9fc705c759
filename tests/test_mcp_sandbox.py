"""Stdio MCP servers run in exec's sandbox (issue 21: they ran outside any sandbox, as the gateway's user).

The server here is a small MCP server written into the workspace, with tools that try what a hostile
server would: read the config and /etc/shadow, list the store, keep capabilities, reach the network.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from picoora.config import ExecToolConfig, McpServerConfig
from picoora.tools.base import ToolContext
from picoora.tools.mcp_client import McpServers
from picoora.tools.registry import ToolRegistry
from tests.fakes.ollama_server import FakeOllama
from tests.tools_support import mcp_data, require_sandbox

pytestmark = pytest.mark.slow  # real sandboxed processes: `pytest -m slow` (.ci/run) runs it

SECRET = "mcp-config-secret-0123456789"
PROBING_SERVER = '''
import os, socket
from mcp.server.mcpserver import MCPServer

server = MCPServer("probing")

@server.tool(description="A file's text, or the error.")
def read(path: str) -> str:
    try:
        with open(path, errors="replace") as handle:
            return handle.read(2000)
    except OSError as exc:
        return f"error: {exc.strerror}"

@server.tool(description="The server's capabilities.")
def caps() -> str:
    return next(line for line in open("/proc/self/status") if line.startswith("CapEff"))

@server.tool(description="Entries of a folder, or the error.")
def listing(path: str) -> str:
    try:
        return ",".join(sorted(os.listdir(path)))
    except OSError as exc:
        return f"error: {exc.strerror}"

@server.tool(description="Whether a local port answers.")
def connect(port: int) -> str:
    with socket.socket() as sock:
        sock.settimeout(2)
        return "connected" if sock.connect_ex(("127.0.0.1", port)) == 0 else "refused"

server.run("stdio")
'''


def _call_all(workspace: Path, calls: list[tuple[str, dict]], **settings) -> list[str]:
    (workspace / "probing_server.py").write_text(PROBING_SERVER)
    cfg = McpServerConfig(command=sys.executable, args=[str(workspace / "probing_server.py")], **settings)

    async def main() -> list[str]:
        source = McpServers({"probe": cfg}, workspace, workspace.parent / "logs")
        registry = ToolRegistry()
        registry.add_source(source)
        notices = await registry.prepare()
        assert notices == [], notices
        ctx = ToolContext(workspace=workspace, store=None)
        try:
            return [mcp_data((await registry.execute(f"probe__{name}", args, ctx)).content) for name, args in calls]
        finally:
            await source.aclose()

    return asyncio.run(main())


@pytest.fixture
def workspace(isolated_home):
    (isolated_home / "config.json").write_text(json.dumps({"providers": {"openai": {"api_key": SECRET}}}))
    workspace = isolated_home / "workspace"
    (workspace / ".picoora" / "sessions").mkdir(parents=True)
    return workspace


def test_a_stdio_server_cannot_read_the_config_the_store_or_host_secrets(workspace, isolated_home):
    require_sandbox()
    config = isolated_home / "config.json"
    results = _call_all(workspace, [
        ("read", {"path": str(config)}), ("listing", {"path": str(workspace / ".picoora")}),
        ("read", {"path": "/etc/shadow"}), ("caps", {}), ("read", {"path": str(workspace / "probing_server.py")}),
    ])
    assert SECRET not in "".join(results)
    assert results[1] == ""  # the store's private folder shows up empty
    assert "root:" not in results[2]
    assert "0000000000000000" in results[3]
    assert "MCPServer" in results[4]  # the workspace itself is there


def test_a_stdio_server_has_the_network_only_when_configured(workspace):
    require_sandbox()
    with FakeOllama() as target:
        port = int(target.url.rsplit(":", 1)[1].strip("/"))
        off = _call_all(workspace, [("connect", {"port": port})])
        on = _call_all(workspace, [("connect", {"port": port})], network=True)
    assert "refused" in off[0] and "connected" in on[0]


def test_without_a_sandbox_a_stdio_server_starts_only_when_unsandboxed_runs_are_allowed(workspace, monkeypatch):
    import picoora.tools.mcp_client as mcp_client
    from picoora.tools.os_sandbox import Support

    monkeypatch.setattr(mcp_client, "probe_sandbox", lambda: Support(False, "bubblewrap is not installed"))
    (workspace / "probing_server.py").write_text(PROBING_SERVER)
    cfg = McpServerConfig(command=sys.executable, args=[str(workspace / "probing_server.py")])

    async def notices(allow: bool) -> list[str]:
        source = McpServers({"probe": cfg}, workspace, workspace.parent / "logs",
                            ExecToolConfig(allow_unsandboxed=allow))
        registry = ToolRegistry()
        registry.add_source(source)
        try:
            return await registry.prepare()
        finally:
            await source.aclose()

    refused = asyncio.run(notices(False))
    assert len(refused) == 1 and "no OS sandbox for stdio servers: bubblewrap is not installed" in refused[0]
    assert "tools.exec.allow_unsandboxed" in refused[0]
    assert asyncio.run(notices(True)) == []


def test_under_a_root_gateway_a_stdio_server_runs_as_nobody(workspace):
    """uid 0 without capabilities still reads every root-only file; the server runs as tools.exec.run_as."""
    require_sandbox()
    if os.geteuid() != 0:
        pytest.skip("the gateway runs as root only in a test run as root")
    folder = Path("/var/tmp") / f"picoora-mcp-probe-{os.getpid()}"
    folder.mkdir(mode=0o755)
    try:
        (folder / "secret.txt").write_text("root-only-mcp-marker")
        (folder / "secret.txt").chmod(0o600)
        results = _call_all(workspace, [("read", {"path": str(folder / "secret.txt")}),
                                        ("read", {"path": "/proc/self/status"})])
    finally:
        shutil.rmtree(folder)
    assert results[0] == "error: Permission denied"
    assert "Uid:\t65534\t65534" in results[1]
