"""One long-lived service per file workspace: an advisory lock held for the service's life.

Two ``picoora gateway`` processes on one file workspace (on two ports) would each run the scheduler, the
heartbeat and the channels: every job twice, two pollers fighting over one bot's updates. The store's own
lock (``locking.py``) keeps their writes apart but cannot stop that, so the gateway also holds
``<private>/<service>.lock`` (an ``fcntl.flock``, exclusive, never waited for) while it runs. The kernel drops
it when the process dies, ``kill -9`` included, so a crashed gateway never blocks a restart. Beside it
``<service>.json`` says who holds it (PID, port, start time) for the refusal a second one prints; it is only
a note (a crashed holder leaves its note, which the next holder replaces), the flock is the truth.
``picoora agent`` takes no such lock: it runs beside a gateway as before.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from picoora.store.base import StoreError

_NOTE_WAIT_SECONDS = 1.0  # a holder that has just taken the lock writes its note right after


class ServiceBusy(StoreError):
    """Another process holds the service's lock; ``holder`` is its note (pid, port, started), maybe empty."""

    def __init__(self, message: str, holder: Mapping[str, Any]):
        super().__init__(message)
        self.holder = dict(holder)


class ServiceLock:
    """``with ServiceLock(private_dir, "gateway", {"port": 18790}):`` -- raises ``ServiceBusy`` at once when
    another process holds it. Released on exit, or by the kernel when the process dies."""

    def __init__(self, directory: Path, service: str, details: Mapping[str, Any], *, workspace: Path | None = None):
        self.service = service
        self.path = directory / f"{service}.lock"
        self.note_path = directory / f"{service}.json"
        self.details = dict(details)
        self.workspace = workspace or directory
        self._fd: int | None = None

    def __enter__(self) -> ServiceLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # O_CLOEXEC: a command the service runs must not inherit the lock and keep it after the service dies.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot open the {self.service} lock {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = self._holder()
            raise ServiceBusy(self._busy_message(holder), holder) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        try:
            self._write_note()
        except OSError as exc:
            self.__exit__()
            raise StoreError(f"cannot write {self.note_path}: {exc.strerror or exc}") from None
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._fd is None:
            return
        try:
            if self._read_note().get("pid") == os.getpid():
                self.note_path.unlink(missing_ok=True)
        except OSError:
            pass  # the note is a courtesy; the lock is what counts
        finally:
            os.close(self._fd)  # releases the flock
            self._fd = None

    def _write_note(self) -> None:
        from picoora.atomic import atomic_write_bytes

        note = {"pid": os.getpid(), **self.details,
                "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        atomic_write_bytes(self.note_path, json.dumps(note).encode("utf-8"), 0o600)

    def _read_note(self) -> dict[str, Any]:
        try:
            note = json.loads(self.note_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return note if isinstance(note, dict) else {}

    def _holder(self) -> dict[str, Any]:
        """The holder's note; waits a moment for one that names a live process (a holder that has just
        taken the lock may not have replaced a crashed predecessor's note yet)."""
        deadline = time.monotonic() + _NOTE_WAIT_SECONDS
        while True:
            note = self._read_note()
            if _alive(note.get("pid")) or time.monotonic() > deadline:
                return note if _alive(note.get("pid")) else {}
            time.sleep(0.05)

    def _busy_message(self, holder: Mapping[str, Any]) -> str:
        who = f"another picoora {self.service}"
        facts = []
        if holder.get("pid"):
            facts.append(f"PID {holder['pid']}")
        if holder.get("port") is not None:
            facts.append(f"port {holder['port']}")
        if holder.get("started"):
            facts.append(f"started {holder['started']}")
        if facts:
            who += f" ({', '.join(facts)})"
        return (f"{who} is already serving the workspace {self.workspace} (one {self.service} per workspace on "
                "file storage). Stop that one first, or give this one a workspace of its own "
                "(agents.defaults.workspace); `picoora agent` can run beside it.")


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True
