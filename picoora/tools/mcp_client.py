"""MCP servers as tools: ``tools.mcp_servers`` in the config, through the official ``mcp`` SDK.

Each enabled server gets one long-lived connection task (the SDK's contexts must be entered and left
in one task): a stdio subprocess (``command``, ``args``, ``env`` over a minimal environment, run in
the workspace, its stderr going to ``$PICOORA_HOME/logs/mcp-<name>.log``) or a streamable HTTP
``url`` with ``headers``. A stdio server runs in exec's OS sandbox (``os_sandbox.server_argv``: no
capabilities, the system read-only, the config, the store and home covered, the host's network only
with its ``network`` setting; under a root gateway as ``tools.exec.run_as``, see ``exec_user``); where
none can run, it starts only if ``tools.exec.allow_unsandboxed``.
The servers start before the first turn lists its tools, all at once, each bounded by its
``startup_timeout_seconds``: a server that fails, hangs or dies is reported once (a notice) and its tools
are left out; the turn goes on without them.

The model sees ``<server>__<tool>`` (only the tools in ``allow_tools`` when that is set), with the
description cut short and the server's JSON schema. Calls go through the registry like every other
tool (arguments checked against that schema, the result scrubbed of secrets and capped), each under
the server's ``timeout_seconds`` and ``max_output_chars``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from picoora.config import ExecToolConfig, McpServerConfig
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.exec_user import HOW_TO_FIX, NoExecUser, hand_over_workspace
from picoora.tools.os_sandbox import command_user, server_argv
from picoora.tools.os_sandbox import probe as probe_sandbox
from picoora.tools.sandbox import Sandbox
from picoora.tools.tool_outputs import head_and_tail
from picoora.untrusted import MCP_NOTICE, one_line, wrap_untrusted

if TYPE_CHECKING:
    from mcp import Client

    from picoora.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
# A server's failure reaches the user as a turn's notice (or a line of `picoora status`); the log line is
# for a gateway's operator. A terminal shows the notice or the line on the same screen, so it drops the log.
_TOLD = "picoora_told_elsewhere"


def _not_told(record: logging.LogRecord) -> bool:
    return not getattr(record, _TOLD, False)


def quiet_failures_told_elsewhere() -> None:
    """For a terminal command: no log line for a server failure it shows anyway."""
    log.addFilter(_not_told)  # the same function each time: added once

NAME_SEPARATOR = "__"
MAX_TOOL_NAME = 64  # what OpenAI-style function names allow
DESCRIPTION_CHARS = 160
PARAMETER_DESCRIPTION_CHARS = 100
MAX_SCHEMA_CHARS = 8000  # a tool whose argument schema is larger is left out: every turn would pay for it
MAX_LISTED_TOOLS = 200
STOP_SECONDS = 5.0
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    return _UNSAFE_NAME_CHARS.sub("_", f"{server}{NAME_SEPARATOR}{tool}")[:MAX_TOOL_NAME]


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema with long parameter descriptions cut (they are paid for on every turn)."""
    schema = dict(schema or {"type": "object"})
    schema.setdefault("type", "object")
    props = schema.get("properties")
    if isinstance(props, dict):
        schema["properties"] = {
            key: {**value, "description": one_line(str(value["description"]), PARAMETER_DESCRIPTION_CHARS)}
            if isinstance(value, dict) and "description" in value else value
            for key, value in props.items()
        }
    return schema


