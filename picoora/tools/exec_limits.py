"""Limits for one ``exec`` call: processes, memory, file size and disk written, and which one ended it.

No single mechanism holds for a user and for root, so there are three layers:

- rlimits, set by ``prlimit`` just before ``sh -c`` (inside the sandbox): ``RLIMIT_AS`` (memory per
  process), ``RLIMIT_FSIZE`` (one file) and ``RLIMIT_NPROC``. Inside bubblewrap's user namespace the
  kernel counts a user's processes per namespace, so the limit is the command's own, not the user's
  whole count (unsandboxed it would be, so it is not set there). uid 0 is exempt from
  ``RLIMIT_NPROC`` whatever its capabilities;
- for root, a cgroup (``picoora.tools.exec_cgroup``): memory and processes counted for the command's
  whole tree, tmpfs pages included, walls root is not exempt from;
- the workspace's size, the total exec may fill: files stay across calls and turns, so a command does not
  start while the workspace holds ``max_disk_mb`` already, and may grow it only by the room left; after it
  ends the workspace is measured again (a burst of ``fallocate`` can finish between two polls);
- a watchdog polling while the command runs: the workspace filesystem's free space (no rlimit bounds
  many small files; when it has dropped by the limit, the command's own ``write_bytes`` in /proc and
  the space reserved unwritten in files changed meanwhile (``fallocate``) decide, so another program
  writing meanwhile does not stop it), the process count and the cgroup's memory kills. The count is cheap to
  watch (the cgroup's ``pids.current``, or the machine's task count in ``/proc/loadavg``); only when that
  says the limit may be reached are the command's descendants counted. A command that reaches a limit
  is killed with everything it started, and the model is told which limit and which setting raises it.

The hard walls sit a few processes above ``max_processes``, so a fork bomb is seen reaching the
limit and stopped at once instead of spinning on failed forks until the timeout. Commands run at
``nice`` 10: a few hundred busy processes on two cores otherwise starved the watchdog itself (a fork
bomb took ~2 s to stop instead of ~0.35 s).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from picoora.config import ExecToolConfig
from picoora.tools.exec_cgroup import CommandCgroup

MIB = 1024 * 1024
WATCH_SECONDS = 0.1
WALL_HEADROOM = 8  # the kernel's wall on processes, this far above where the watchdog stops the command
UNWRITTEN_SCAN_LIMIT = 100_000  # files looked at for reserved space, only once the free space fell by the limit
# Entries measured for the workspace's size; more than this many counts as full (a walk of millions of empty
# files before every command would be a cost of its own).
SIZE_SCAN_LIMIT = 200_000
NICENESS = 10  # commands yield the CPU to the assistant: a busy command (a fork bomb) cannot starve the watchdog
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc",
                   "memory allocation of", "Out of memory")
_FORK_MARKERS = ("Cannot fork", "fork: Resource temporarily unavailable", "fork: retry", "can't fork")


@dataclass(frozen=True)
class ExecLimits:
    processes: int
    memory_bytes: int
    file_bytes: int
    disk_bytes: int

    @classmethod
    def from_config(cls, cfg: ExecToolConfig) -> ExecLimits:
        return cls(cfg.max_processes, cfg.max_memory_mb * MIB, cfg.max_file_mb * MIB, cfg.max_disk_mb * MIB)

    def describe(self) -> str:
        return (f"{self.processes} processes, {self.memory_bytes // MIB} MiB memory, "
                f"{self.file_bytes // MIB} MiB per file, {self.disk_bytes // MIB} MiB of workspace")

    def prlimit_argv(self, *, own_process_count: bool) -> list[str]:
        """The ``prlimit`` prefix for the command; ``own_process_count`` when the kernel counts the
        command's processes apart from the user's others (a user namespace)."""
        argv = ["nice", "-n", str(NICENESS), "prlimit", f"--as={self.memory_bytes}", f"--fsize={self.file_bytes}"]
        if own_process_count:
            argv.append(f"--nproc={self.processes + WALL_HEADROOM}")
        return [*argv, "--"]


def after_exit_note(returncode: int | None, stderr: str, limits: ExecLimits) -> str:
    """Which rlimit probably ended the command, judged from its exit status and error output, or ''."""
    if returncode in (128 + signal.SIGXFSZ, -signal.SIGXFSZ) or "File size limit exceeded" in stderr:
        return (f"Limit: a file reached the size limit ({limits.file_bytes // MIB} MiB; "
                "tools.exec.max_file_mb raises it)")
    if any(marker in stderr for marker in _MEMORY_MARKERS):
        return (f"Limit: the command may have run out of its memory limit ({limits.memory_bytes // MIB} MiB per "
                "process; tools.exec.max_memory_mb raises it)")
    if any(marker in stderr for marker in _FORK_MARKERS):
        return (f"Limit: the command may have hit the process limit ({limits.processes}; "
                "tools.exec.max_processes raises it)")
    return ""


def _machine_tasks() -> int:
    """Every task (thread) on the machine, from /proc/loadavg's ``running/total`` field."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return 0


