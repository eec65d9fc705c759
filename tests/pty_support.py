"""Driving the REPL on a pseudo-terminal (prompt_toolkit needs one; tmux may be absent in CI)."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.cli_support import REPO


def read_until(fd: int, needle: bytes, seconds: float = 20.0, *, ended: Callable[[], bool] | None = None) -> bytes:
    """What ``fd`` gives until ``needle`` shows, the terminal closes, ``seconds`` pass, or (when nothing is
    waiting to be read) ``ended()`` says the child is gone."""
    seen = b""
    deadline = time.monotonic() + seconds
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif ended is not None and ended():
            break
    return seen


def spawn_repl(home: Path, extra_env: dict[str, str] | None = None) -> tuple[int, int]:
    """``picoora agent`` (the REPL) on a new pseudo-terminal: (pid, the terminal's controlling fd)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(REPO)
        env = {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1",
               **(extra_env or {})}
        os.execve(sys.executable, [sys.executable, "-m", "picoora", "agent"], env)
    return pid, fd


def leave_repl(pid: int, fd: int) -> tuple[bytes, int]:
    """Type ``exit``, read to the end; (the rest of the output, exit code). Kills the REPL if it lingers."""
    try:
        os.write(fd, b"exit\r")
        output = read_until(fd, b"\0", seconds=10)
        _, status = os.waitpid(pid, 0)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)
    return output, os.waitstatus_to_exitcode(status)


def repl_session(home: Path, lines: list[str], *, wait_for: bytes = b"you>",
                 extra_env: dict[str, str] | None = None) -> tuple[str, int]:
    """Run the REPL on a terminal, type ``lines`` (each after a prompt), then leave; (all output, exit code)."""
    pid, fd = spawn_repl(home, extra_env)
    output = b""
    try:
        output = read_until(fd, wait_for)
        for line in lines:
            os.write(fd, line.encode() + b"\r")
            output += read_until(fd, wait_for)
    finally:
        rest, code = leave_repl(pid, fd)
    return (output + rest).decode("utf-8", errors="replace"), code
