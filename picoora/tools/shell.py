"""The ``exec`` tool: run a shell command in the workspace, bounded in time, output and reach.

The command runs as ``sh -c`` in its own process group with the workspace (or a ``working_dir``
inside it) as its directory. On timeout the whole group is killed, so children die too; when the
shell itself finishes, whatever it left running in the background is ended with it. Output is
read while the command runs and capped, so a chatty command cannot fill memory. A non-zero exit
code is an ordinary result the model reads (grep finding nothing exits 1); a timeout is an error.

The child's environment has none of the assistant's secrets: ``PICO_*`` variables, anything whose
name says KEY/TOKEN/SECRET/PASSWORD/PASSWD/CREDENTIAL, and anything whose value contains a known
secret are dropped. When restricted to the workspace, HOME points at the workspace too, so a bare
``cd`` or a tool reading ``~/.config`` stays inside.

Before running, ``picoora.tools.command_guard`` refuses destructive commands and (restricted)
paths outside the workspace. That guard is BEST EFFORT, not isolation: see its docstring.

Settings read (``ToolContext.settings["exec"]``, the ``tools.exec`` config section):
  ``timeout_seconds`` (default 60), ``max_output_chars`` (default 10000).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from picoora.config import ENV_PREFIX, ExecToolConfig
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.command_guard import REFUSED, destructive_reason, path_escape_reason
from picoora.tools.registry import meaningful_secrets
from picoora.tools.sandbox import Sandbox, SandboxError

SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# After the shell exits and its group is killed, how long to wait for pipes a detached
# (setsid) grandchild may still hold open before giving up on the rest of the output.
PIPE_GRACE_SECONDS = 2.0


def child_env(secrets: list[str], home: Path | None) -> dict[str, str]:
    """The current environment minus anything secret; HOME replaced when ``home`` is given."""
    known = meaningful_secrets(secrets)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(ENV_PREFIX)
        and not any(part in name.upper() for part in SECRET_NAME_PARTS)
        and not any(secret in value for secret in known)
    }
    if home is not None:
        env["HOME"] = str(home)
    return env


@dataclass
class _Captured:
    data: bytearray = field(default_factory=bytearray)
    total: int = 0  # bytes the stream produced, kept or not

    @property
    def unread(self) -> int:
        return self.total - len(self.data)


class _CappedOutput(asyncio.SubprocessProtocol):
    """Keeps the first ``cap`` bytes of stdout and stderr and drains the rest, so the child never blocks.

    ``exited`` resolves when the shell ends (asyncio's ``Process.wait`` would also wait for the pipes,
    which a background child can hold open), ``closed`` when every pipe has closed too.
    """

    def __init__(self, cap: int, loop: asyncio.AbstractEventLoop) -> None:
        self.cap = cap
        self.streams = {1: _Captured(), 2: _Captured()}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        captured = self.streams[fd]
        captured.total += len(data)
        room = self.cap - len(captured.data)
        if room > 0:
            captured.data += data[:room]

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


@dataclass
class ShellOutcome:
    stdout: _Captured
    stderr: _Captured
    returncode: int | None
    timed_out: bool
    output_incomplete: bool  # a detached process kept the pipes open past the grace period


async def run_shell(command: str, cwd: Path, env: dict[str, str], timeout: float, cap: int) -> ShellOutcome:
    """Run ``sh -c command``; kill its process group on timeout, cancellation, or when the shell ends."""
    loop = asyncio.get_running_loop()
    transport, output = await loop.subprocess_exec(
        lambda: _CappedOutput(cap, loop), "sh", "-c", command, cwd=cwd, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    timed_out = incomplete = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(output.exited), timeout)
        except asyncio.TimeoutError:
            timed_out = True
        finally:
            _kill_group(transport.get_pid())
        try:
            await asyncio.wait_for(asyncio.shield(output.closed), PIPE_GRACE_SECONDS)
        except asyncio.TimeoutError:
            incomplete = True
    finally:
        transport.close()
    return ShellOutcome(output.streams[1], output.streams[2], None if timed_out else transport.get_returncode(), timed_out, incomplete)


def _clip(text: str, unread: int, budget: int) -> str:
    """``text`` cut to ``budget`` characters, with a note when anything (cut or never kept) was dropped."""
    more = max(len(text) - budget, 0) + unread
    return text[:budget] + f"\n... (truncated, {more} more chars)" if more else text


def format_outcome(outcome: ShellOutcome, max_chars: int, timeout: float) -> ToolResult:
    out = outcome.stdout.data.decode("utf-8", errors="replace")
    err = outcome.stderr.data.decode("utf-8", errors="replace")
    # Split the budget so a flood on one stream cannot hide the other.
    err_budget = min(len(err), max(max_chars - len(out), max_chars // 2))
    parts = []
    if out:
        parts.append(_clip(out, outcome.stdout.unread, max_chars - err_budget))
    if err:
        parts.append("STDERR:\n" + _clip(err, outcome.stderr.unread, err_budget))
    body = "\n".join(parts) or "(no output)"
    if outcome.output_incomplete:
        body += "\n(output incomplete: a detached background process kept it open)"
    if outcome.timed_out:
        return ToolResult.error(f"Command timed out after {timeout:g}s; it and the processes it started were killed.\n{body}")
    return ToolResult(f"{body}\nExit code: {outcome.returncode}")


class ExecArgs(BaseModel):
    command: str = Field(min_length=1, description="Shell command (run with sh -c)")
    working_dir: str | None = Field(None, description="Directory to run in, relative to the workspace (default: the workspace)")


class Exec(Tool):
    name = "exec"
    description = (
        "Execute a shell command in the workspace and return its output (stdout, stderr, exit code). "
        "Commands are time-limited and their output is capped. Use with caution."
    )
    Args = ExecArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, ExecArgs)
        settings = ExecToolConfig.model_validate(ctx.settings.get("exec", {}))
        sandbox = Sandbox.from_context(ctx)
        try:
            cwd = sandbox.resolve(args.working_dir) if args.working_dir else sandbox.workspace
        except SandboxError as exc:
            return ToolResult.error(f"working_dir {args.working_dir!r}: {exc}")
        if not cwd.is_dir():
            return ToolResult.error(f"working_dir {args.working_dir or cwd} is not an existing directory")
        reason = destructive_reason(args.command, cwd, sandbox.workspace)
        if reason is None and sandbox.restricted:
            reason = path_escape_reason(args.command, cwd, sandbox)
        if reason is not None:
            return ToolResult.error(REFUSED.format(reason=reason))
        env = child_env(ctx.secrets, sandbox.workspace if sandbox.restricted else None)
        outcome = await run_shell(args.command, cwd, env, settings.timeout_seconds, settings.max_output_chars)
        return format_outcome(outcome, settings.max_output_chars, settings.timeout_seconds)
