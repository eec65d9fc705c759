"""Directories that refuse writes, for the CLI tests: read-only, or full.

As root, permissions stop nothing, so a small tmpfs is mounted (read-only, or filled to the brim); as
another user, ``chmod`` makes a read-only folder and RLIMIT_FSIZE (with SIGXFSZ ignored, so the write
fails with EFBIG instead of killing the process) stands in for a full disk. A test skips when neither
works here.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


def _unmount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@contextlib.contextmanager
def read_only_dir(where: Path, fill: Callable[[Path], None]) -> Iterator[Path]:
    """``where`` filled by ``fill``, then made read-only."""
    if _mount_tmpfs(where, "4m"):
        fill(where)
        if subprocess.run(["mount", "-o", "remount,ro", str(where)], capture_output=True).returncode != 0:
            _unmount(where)
            pytest.skip("cannot remount a tmpfs read-only here")
        try:
            yield where
        finally:
            _unmount(where)
        return
    if os.geteuid() == 0:
        pytest.skip("root, and no tmpfs can be mounted here: no way to make a read-only folder")
    where.mkdir(parents=True, exist_ok=True)
    fill(where)
    modes = {p: p.stat().st_mode for p in [where, *where.rglob("*")] if p.is_dir()}
    for path in modes:
        path.chmod(0o555)
    try:
        yield where
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


@contextlib.contextmanager
def full_dir(where: Path, fill: Callable[[Path], None]) -> Iterator[Callable[[], None] | None]:
    """``where`` filled by ``fill``, then with no room left. Yields a ``preexec_fn`` for the child process
    (None when a full tmpfs does the job)."""
    if _mount_tmpfs(where, "256k"):
        fill(where)
        with contextlib.suppress(OSError), open(where / "ballast", "wb") as ballast:
            while True:
                ballast.write(b"\0" * 4096)
                ballast.flush()
        try:
            yield None
        finally:
            _unmount(where)
        return
    where.mkdir(parents=True, exist_ok=True)
    fill(where)

    def no_room() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    yield no_room