def describe_error(exc: BaseException) -> str:
    """One line for people, from whatever the SDK, anyio or the OS raised (groups unwrapped)."""
    while getattr(exc, "exceptions", None):  # an exception group (anyio task groups raise them)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def render_result(result: Any) -> str:
    """An MCP tool result as text: text parts as they are, other parts by a short placeholder."""
    parts: list[str] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and getattr(item.resource, "text", None) is not None:
            parts.append(item.resource.text)
        elif kind == "resource_link":
            parts.append(f"[resource: {item.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content ({getattr(item, 'mime_type', '') or 'no type'}) not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(parts) if parts else "(the tool returned nothing)"


class _AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass
class McpConnection:
    """One server: its state (``starting``, ``up``, ``failed``), its listed tools and its client."""

    name: str
    cfg: McpServerConfig
    workspace: Path
    log_dir: Path
    # tools.exec: allow_unsandboxed lets a stdio server run without a sandbox; run_as is whom it runs as under root
    exec_settings: ExecToolConfig = field(default_factory=ExecToolConfig)
    state: str = "starting"
    error: str = ""
    tools: list[Any] = field(default_factory=list)
    client: Client | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    reported: bool = False
    log_offset: int = 0  # where this run's stderr starts in the log file

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp-{self.name}")

    async def wait_ready(self) -> None:
        try:
            await asyncio.wait_for(self.ready.wait(), self.cfg.startup_timeout_seconds)
        except asyncio.TimeoutError:
            self.fail(f"did not start within {self.cfg.startup_timeout_seconds:g} s")
            if self.task is not None:  # stopping it can take seconds (the SDK's shutdown grace): not the turn's
                self.task.cancel()

    def fail(self, reason: str) -> None:
        if self.state != "failed":
            self.state, self.error = "failed", reason
            log.warning("MCP server %s: %s", self.name, reason, extra={_TOLD: True})
        self.ready.set()
        self.stop.set()

    def _launch_problem(self) -> str:
        """Why this stdio server cannot start, or ''."""
        if not self.cfg.command:
            return ""
        if shutil.which(self.cfg.command) is None:
            return f"command not found ({self.cfg.command})"
        support = probe_sandbox()
        if support.available:
            user = command_user(self.exec_settings)
            return f"the gateway runs as root and {user}; {HOW_TO_FIX}" if isinstance(user, NoExecUser) else ""
        if self.exec_settings.allow_unsandboxed:
            return ""
        return f"no OS sandbox for stdio servers: {support.reason}; tools.exec.allow_unsandboxed runs them without one"

    def _command(self) -> tuple[str, list[str]]:
        """The stdio server's command and arguments, inside the sandbox wherever one runs."""
        if not probe_sandbox().available:
            return self.cfg.command, list(self.cfg.args)
        hidden = Sandbox.for_workspace(self.workspace).hidden_paths()
        user = command_user(self.exec_settings)
        assert not isinstance(user, NoExecUser)  # _launch_problem refused the start then
        if user is not None:
            hand_over_workspace(self.workspace.resolve(), user, hidden)
        argv = server_argv([self.cfg.command, *self.cfg.args], self.workspace.resolve(), hidden,
                           network=self.cfg.network, user=user)
        return argv[0], argv[1:]

    async def _run(self) -> None:
        from picoora.extras import missing

        problem = missing("mcp")
        if problem is not None:
            self.fail(problem)
            return
        from mcp import Client

        if problem := self._launch_problem():
            self.fail(problem)
            return
        try:
            async with Client(self._transport()) as client:
                self.tools = await _list_tools(client)
                self.client, self.state = client, "up"
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:  # the SDK raises groups, OSError, MCPError: all mean "this server is out"
            self.fail(describe_error(exc) + self._stderr_tail())
        finally:
            self.client = None
            if self.state == "up":
                self.state = "failed"
                self.error = self.error or "stopped"
            self.ready.set()

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        if self.cfg.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            self.log_dir.mkdir(parents=True, exist_ok=True)
            self.log_offset = self._log_path().stat().st_size if self._log_path().exists() else 0
            command, args = self._command()
            params = StdioServerParameters(command=command, args=args, env=self.cfg.env or None,
                                           cwd=str(self.workspace) if self.workspace.is_dir() else None)
            with self._log_path().open("a", encoding="utf-8") as errlog:
                async with stdio_client(params, errlog=errlog) as streams:
                    yield streams
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            timeout = httpx2.Timeout(self.cfg.startup_timeout_seconds, read=max(self.cfg.timeout_seconds, 30.0))
            async with create_mcp_http_client(headers=dict(self.cfg.headers) or None, timeout=timeout) as http:
                async with streamable_http_client(self.cfg.url, http_client=http) as streams:
                    yield streams

    def _log_path(self) -> Path:
        return self.log_dir / f"mcp-{_UNSAFE_NAME_CHARS.sub('_', self.name)}.log"

    def _stderr_tail(self) -> str:
        if not self.cfg.command:
            return ""
        try:
            with self._log_path().open("rb") as handle:
                handle.seek(self.log_offset)
                text = handle.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()]
        return f"; its last error output: {one_line(lines[-1], 200)}" if lines else ""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        client = self.client
        if self.state != "up" or client is None:
            return ToolResult.error(f"MCP server {self.name} is not running ({self.error or 'not started'})")
        timeout = self.cfg.timeout_seconds
        try:
            result = await asyncio.wait_for(client.call_tool(name, arguments), timeout)
        except asyncio.TimeoutError:
            return ToolResult.error(f"MCP server {self.name} did not answer {name} within {timeout:g} s")
        except Exception as exc:
            from mcp import MCPError
            from mcp_types import CONNECTION_CLOSED

            if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:  # the server answered with an error
                return ToolResult.error(f"{self.name} {name}: {describe_error(exc)}")
            self.fail(f"the connection ended ({describe_error(exc)}){self._stderr_tail()}")
            return ToolResult.error(f"MCP server {self.name} stopped while running {name}: {self.error}")
        whole = render_result(result)
        text = head_and_tail(whole, self.cfg.max_output_chars) if len(whole) > self.cfg.max_output_chars else whole
        prefix = "Error: " if result.is_error else ""
        # A server is someone else's program: what it returns is data, fenced like a web page (in a thread:
        # the marker scan is linear in a result that may be large).
        source = f"mcp:{self.name}/{name}"
        marked = await asyncio.to_thread(lambda: [wrap_untrusted(t, source, notice=MCP_NOTICE) for t in (text, whole)])
        return ToolResult(prefix + marked[0], is_error=bool(result.is_error),
                          full=prefix + marked[1] if text != whole else None)

    async def close(self) -> None:
        self.stop.set()
        if self.task is None:
            return
        _, pending = await asyncio.wait({self.task}, timeout=STOP_SECONDS)
        if pending:
            self.task.cancel()
            await asyncio.wait({self.task})  # a cancelled task still stops its process