def descendants(root: int, stop_at: int) -> list[int]:
    """``root`` and its descendants (at most ``stop_at`` of them), from every /proc/<pid>/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack and len(found) < stop_at:
        pid = stack.pop()
        found.append(pid)
        stack += children.get(pid, [])
    return found


def written_bytes(root: int) -> int | None:
    """Bytes ``root`` and its descendants sent to storage, or None when the kernel does not say. A process's
    ``write_bytes`` includes the children it reaped, so the live ones cover everything the command wrote."""
    total = 0
    for pid in descendants(root, 1 << 30):
        try:
            lines = Path(f"/proc/{pid}/io").read_text().splitlines()
        except FileNotFoundError:
            continue  # ended meanwhile: its parent's count has it
        except OSError:
            return None
        total += next((int(line.split()[1]) for line in lines if line.startswith("write_bytes:")), 0)
    return total


def unwritten_bytes(folder: Path, since: float) -> int:
    """Space reserved but never written (``fallocate``) in the files under ``folder`` changed since
    ``since``: each file's allocated blocks minus its data (``SEEK_DATA``/``SEEK_HOLE``, where a reserved
    extent reads as a hole). A filesystem without those calls reports all as data: nothing counted."""
    total = 0
    seen = 0
    for base, _dirs, files in os.walk(folder):
        for name in files:
            seen += 1
            if seen > UNWRITTEN_SCAN_LIMIT:
                return total
            with contextlib.suppress(OSError):
                total += _unwritten_in(os.path.join(base, name), since)
    return total


def _unwritten_in(path: str, since: float) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_ctime < since:
            return 0
        data, offset = 0, 0
        while offset < info.st_size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: only holes from here on
                break
            offset = os.lseek(fd, start, os.SEEK_HOLE)
            data += offset - start
        return max(info.st_blocks * 512 - data, 0)
    finally:
        os.close(fd)


def workspace_bytes(folder: Path, stop_at: int) -> int:
    """The space the files under ``folder`` take (allocated blocks, so reserved space counts), counted until it
    reaches ``stop_at``; ``stop_at`` too when there are more than ``SIZE_SCAN_LIMIT`` entries."""
    total = 0
    seen = 0
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            seen += 1
            if seen > SIZE_SCAN_LIMIT:
                return stop_at
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_blocks * 512
            if total >= stop_at:
                return total
    return total


def workspace_full(limits: ExecLimits, used: int) -> str:
    """Why no command starts in a workspace taking ``used`` bytes against the limit."""
    return (f"the workspace already takes {used // MIB} MiB, at or over exec's disk limit "
            f"({limits.disk_bytes // MIB} MiB, tools.exec.max_disk_mb): remove files from it or raise the limit")


def _free_bytes(path: Path) -> int:
    info = os.statvfs(path)
    return info.f_bavail * info.f_frsize


class Watchdog:
    """Checks a running command against the limits that no rlimit enforces (or not for root)."""

    def __init__(self, limits: ExecLimits, workspace: Path, cgroup: CommandCgroup | None, used_at_start: int = 0):
        self.limits = limits
        self.workspace = workspace
        self.cgroup = cgroup
        self.room = limits.disk_bytes - used_at_start  # what the command may add to the workspace
        self.free_at_start = _free_bytes(workspace)
        self.started = time.time()
        self.tasks_at_start = _machine_tasks()

    def check(self, pid: int) -> str | None:
        """Why the command ``pid`` must stop now, or None. Blocking (reads /proc): call it in a thread."""
        if self.cgroup is not None and self.cgroup.memory_kills():
            return (f"it reached the memory limit ({self.limits.memory_bytes // MIB} MiB for it and every process "
                    "it started together; tools.exec.max_memory_mb raises it)")
        if self._processes(pid) >= self.limits.processes:
            return (f"it reached the process limit ({self.limits.processes} processes at once; "
                    "tools.exec.max_processes raises it)")
        if self._wrote_too_much(pid):
            return self.disk_reason()
        return None

    def disk_reason(self) -> str:
        return (f"it filled the workspace past exec's disk limit ({self.limits.disk_bytes // MIB} MiB in all, "
                f"{max(self.room, 0) // MIB} MiB of it left when it started; tools.exec.max_disk_mb raises it)")

    def over_after_exit(self) -> bool:
        """Whether the workspace, measured again once the command ended, takes more than the limit. Blocking."""
        return workspace_bytes(self.workspace, self.limits.disk_bytes + 1) > self.limits.disk_bytes

    def _wrote_too_much(self, pid: int) -> bool:
        """The filesystem lost ``disk_bytes`` of room since the start, and what the command used says it was
        the command (another program writing meanwhile is not counted against it): the bytes it wrote, and
        the blocks it reserved without writing them (``fallocate``), which no write counter sees."""
        dropped = self.free_at_start - _free_bytes(self.workspace)
        if dropped < self.room:
            return False
        written = written_bytes(pid)
        if written is None:
            return True
        used = written + unwritten_bytes(self.workspace, self.started)
        if used >= self.room:
            return True
        self.free_at_start -= dropped - used  # someone else's writes: not counted again
        return False

    def _processes(self, pid: int) -> int:
        counted = self.cgroup.processes() if self.cgroup is not None else None
        if counted is not None:
            return counted
        if _machine_tasks() - self.tasks_at_start < self.limits.processes:
            return 0  # far from the limit: no need to count
        return len(descendants(pid, self.limits.processes))

