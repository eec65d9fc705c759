"""The ``exec`` tool: run a shell command in the workspace, bounded in time, output and reach.

The boundary is the OS sandbox (``picoora.tools.os_sandbox``): the command runs under bubblewrap
in its own PID, mount, IPC and (unless ``tools.exec.network``) network namespaces, sees the
workspace read-write and the system read-only, and cannot see ``$PICOORA_HOME``, the config, the
store's private files, the user's home or the assistant's environment. Where no sandbox can run,
exec is off, unless ``tools.exec.allow_unsandboxed`` lets commands run directly as the user.

Either way the command (bwrap, or ``sh -c`` unsandboxed) runs in its own process group with the
workspace (or a ``working_dir`` inside it) as its directory; on timeout, and when it ends, the whole
group is killed (sandboxed, the PID namespace takes every process of the command with it, ``setsid``
daemons included). Output is read while the command runs and capped, so a chatty command cannot fill
memory. A non-zero exit code is an ordinary result the model reads; a timeout is an error.

Unsandboxed, the child's environment has none of the assistant's secrets: ``PICO_*`` and ``PICOORA_*`` variables,
anything whose name says KEY/TOKEN/SECRET/PASSWORD/PASSWD/CREDENTIAL, and anything whose value
contains a known secret are dropped, and (restricted) HOME points at the workspace.
``picoora.tools.command_guard`` first refuses destructive commands, and unsandboxed also paths
outside the workspace: a friendly first check, BEST EFFORT, not the boundary (see its docstring).

Each call is bounded in processes, memory, file size and disk written (``picoora.tools.exec_limits``);
a command that reaches a limit is stopped, and the model is told which limit and which setting
raises it.

Settings read (``ToolContext.settings.tools.exec``): ``timeout_seconds``, ``max_output_chars``,
``network``, ``allow_unsandboxed``, ``max_processes``, ``max_memory_mb``, ``max_file_mb``, ``max_disk_mb``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from picoora.config import ENV_PREFIX
from picoora.secrets import meaningful
from picoora.store.limits import TOOL_OUTPUT_CHARS
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.command_guard import REFUSED, destructive_reason, path_escape_reason
from picoora.tools.exec_cgroup import CommandCgroup
from picoora.tools.exec_limits import (
    WALL_HEADROOM,
    WATCH_SECONDS,
    ExecLimits,
    Watchdog,
    after_exit_note,
    workspace_bytes,
    workspace_full,
)
from picoora.tools.exec_user import hand_over_workspace
from picoora.tools.os_sandbox import Mounts, bwrap_argv, clean_env, command_user, exec_mode
from picoora.tools.sandbox import Sandbox, SandboxError

PICOORA_PREFIX = "PICOORA_"  # PICOORA_HOME and the like: where the config and the store are
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# After the shell exits and its group is killed, how long to wait for pipes a detached
# (setsid) grandchild may still hold open before giving up on the rest of the output.
PIPE_GRACE_SECONDS = 2.0


def child_env(secrets: list[str], home: Path | None) -> dict[str, str]:
    """The current environment minus anything secret; HOME replaced when ``home`` is given."""
    known = meaningful(secrets)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith((ENV_PREFIX, PICOORA_PREFIX))
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
    stopped_by: str = ""  # the limit the watchdog stopped the command for


StopCheck = Callable[[int], "str | None"]  # given the command's pid: why it must stop now, or None


async def _wait_exit(exited: asyncio.Future[None], timeout: float, pid: int, check: StopCheck | None) -> str:
    """Wait for the command to end: '' when it did, the reason it must stop otherwise ('timeout')."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (remaining := deadline - loop.time()) > 0:
        step = remaining if check is None else min(remaining, WATCH_SECONDS)
        try:
            await asyncio.wait_for(asyncio.shield(exited), step)
            return ""
        except asyncio.TimeoutError:
            pass
        if check is not None and (reason := await asyncio.to_thread(check, pid)):
            return reason
    return "timeout"