async def _list_tools(client: Client) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    while len(tools) < MAX_LISTED_TOOLS:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools[:MAX_LISTED_TOOLS]


class McpTool(Tool):
    """One tool of an MCP server, offered while the server is up."""

    Args = _AnyArgs

    def __init__(self, connection: McpConnection, listed: Any):
        from jsonschema.validators import validator_for

        self.connection = connection
        self.remote_name = listed.name
        self.name = tool_name(connection.name, listed.name)  # type: ignore[misc]
        self.description = one_line(listed.description or listed.title or listed.name, DESCRIPTION_CHARS)  # type: ignore[misc]
        self.parameters = compact_schema(listed.input_schema)
        if len(json.dumps(self.parameters)) > MAX_SCHEMA_CHARS:
            raise ValueError(f"its argument schema is larger than {MAX_SCHEMA_CHARS} characters")
        validator_class = validator_for(self.parameters)
        validator_class.check_schema(self.parameters)  # a broken schema: this tool is left out
        self._validator = validator_class(self.parameters)
        self._schema: dict[str, Any] | None = None

    def available(self) -> bool:
        return self.connection.state == "up"

    def schema(self) -> dict[str, Any]:  # type: ignore[override]
        # One dict per tool, like the built-in tools' (providers' adapters build their own from it).
        if self._schema is None:
            self._schema = {"type": "function", "function": {"name": self.name, "description": self.description,
                                                             "parameters": self.parameters}}
        return self._schema

    def check_arguments(self, arguments: dict[str, Any]) -> list[str]:
        """What is wrong with ``arguments`` by the server's schema (the registry calls this)."""
        problems = []
        for error in sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(part) for part in error.absolute_path) or "(arguments)"
            problems.append(f"{where}: {one_line(error.message, 200)}")
        return problems

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self.connection.call(self.remote_name, dict(args))


class McpServers:
    """The configured servers as a tool source (see ``ToolRegistry.add_source``)."""

    def __init__(self, servers: dict[str, McpServerConfig], workspace: Path, log_dir: Path,
                 exec_settings: ExecToolConfig | None = None):
        self.connections = [McpConnection(name, cfg, workspace, log_dir, exec_settings or ExecToolConfig())
                            for name, cfg in servers.items() if cfg.enabled]
        self._started = False
        self._lock: asyncio.Lock | None = None

    async def prepare(self, registry: ToolRegistry) -> list[str]:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # two first turns at once start the servers once
            if not self._started:
                self._started = True
                await self.start_all()
                for connection in self.connections:
                    self._register(registry, connection)
        return self._new_failures()

    async def start_all(self) -> None:
        """Start every server at once; returns when each is up, has failed or ran out of startup time."""
        for connection in self.connections:
            connection.start()
        await asyncio.gather(*(c.wait_ready() for c in self.connections))

    def _register(self, registry: ToolRegistry, connection: McpConnection) -> None:
        allowed = set(connection.cfg.allow_tools)
        listed = {tool.name for tool in connection.tools}
        for missing in sorted(allowed - listed):
            log.warning("MCP server %s lists no tool %r (tools.mcp_servers.%s.allow_tools)", connection.name,
                        missing, connection.name)
        for listed_tool in connection.tools:
            if allowed and listed_tool.name not in allowed:
                continue
            try:
                tool = McpTool(connection, listed_tool)
                registry.register(tool)
            except Exception as exc:  # a bad schema or a name taken: leave this one tool out
                log.warning("MCP server %s: tool %r left out: %s", connection.name, listed_tool.name,
                            describe_error(exc))

    def _new_failures(self) -> list[str]:
        notices = []
        for connection in self.connections:
            if connection.state == "failed" and not connection.reported:
                connection.reported = True
                notices.append(f"MCP server {connection.name!r} is not available ({connection.error}); "
                               "its tools are left out.")
        return notices

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections))


@dataclass
class ServerReport:
    name: str
    ok: bool
    text: str


async def probe(servers: dict[str, McpServerConfig], workspace: Path, log_dir: Path,
                exec_settings: ExecToolConfig | None = None) -> list[ServerReport]:
    """Start every configured server once, count its tools, stop it: for ``picoora status``."""
    reports = []
    source = McpServers(servers, workspace, log_dir, exec_settings)
    await source.start_all()
    for name, cfg in servers.items():
        connection = next((c for c in source.connections if c.name == name), None)
        if connection is None:
            reports.append(ServerReport(name, True, "disabled"))
        elif connection.state == "up":
            offered = [t for t in connection.tools if not cfg.allow_tools or t.name in cfg.allow_tools]
            allowed = f" ({len(offered)} allowed)" if cfg.allow_tools else ""
            reports.append(ServerReport(name, True, f"{len(connection.tools)} tools{allowed}"))
        else:
            reports.append(ServerReport(name, False, connection.error))
    await source.aclose()
    return reports
