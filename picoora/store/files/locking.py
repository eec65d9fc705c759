"""The workspace lock: one writer at a time across threads and processes.

``picoora agent`` and ``picoora gateway`` may run at once over the same workspace, and inside one
process the asyncio agent calls the store from worker threads (``asyncio.to_thread``). The lock is
an ``fcntl.flock`` on a lock file (between processes) under a re-entrant ``threading.RLock`` (between
threads; flock alone would not exclude two threads sharing one file descriptor). The kernel drops a
flock when its process dies, so a ``kill -9`` never leaves the workspace locked. Waiting is a blocking
flock rather than a polling loop: a poller can starve behind a process that writes in a tight loop;
a wait that does not end at once logs one line first, so a stuck holder is never a silent hang.
The lock file lives in the store's private directory (``picoora.store.layout``), out of the tools' reach.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)


class WorkspaceLock:
    """Re-entrant within a thread; the outermost ``with`` takes the file lock and releases it."""

    def __init__(self, path: Path):
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> WorkspaceLock:
        self._thread_lock.acquire()
        try:
            if self._depth == 0:
                self._take()
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                assert self._fd is not None  # the outermost __enter__ opened it
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def _take(self) -> None:
        fd = self._file()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for %s: another picoora process is using this workspace", self.path)
            fcntl.flock(fd, fcntl.LOCK_EX)

    def _file(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        return self._fd

    def close(self) -> None:
        with self._thread_lock:
            if self._fd is not None and self._depth == 0:
                os.close(self._fd)
                self._fd = None
