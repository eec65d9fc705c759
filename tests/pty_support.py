"""Driving the REPL on a pseudo-terminal (prompt_toolkit needs one; tmux may be absent in CI)."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

from tests.cli_support import REPO


def read_until(fd: int, needle: bytes, seconds: float = 20.0) -> bytes:
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
    return seen


def repl_session(home: Path, lines: list[str], *, wait_for: bytes = b"you>") -> tuple[str, int]:
    """Run ``picoora agent`` on a terminal, type ``lines`` (each after a prompt), then leave; (all output, exit code)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(REPO)
        env = {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1"}
        os.execve(sys.executable, [sys.executable, "-m", "picoora", "agent"], env)
    try:
        output = read_until(fd, wait_for)
        for line in lines:
            os.write(fd, line.encode() + b"\r")
            output += read_until(fd, wait_for)
        os.write(fd, b"exit\r")
        output += read_until(fd, b"\0", seconds=10)
        _, status = os.waitpid(pid, 0)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)
    return output.decode("utf-8", errors="replace"), os.waitstatus_to_exitcode(status)