async def run_shell(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, cap: int,
                    check: StopCheck | None = None) -> ShellOutcome:
    """Run ``argv``; kill its process group on timeout, when ``check`` finds a reason, on cancellation,
    or when it ends."""
    loop = asyncio.get_running_loop()
    transport, output = await loop.subprocess_exec(
        lambda: _CappedOutput(cap, loop), *argv, cwd=cwd, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    incomplete = False
    stopped = ""
    try:
        try:
            stopped = await _wait_exit(output.exited, timeout, transport.get_pid(), check)
        finally:
            _kill_group(transport.get_pid())
        try:
            await asyncio.wait_for(asyncio.shield(output.closed), PIPE_GRACE_SECONDS)
        except asyncio.TimeoutError:
            incomplete = True
    finally:
        transport.close()
    timed_out = stopped == "timeout"
    return ShellOutcome(output.streams[1], output.streams[2], None if stopped else transport.get_returncode(),
                        timed_out, incomplete, "" if timed_out else stopped)


def _clip(text: str, unread: int, budget: int) -> str:
    """``text`` cut to ``budget`` characters, with a note when anything (cut or never kept) was dropped."""
    more = max(len(text) - budget, 0) + unread
    return text[:budget] + f"\n... (truncated, {more} more chars)" if more else text


def format_outcome(outcome: ShellOutcome, max_chars: int, timeout: float,
                   limits: ExecLimits | None = None) -> ToolResult:
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
        return ToolResult.error(
            f"Command timed out after {timeout:g}s; it and the processes it started were killed.\n{body}")
    if outcome.stopped_by:
        return ToolResult.error(f"Command stopped: {outcome.stopped_by}; it and the processes it started were "
                                f"killed.\n{body}")
    note = after_exit_note(outcome.returncode, err, limits) if limits is not None else ""
    return ToolResult(f"{body}\nExit code: {outcome.returncode}" + (f"\n{note}" if note else ""))


def _guard_reason(command: str, cwd: Path, sandbox: Sandbox, sandboxed: bool) -> str | None:
    """Why the text guard refuses ``command``, or None (unsandboxed, paths outside the workspace too)."""
    reason = destructive_reason(command, cwd, sandbox.workspace)
    if reason is None and sandbox.restricted and not sandboxed:
        reason = path_escape_reason(command, cwd, sandbox)
    return reason


class ExecArgs(BaseModel):
    command: str = Field(min_length=1, description="Shell command (run with sh -c)")
    working_dir: str | None = Field(
        None, description="Directory to run in, relative to the workspace (default: the workspace)")


class Exec(Tool):
    name = "exec"
    description = (
        "Run a shell command in the workspace: stdout, stderr, exit code. Time-limited, output capped; "
        "sandboxed: only the workspace is writable, no network unless the user allowed it."
    )
    Args = ExecArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, ExecArgs)
        settings = ctx.settings.tools.exec
        mode = exec_mode(settings)
        if not mode.runs:
            return ToolResult.error(f"exec is {mode.description}")
        sandbox = Sandbox.from_context(ctx)
        try:
            cwd = sandbox.resolve(args.working_dir) if args.working_dir else sandbox.workspace
        except SandboxError as exc:
            return ToolResult.error(f"working_dir {args.working_dir!r}: {exc}")
        if not cwd.is_dir():
            return ToolResult.error(f"working_dir {args.working_dir or cwd} is not an existing directory")
        sandboxed = mode.name == "sandboxed"
        # In a thread: the guard tokenizes the whole command in Python (~0.4 s for 100 KB).
        reason = await asyncio.to_thread(_guard_reason, args.command, cwd, sandbox, sandboxed)
        if reason is not None:
            return ToolResult.error(REFUSED.format(reason=reason))
        limits = ExecLimits.from_config(settings)
        user = command_user(settings) if sandboxed else None
        assert not isinstance(user, Exception)  # exec_mode is "off" then
        # RLIMIT_NPROC counts per user namespace; the host uid ``user`` may have other processes.
        command = [*limits.prlimit_argv(own_process_count=sandboxed and user is None), "/bin/sh", "-c", args.command]
        if sandboxed:
            mounts = Mounts(sandbox.workspace, sandbox.hidden_paths(), writable_system=not sandbox.restricted)
            if user is not None:
                await asyncio.to_thread(hand_over_workspace, sandbox.workspace, user, mounts.hidden)
            # In a thread: as root, finding the host's root-only files reads a dozen folders (~10 ms).
            argv = await asyncio.to_thread(bwrap_argv, command, cwd, mounts, network=settings.network,
                                           tmp_bytes=limits.disk_bytes, user=user)
            env = clean_env(sandbox.workspace)
        else:
            argv = command
            env = child_env(ctx.secrets, sandbox.workspace if sandbox.restricted else None)
        used = await asyncio.to_thread(workspace_bytes, sandbox.workspace, limits.disk_bytes)
        if used >= limits.disk_bytes:
            return ToolResult.error(f"Command not run: {workspace_full(limits, used)}")
        cgroup = await asyncio.to_thread(functools.partial(
            CommandCgroup.create, memory_bytes=limits.memory_bytes, processes=limits.processes + WALL_HEADROOM))
        try:
            watchdog = Watchdog(limits, sandbox.workspace, cgroup, used)
            # Captured up to what is kept whole for read_tool_output; the model sees max_output_chars of it.
            outcome = await run_shell(cgroup.wrap(argv) if cgroup else argv, cwd, env, settings.timeout_seconds,
                                      max(settings.max_output_chars, TOOL_OUTPUT_CHARS), watchdog.check)
        finally:
            if cgroup is not None:
                await cgroup.remove()
        if not outcome.stopped_by and not outcome.timed_out and await asyncio.to_thread(watchdog.over_after_exit):
            outcome = dataclasses.replace(outcome, stopped_by=watchdog.disk_reason())
        shown = format_outcome(outcome, settings.max_output_chars, settings.timeout_seconds, limits)
        whole = format_outcome(outcome, TOOL_OUTPUT_CHARS, settings.timeout_seconds, limits)
        if whole.content != shown.content:
            shown.full = whole.content
        return shown
